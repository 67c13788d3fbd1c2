"""Padding buckets for a dimension whose size varies between compiles: the numbers behind count-recompiles'
shape advice (`xlainspect.report.causes` words them)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True, slots=True)
class Bucketing:
    """One way to pad the sizes seen: to powers of two, to multiples of `step`, or always to the largest.
    `buckets` are the sizes that would be compiled; `padding` the worst (bucket - size) / size."""

    rule: Literal["powers_of_two", "multiples", "largest"]
    step: int
    buckets: tuple[int, ...]
    padding: float


def ragged_last_batch(values: tuple[Any, ...]) -> bool:
    """Two sizes, the smaller compiled second: full batches, then what was left of the data."""
    return len(values) == 2 and all(isinstance(v, int) for v in values) and values[0] > values[1] > 0


def bucketings(values: tuple[Any, ...]) -> list[Bucketing]:
    """Bucket choices that compile fewer times than the sizes seen (powers of two, multiples of a round
    step, always the largest size), without those another beats on both counts."""
    sizes = sorted(set(values))
    if len(sizes) < 2 or not all(isinstance(v, int) and v > 0 for v in sizes):
        return []
    step = next((s for s in (128, 64, 32, 16, 8) if s <= min(sizes) or s < max(sizes) / 2), 8)
    choices = [
        Bucketing("powers_of_two", 2, tuple(sorted({1 << math.ceil(math.log2(v)) for v in sizes})), 0.0),
        Bucketing("multiples", step, tuple(sorted({-(-v // step) * step for v in sizes})), 0.0),
        Bucketing("largest", max(sizes), (max(sizes),), 0.0),
    ]
    fewer = [
        Bucketing(c.rule, c.step, c.buckets, _padding(sizes, c.buckets)) for c in choices if len(c.buckets) < len(sizes)
    ]
    return [
        b
        for b in fewer
        if not any(
            (len(o.buckets), o.padding) < (len(b.buckets), b.padding)
            and len(o.buckets) <= len(b.buckets)
            and o.padding <= b.padding
            for o in fewer
        )
    ]


def _padding(sizes: list[int], buckets: tuple[int, ...]) -> float:
    """The worst padding a bucket choice costs: the largest (bucket - size) / size."""
    return max((min(b for b in buckets if b >= v) - v) / v for v in sizes)
