"""`diff`: what XLA did differently between two dumps, per function, and the gate on its metrics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from xlainspect.analysis.chips import get_chip
from xlainspect.analysis.diff import (
    METRICS,
    FunctionDiff,
    Regression,
    Threshold,
    diff_dumps,
    parse_threshold,
    regressions,
    unknown_functions,
)
from xlainspect.analysis.runner import remembered
from xlainspect.analysis.tabular import Tabular
from xlainspect.dump.directory import load_dump
from xlainspect.dump.module import SkippedFile
from xlainspect.progress import Progress, silent


@dataclass
class DiffReport(Tabular):
    """Two dumps compared per function, the metrics that grew past a threshold, and what is unknown."""

    a: Path
    b: Path
    functions: list[FunctionDiff]
    regressions: list[Regression]
    """Each metric over its allowed increase."""
    skipped: list[SkippedFile]
    unknown: list[FunctionDiff] = field(default_factory=list[FunctionDiff])
    """The functions a module that did not parse leaves unknown: the gate cannot decide."""


@remembered("a", "b")
def diff_report(
    a: str | Path,
    b: str | Path,
    *,
    max_increase: Sequence[str] = (),
    any_growth: bool = False,
    chip: str | None = None,
    strict: bool = False,
    progress: Progress = silent,
) -> DiffReport:
    """Per function (matched by HloModule name): what XLA did differently between two dumps, and the
    metrics that grew past `max_increase` (`METRIC=N` or `METRIC=N%`), or at all with `any_growth` and
    no `max_increase` (what `--fail-on-regression` alone gates)."""
    thresholds = [parse_threshold(t) for t in max_increase]
    if any_growth and not thresholds:
        thresholds = [Threshold(metric, 0, False) for metric in METRICS]
    roofline_chip = get_chip(chip) if chip else None
    dump_a, dump_b = load_dump(a, strict=strict), load_dump(b, strict=strict)
    found = diff_dumps(
        dump_a, dump_b, roofline_chip, progress("comparing modules", len(dump_a.modules) + len(dump_b.modules))
    )
    rows = found.functions
    skipped = [*dump_a.skipped, *found.skipped_a, *dump_b.skipped, *found.skipped_b]
    return DiffReport(Path(a), Path(b), rows, regressions(rows, thresholds), skipped, unknown_functions(rows))
