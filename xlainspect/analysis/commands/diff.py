"""`diff`: what XLA did differently between two dumps, per function, and the gate on its metrics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from xlainspect.analysis.chips import get_chip
from xlainspect.analysis.commands.profile import profile_report
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
from xlainspect.analysis.profile.compare import GATED, ProfilesCompared, compare_profiles
from xlainspect.analysis.runner import remembered
from xlainspect.analysis.tabular import Tabular
from xlainspect.dump.directory import load_dump
from xlainspect.dump.module import SkippedFile
from xlainspect.dump.xplane import find_trace_files
from xlainspect.errors import UsageError, XlaInspectError, literal
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


@dataclass
class ProfileDiff(Tabular):
    """Two profiles of a program compared: the step, its breakdown, the ops' uniform factor and each op's
    change (`analysis.profile.compare`), and the gated figures that grew significantly past a threshold."""

    a: Path
    b: Path
    compared: ProfilesCompared
    skipped: list[SkippedFile]


@remembered("a", "b", "dump_a", "dump_b", uses=("jax", "jaxlib", "google.protobuf"))
def profile_diff_report(
    a: str | Path,
    b: str | Path,
    *,
    dump_a: str | Path | None = None,
    dump_b: str | Path | None = None,
    max_increase: Sequence[str] = (),
    any_growth: bool = False,
    strict: bool = False,
) -> ProfileDiff:
    """`diff` of two jax.profiler traces of one program (before, after): did the step change beyond a
    rerun's noise, and is it the program (ops that moved beyond the rest, added, removed; host work) or
    the machine (every op scaled alike)? Each trace joins its run's dump where given (`dump_a`,
    `dump_b`), else the HLO it embeds; `max_increase` (`METRIC=N` or `METRIC=N%` of `GATED`), or any
    growth with `any_growth` and no `max_increase`, fails only where the figure grew significantly."""
    thresholds = [parse_threshold(t, GATED) for t in max_increase]
    if any_growth and not thresholds:
        thresholds = [Threshold(metric, 0, True) for metric in GATED]
    before = profile_report(a, dump_a, strict=strict)
    after = profile_report(b, dump_b, strict=strict)
    compared = compare_profiles(before, after, thresholds)
    return ProfileDiff(Path(a), Path(b), compared, [*before.skipped, *after.skipped])


def profiles_given(a: str | Path, b: str | Path, dump_a: str | Path | None, dump_b: str | Path | None) -> bool:
    """Whether `diff A B` compares two profiles (True) or two dumps (False); one of each, or a dump to
    join with two dumps, is a usage error."""
    kinds = [_is_trace(a), _is_trace(b)]
    if kinds[0] != kinds[1]:
        which = ("A", "B") if kinds[0] else ("B", "A")
        raise UsageError(
            literal(
                f"diff: {which[0]} is a jax.profiler trace and {which[1]} is not; compare two profiles or two dumps"
            )
        )
    if not kinds[0] and (dump_a is not None or dump_b is not None):
        raise UsageError("$dump_a " + literal("and dump_b join a profile with its run's dump; A and B are dumps"))
    return kinds[0]


def _is_trace(path: str | Path) -> bool:
    """A `*.xplane.pb` (or the perfetto trace beside one), or a folder with one under it."""
    try:
        find_trace_files(path)
    except XlaInspectError:
        return False
    return True
