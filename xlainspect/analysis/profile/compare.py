"""Two profiles of one program compared: did the step change beyond its noise, and is it the program or
the machine?

A rerun of the same program on a shared machine differs by up to 30% a step, every op a little slower or
faster, small ops the most; a change of the program moves some ops far more than the rest, or adds
and removes ops, or adds host work. So the comparison reads the two `profile` results only:

* **Ops are matched** by function, `op_name`, opcode and output shape (module ids and instruction names
  change between compiles), ops of one key paired in instruction-number order; what is left is matched
  once more without the shape (a layer made wider: `shape_before` says so), the rest is removed or added.
* **The uniform factor** is the median of the matched ops' ratios (B's seconds a step over A's), then the
  median weighted by A's seconds of the ratios within `OP_NOISE` of it: how B's ops scaled as a whole
  (ops of a changed shape left out). An op's **residual** is its ratio over that factor; it **changed**
  where the residual is beyond `OP_NOISE` and what it gained or lost beyond the factor is at least
  `MATERIAL` of A's step.
* **The step** is each side's median step without a compile; the step distributions differ
  (`significant`) where a Mann-Whitney U test of A's steps against B's gives p < `ALPHA` and B's median
  is more than `STEP_NOISE` from A's, and from A's times the uniform factor: what a rerun's noise or
  the machine's scaling of every op explains is not a change.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import median

import numpy as np

from xlainspect.analysis.diff import MetricDelta, Threshold, exceeds
from xlainspect.analysis.profile.model import CATEGORIES, OpTime, ProfileReport, StepTime

ALPHA = 0.001
"""The Mann-Whitney U test's level: a step distribution this unlikely under no change differs."""
STEP_NOISE = 0.3
"""The change of a step's figure a rerun of the same program shows: reruns of one CPU train step on a
shared 2-core machine differ by up to 30% a step (fixtures/profiles/profile_pair_rerun: -15%)."""
OP_NOISE = 1.5
"""An op's ratio over the uniform factor a rerun stays within (its small ops move the most)."""
COMPILE_NOISE = 1.0
"""The change of a run's compile seconds a rerun shows (one figure a run, no distribution to test): the
same program's compile took 0.24 s and 0.40 s in profile_pair_a and profile_pair_rerun."""
MATERIAL = 0.02
"""The share of A's step an op must gain or lose beyond the uniform factor to count as changed."""

GATED = ("step_seconds", "busy_seconds", "host_seconds", "compile_seconds")
"""What `--max-increase` names for two profiles: the median step, its device-busy and host time, and
the seconds of every compile in the trace."""


@dataclass(slots=True)
class MetricChange:
    """One figure of the step on both sides, and whether its change is beyond the rerun noise."""

    name: str
    before_seconds: float
    after_seconds: float
    ratio: float | None
    """after / before; None where before is 0."""
    p_value: float | None
    """Mann-Whitney U, two-sided, of the per-step figures; None for `compile_seconds`, one figure a run."""
    significant: bool


@dataclass(slots=True)
class CategoryChange:
    """A category of the step breakdown (`profile`'s `breakdown`): the typical step's seconds on each side."""

    category: str
    before_seconds: float
    after_seconds: float


@dataclass(slots=True)
class OpChange:
    """One op matched across the runs."""

    function: str
    name: str
    """B's instruction name."""
    before_name: str
    op_name: str | None
    opcode: str | None
    shape: str | None
    """B's output shape."""
    shape_before: str | None
    """A's output shape where it differs (matched by function, op_name and opcode alone), else None."""
    before_seconds_per_step: float
    after_seconds_per_step: float
    ratio: float | None
    """after / before; None where before is 0."""
    residual: float | None
    """ratio / uniform factor: 1 for an op that scaled as the whole did."""
    excess_seconds_per_step: float
    """after - before x uniform factor: what the op gained (lost) beyond the whole's scaling."""
    changed: bool


@dataclass(slots=True)
class OneSided:
    """An op of one run only (removed: A's; added: B's)."""

    function: str
    name: str
    op_name: str | None
    opcode: str | None
    shape: str | None
    seconds_per_step: float


@dataclass(slots=True)
class GateFailure:
    """A gated figure that grew significantly past its `--max-increase`."""

    metric: MetricChange
    threshold: Threshold


@dataclass(slots=True)
class ProfilesCompared:
    """`compare_profiles`' answer: the step, its breakdown, the ops' uniform factor and each op's change."""

    function: str | None
    """The function B's steps run (`profile`'s step summary)."""
    step: MetricChange
    metrics: list[MetricChange]
    """Each of `GATED`, `step` first."""
    categories: list[CategoryChange]
    uniform_factor: float | None
    """None where no op matched."""
    ops: list[OpChange]
    """Most excess first."""
    removed: list[OneSided]
    added: list[OneSided]
    failures: list[GateFailure] = field(default_factory=list[GateFailure])


def compare_profiles(a: ProfileReport, b: ProfileReport, thresholds: Sequence[Threshold] = ()) -> ProfilesCompared:
    """B's profile against A's: the step, its breakdown, every op matched; `thresholds` (of `GATED`) fail
    where the figure grew past them and significantly."""
    pairs, removed, added = match_ops(a.ops, b.ops)
    uniform = uniform_factor(pairs)
    factor = uniform if uniform is not None else 1.0
    kept_a, kept_b = _uncompiled(a.steps), _uncompiled(b.steps)
    step_a = median(s.wall_seconds for s in kept_a) if kept_a else 0.0
    ops = sorted((_op_change(x, y, factor, step_a) for x, y in pairs), key=lambda op: -abs(op.excess_seconds_per_step))
    metrics = [
        _stepwise("step_seconds", kept_a, kept_b, lambda s: s.wall_seconds, factor),
        _stepwise("busy_seconds", kept_a, kept_b, lambda s: s.busy_seconds, factor),
        _stepwise("host_seconds", kept_a, kept_b, lambda s: s.breakdown.get("host", 0.0), factor),
        _compile_seconds(a, b),
    ]
    found = ProfilesCompared(
        b.step_summary.function if b.step_summary is not None else None,
        metrics[0],
        metrics,
        _categories(a, b),
        uniform,
        ops,
        [_one_sided(op) for op in removed],
        [_one_sided(op) for op in added],
    )
    found.failures = gate(found, thresholds)
    return found


def gate(found: ProfilesCompared, thresholds: Sequence[Threshold]) -> list[GateFailure]:
    """The gated figures that grew past their threshold (`exceeds`, as `diff` of two dumps) and whose change
    is significant: a rerun's noise never fails the gate."""
    failures: list[GateFailure] = []
    for threshold in thresholds:
        metric = next(m for m in found.metrics if m.name == threshold.metric)
        before, after = metric.before_seconds, metric.after_seconds
        change = 100.0 * (after - before) / before if before else None
        if metric.significant and exceeds(MetricDelta(metric.name, before, after, after - before, change), threshold):
            failures.append(GateFailure(metric, threshold))
    return failures


Key = tuple[str, str | None, str | None, str | None]


def match_ops(a: list[OpTime], b: list[OpTime]) -> tuple[list[tuple[OpTime, OpTime]], list[OpTime], list[OpTime]]:
    """(A's op, B's op) pairs by function, op_name, opcode and shape, then by function, op_name and opcode
    for what is left; and the ops of A only, of B only. Without costs (no dump, no HLO in the trace) an op
    has no op_name: its instruction name stands for it."""
    pairs, a_left, b_left = _paired(a, b, _key)
    looser, removed, added = _paired(a_left, b_left, lambda op: _key(op)[:3])
    return pairs + looser, removed, added


def _key(op: OpTime) -> Key:
    if op.op_name is None and op.opcode is None:
        return (op.function, op.name, None, None)
    return (op.function, op.op_name, op.opcode, op.shape)


def _paired(
    a: list[OpTime], b: list[OpTime], key: Callable[[OpTime], tuple[str | None, ...]]
) -> tuple[list[tuple[OpTime, OpTime]], list[OpTime], list[OpTime]]:
    """Ops of equal `key` paired in instruction-number order (XLA numbers a program's instructions alike
    in each compile); the rest of each side."""
    groups: dict[tuple[str | None, ...], tuple[list[OpTime], list[OpTime]]] = defaultdict(lambda: ([], []))
    for side, ops in enumerate((a, b)):
        for op in ops:
            groups[key(op)][side].append(op)
    pairs: list[tuple[OpTime, OpTime]] = []
    a_left: list[OpTime] = []
    b_left: list[OpTime] = []
    for ours, theirs in groups.values():
        ours.sort(key=_numbered)
        theirs.sort(key=_numbered)
        pairs += zip(ours, theirs, strict=False)
        a_left += ours[len(theirs) :]
        b_left += theirs[len(ours) :]
    return pairs, a_left, b_left


_NUMBERED = re.compile(r"^(?P<stem>.*?)(?:\.(?P<number>\d+))?$")


def _numbered(op: OpTime) -> tuple[str, int]:
    """`fusion.11` -> ("fusion", 11); `fusion` -> ("fusion", -1): XLA's instruction numbering."""
    match = _NUMBERED.match(op.name)
    assert match is not None  # the pattern matches every string
    return match["stem"], int(match["number"]) if match["number"] else -1


def _seconds(op: OpTime) -> float:
    return op.seconds_per_step or 0.0


def uniform_factor(pairs: list[tuple[OpTime, OpTime]]) -> float | None:
    """How the matched ops of one shape scaled as a whole: the median of their ratios (each op a vote, so
    a few heavy ops a change moved do not carry it), then the median weighted by A's seconds of the ratios
    within `OP_NOISE` of it (the big ops, which vary least, weigh most); None where no op ran on both sides."""
    timed = [(_seconds(x), _seconds(y)) for x, y in pairs if _seconds(x) > 0 and _seconds(y) > 0 and x.shape == y.shape]
    if not timed:
        return None
    logs = np.log([after / before for before, after in timed])
    near = np.abs(logs - float(np.median(logs))) <= math.log(OP_NOISE)
    return math.exp(_weighted_median(logs[near], np.array([before for before, _ in timed])[near]))


def _weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    """The value at half the total weight (the lower of two where it falls between them)."""
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cumulative, cumulative[-1] / 2)])


def _op_change(a: OpTime, b: OpTime, factor: float, step: float) -> OpChange:
    before, after = _seconds(a), _seconds(b)
    ratio = after / before if before else None
    residual = ratio / factor if ratio is not None else None
    excess = after - before * factor
    beyond = residual is None or residual > OP_NOISE or residual < 1 / OP_NOISE
    changed = beyond and abs(excess) >= MATERIAL * step
    shape_before = a.shape if a.shape != b.shape else None
    return OpChange(
        b.function,
        b.name,
        a.name,
        b.op_name,
        b.opcode,
        b.shape,
        shape_before,
        before,
        after,
        ratio,
        residual,
        excess,
        changed,
    )


def _one_sided(op: OpTime) -> OneSided:
    return OneSided(op.function, op.name, op.op_name, op.opcode, op.shape, _seconds(op))


def _uncompiled(steps: list[StepTime]) -> list[StepTime]:
    """The steps without a compile inside (every step where each compiled), as `profile`'s median takes them."""
    kept = [s for s in steps if not s.compiles]
    return kept or steps


def _stepwise(
    name: str, a: list[StepTime], b: list[StepTime], figure: Callable[[StepTime], float], factor: float
) -> MetricChange:
    """A per-step figure's medians, and whether B's steps differ from A's scaled by the ops' factor."""
    before = [figure(s) for s in a]
    after = [figure(s) for s in b]
    if not before or not after:
        return MetricChange(name, 0.0, 0.0, None, None, False)
    low, high = median(before), median(after)
    p = mann_whitney_p(before, after)
    return MetricChange(name, low, high, high / low if low else None, p, p < ALPHA and _beyond(low, high, factor))


def _beyond(before: float, after: float, factor: float) -> bool:
    """Whether `after` is more than `STEP_NOISE` from `before`, and from `before` scaled as the ops were
    (`factor`): a rerun's noise and the machine's scaling explain neither (from 0, any increase)."""
    if not before:
        return after > 0
    return abs(after / before - 1) > STEP_NOISE and abs(after / (before * factor) - 1) > STEP_NOISE


def _compile_seconds(a: ProfileReport, b: ProfileReport) -> MetricChange:
    """The seconds of every compile in each trace: one figure a run, so significant where it moved more
    than `COMPILE_NOISE` (from none, any compile)."""
    before = sum(c.seconds for c in a.compiles)
    after = sum(c.seconds for c in b.compiles)
    if not before:
        return MetricChange("compile_seconds", before, after, None, None, after > 0)
    return MetricChange("compile_seconds", before, after, after / before, None, abs(after / before - 1) > COMPILE_NOISE)


def _categories(a: ProfileReport, b: ProfileReport) -> list[CategoryChange]:
    """The typical step's breakdown on each side (`profile`'s step summary)."""

    def parts(report: ProfileReport) -> dict[str, float]:
        return report.step_summary.typical.breakdown if report.step_summary is not None else {}

    before, after = parts(a), parts(b)
    return [CategoryChange(c, before.get(c, 0.0), after.get(c, 0.0)) for c in CATEGORIES]


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """The two-sided p-value of the Mann-Whitney U test of `a` against `b` (the normal approximation with
    ties' correction and continuity, sound for the tens to thousands of steps a trace holds): how likely
    samples this far apart are if both came from one distribution."""
    n1, n2 = len(a), len(b)
    if not n1 or not n2:
        return 1.0
    values = np.concatenate([np.asarray(a, float), np.asarray(b, float)])
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ranks = (np.cumsum(counts) - (counts - 1) / 2)[inverse]
    u = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2
    n = n1 + n2
    ties = float((counts**3 - counts).sum()) / (n * (n - 1)) if n > 1 else 0.0
    sigma = math.sqrt(n1 * n2 / 12 * ((n + 1) - ties))
    if sigma == 0:
        return 1.0
    z = max(abs(u - n1 * n2 / 2) - 0.5, 0.0) / sigma
    return math.erfc(z / math.sqrt(2))
