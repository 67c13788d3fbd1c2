"""What a section of the `report` page is: its tables, findings, charts and the ops it links to.

Each topic words its own section, in its view under `report.views` (the view that words the topic's
command): `views.time` where the time goes and the roofline, `views.compiles` compile time and
recompiles, `views.memory`, `views.layouts` padding, `views.graph` fusions, copies and collectives.
`report.dump_report` composes them into one report; `report.page` draws it.

A finding carries what it costs, so the summary can rank findings from every section together. Tables
keep at most `MAX_ROWS` rows (the largest first), each with a note naming what was left out: a dump of
thousands of modules still gives a page of a few megabytes that a browser opens at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

from xlainspect.analysis.chips import Chip
from xlainspect.analysis.memory import ModuleMemory
from xlainspect.analysis.profile import StepTime
from xlainspect.analysis.timing import CompileMark, FunctionTiming, OpTiming
from xlainspect.report.document import Table
from xlainspect.report.document import table as records_table

T = TypeVar("T")

MAX_ROWS = 300
"""Rows per table; the rest is counted in the table's note (the commands themselves list every row)."""
TOP_FINDINGS = 3
"""Findings per section for the summary (its largest costs)."""


A_STEP, A_RUN = "seconds a step", "seconds a run"
"""The time findings' units: what every step pays (an op's time lost, the host's idle time), and what a
run pays once (compiling)."""


@dataclass(slots=True)
class Finding:
    """One thing worth fixing, with its cost in `unit`: `A_STEP`, `A_RUN`, extra compiles (`"compiles"`,
    where no time is known) or `"bytes"`. `run_seconds` is what the traced run paid for it (a finding of
    `A_STEP`: over the steps it ran in), the one currency time findings rank in."""

    section: str
    text: str
    cost: float
    unit: str
    op: str = ""
    """The anchor of the op's detail (its HLO line and neighbourhood), where the finding is one op."""
    source: str = ""
    """`file:line` of the user's code behind it."""
    run_seconds: float | None = None
    """Seconds the traced run paid (`cost` itself for `A_RUN`); None where the run's steps are unknown."""

    def __post_init__(self) -> None:
        if self.unit == A_RUN:
            self.run_seconds = self.cost


def rank(finding: Finding) -> tuple[int, float]:
    """Time in one currency first, seconds a run, whether a step or a run pays it; then seconds a step
    whose run is unknown (no profile: no steps to multiply by), extra compiles where no time is known,
    and bytes, compared with bytes only."""
    if finding.run_seconds is not None:
        return 0, -finding.run_seconds
    return 1 + (A_STEP, "compiles", "bytes").index(finding.unit), -finding.cost


@dataclass(slots=True)
class StepBreakdown:
    """Chart: each function's step time split by op kind."""

    functions: list[FunctionTiming]
    of: int
    """Functions with a step time, of which the chart draws the slowest."""


@dataclass(slots=True)
class Roofline:
    """Chart: the ops on the chip's roofline, at their measured (or roofline) FLOP/s."""

    ops: list[OpTiming]
    chip: Chip


@dataclass(slots=True)
class CompileTimeline:
    """Chart: each compile of each function on a time axis, recompiles marked."""

    marks: list[CompileMark]
    source: str


@dataclass(slots=True)
class StepBars:
    """Chart: a column per step, its wall split into the device's busy time by kind and idle by cause."""

    steps: list[StepTime]
    categories: dict[str, str]
    """The breakdown's categories in drawing order, each with its legend's words."""
    median_step: int | None
    """The step the headline is of."""
    device: str
    """`GPU`, `TPU`, `CPU`: what was busy."""


@dataclass(slots=True)
class HostBars:
    """Chart: a bar per host's median step, as text (`#` waiting in collectives, `=` other device work, `.`
    idle): a job's hosts on the first screen."""

    lines: list[str]


@dataclass(slots=True)
class MemoryCurve:
    """Chart: one allocator's bytes in use over the run (`points`, thinned to a bounded number that keeps
    every local extreme of its buckets, the peak exactly), the steps as bands, the peak marked."""

    allocator: str
    points: list[tuple[float, int]]
    """(seconds since the trace's first event, bytes in use), in time order."""
    peak: tuple[float, int]
    """(seconds, bytes in use) of the most in use in the trace."""
    events: int
    """The allocator's events in the trace, of which `points` are drawn."""
    steps: list[StepTime]


Chart = StepBars | StepBreakdown | Roofline | CompileTimeline | HostBars | MemoryCurve
"""What the HTML page draws as SVG."""


@dataclass(slots=True)
class OpDetail:
    """An op a finding links to: its HLO lines and those of its neighbourhood (as `graph --around`
    finds it), each `(line number, text, is the op)`, and its source line."""

    anchor: str
    module: str
    name: str
    path: str
    lines: tuple[tuple[int, str, bool], ...]
    source: str


@dataclass
class Section:
    """One section of the dump report: its tables and the findings it ranks."""

    key: str
    """The anchor of the section (`#recompiles`); also what the browser test looks for."""
    title: str
    intro: str
    tables: list[Table] = field(default_factory=list[Table])
    findings: list[Finding] = field(default_factory=list[Finding])
    memory: list[ModuleMemory] = field(default_factory=list[ModuleMemory])
    """The rows whose curves the HTML page draws (the memory section's)."""
    charts: list[Chart] = field(default_factory=list[Chart])
    """What the HTML page draws as SVG: `StepBreakdown`, `Roofline`, `CompileTimeline`."""
    details: list[OpDetail] = field(default_factory=list[OpDetail])
    """The ops findings link to: their HLO lines and neighbourhood."""
    links: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    """(text, anchor) of other parts of the page the section points to, under its intro."""
    headline: str = ""
    """The line the section opens with, above its intro: the step the user waits for, what bounds it and
    what to do first."""
    brief: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    """(line, anchor of its whole text) of another section's findings folded to one line each (a
    function's recompiles on the first screen)."""


def table(title: str, columns: tuple[str, ...], rows: Sequence[object], what: str = "") -> Table:
    """A table of the first `MAX_ROWS` rows (tuples in column order, or a command's rows cut to `columns`),
    with a note saying how many were left out and where they are."""
    note = f"showing {MAX_ROWS:,} of {len(rows):,} rows; {what}" if len(rows) > MAX_ROWS and what else ""
    shown = rows[:MAX_ROWS]
    if all(isinstance(r, tuple) for r in shown):
        return Table(title, columns, tuple(cast("Sequence[tuple[object, ...]]", shown)), note)
    return Table(title, columns, records_table(None, shown, columns).rows, note)


def largest(items: list[T], key: Callable[[T], float], count: int = TOP_FINDINGS) -> list[T]:
    """The `count` items of the largest nonzero `key`: a section's findings for the summary."""
    return sorted((i for i in items if key(i)), key=key, reverse=True)[:count]
