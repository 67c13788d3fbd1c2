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

from collections.abc import Callable
from dataclasses import dataclass, field

from xlainspect.analysis.chips import Chip
from xlainspect.analysis.memory import ModuleMemory
from xlainspect.analysis.timing import CompileMark, FunctionTiming, OpTiming
from xlainspect.report.document import Table
from xlainspect.report.document import table as records_table

MAX_ROWS = 300
"""Rows per table; the rest is counted in the table's note (the commands themselves list every row)."""
TOP_FINDINGS = 3
"""Findings per section for the summary (its largest costs)."""


@dataclass(slots=True)
class Finding:
    """One thing worth fixing, with its cost: seconds a step (`unit="seconds"`), compile seconds
    (`"compile seconds"`), extra compiles (`"compiles"`) or bytes."""

    section: str
    text: str
    cost: float
    unit: str
    op: str = ""
    """The anchor of the op's detail (its HLO line and neighbourhood), where the finding is one op."""
    source: str = ""
    """`file:line` of the user's code behind it."""


UNIT_ORDER = ("seconds", "compile seconds", "compiles", "bytes")
"""How findings of different units rank: time a step first (every step pays it), compile seconds
(every run pays them), extra compiles where no time is known, then bytes (compared with bytes only)."""


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


Chart = StepBreakdown | Roofline | CompileTimeline
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
    tables: list[Table] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    memory: list[ModuleMemory] = field(default_factory=list[ModuleMemory])
    """The rows whose curves the HTML page draws (the memory section's)."""
    charts: list[Chart] = field(default_factory=list)
    """What the HTML page draws as SVG: `StepBreakdown`, `Roofline`, `CompileTimeline`."""
    details: list[OpDetail] = field(default_factory=list)
    """The ops findings link to: their HLO lines and neighbourhood."""
    links: list[tuple[str, str]] = field(default_factory=list)
    """(text, anchor) of other parts of the page the section points to, under its intro."""
    brief: list[tuple[str, str]] = field(default_factory=list)
    """(line, anchor of its whole text) of another section's findings folded to one line each (a
    function's recompiles on the first screen)."""


def table(title: str, columns: tuple[str, ...], rows: list, what: str = "") -> Table:
    """A table of the first `MAX_ROWS` rows (tuples in column order, or a command's rows cut to `columns`),
    with a note saying how many were left out and where they are."""
    note = f"showing {MAX_ROWS:,} of {len(rows):,} rows; {what}" if len(rows) > MAX_ROWS and what else ""
    shown = rows[:MAX_ROWS]
    cells = shown if all(isinstance(r, tuple) for r in shown) else records_table(None, shown, columns).rows
    return Table(title, columns, tuple(cells), note)


def largest(items: list, key: Callable, count: int = TOP_FINDINGS) -> list:
    """The `count` items of the largest nonzero `key`: a section's findings for the summary."""
    return sorted((i for i in items if key(i)), key=key, reverse=True)[:count]
