"""`report`: one report of a whole dump, built from the analyses the other commands run.

A report is a list of sections, each made by one function of `SECTION_BUILDERS` from the same
`ReportInput`: the dump and, per module, the `ModuleFacts` the analyses found in its files (computed
once per module and kept in the results cache beside its file, so a second report of a dump reads no
HLO). A section holds tables and findings; a finding carries what it costs, so the summary can rank
findings from every section together. A new analysis (cost and roofline, say) joins the report by
appending one builder to `SECTION_BUILDERS`; it may parse modules itself (`DumpModule.module()`).

Tables keep at most `MAX_ROWS` rows (the largest first) and memory curves are drawn for the
`MAX_CURVES` modules with the highest peaks, each with a note naming what was left out: a dump of
thousands of modules still gives a page of a few megabytes that a browser opens at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from xlainspect.analysis.chips import Chip
from xlainspect.analysis.commands.cost import ChipChoice, chip_for
from xlainspect.dump.directory import SHARE_MIN_BYTES, SHARE_MIN_MODULES, Dump, DumpModule, load_dump
from xlainspect.dump.jaxlog import JaxLog, run_log
from xlainspect.dump.model_cache import remembered
from xlainspect.errors import UsageError, XlaInspectError
from xlainspect.progress import Progress, silent
from xlainspect.report.causes import causes_text, for_people, suggestion
from xlainspect.report.document import Table
from xlainspect.report.timing import (
    CompileMark,
    FunctionTiming,
    ModuleTime,
    OpTiming,
    Timing,
    losses,
    module_time,
    timing,
)
from xlainspect.settings import cache_enabled, kept_objects
from xlainspect.workers import map_shared

if TYPE_CHECKING:  # read only where a profile is given
    from xlainspect.analysis.profile import ProfileReport

T = TypeVar("T")

MAX_ROWS = 300
"""Rows per table; the rest is counted in the table's note (the commands themselves list every row)."""
MAX_CURVES = 12
"""Memory curves drawn, for the modules with the highest peaks."""
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


@dataclass
class Section:
    """One section of the dump report: its tables and the findings it ranks."""

    key: str
    """The anchor of the section (`#recompiles`); also what the browser test looks for."""
    title: str
    intro: str
    tables: list[Table] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    memory: list = field(default_factory=list)
    """`ModuleMemory` rows whose curves the HTML page draws (the memory section's)."""
    charts: list = field(default_factory=list)
    """What the HTML page draws as SVG: `StepBreakdown`, `Roofline`, `CompileTimeline`."""
    details: list[OpDetail] = field(default_factory=list)
    """The ops findings link to: their HLO lines and neighbourhood."""
    links: list[tuple[str, str]] = field(default_factory=list)
    """(text, anchor) of other parts of the page the section points to, under its intro."""


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
class OpDetail:
    """An op a finding links to: its HLO lines and those of its neighbourhood (as `graph --around`
    finds it), each `(line number, text, is the op)`, and its source line."""

    anchor: str
    module: str
    name: str
    path: str
    lines: tuple[tuple[int, str, bool], ...]
    source: str


@dataclass(slots=True)
class ModuleFacts:
    """What the analyses found in one module's after-optimizations HLO and side files."""

    label: str
    memory: object | None
    """`ModuleMemory`, None without a buffer assignment."""
    padding: tuple
    """The module's `PaddingRow`s (the padding ledger)."""
    fusions: tuple
    unfused: dict[str, int]
    copies: tuple
    collectives: tuple
    problems: tuple[tuple[str, str], ...] = ()
    """(path, message) of side files that could not be read; the rest of the module is analysed."""
    time: ModuleTime | None = None
    """The module's roofline (`cost`), as the time sections keep it; None without a chip (no times)."""


@dataclass
class ReportInput:
    """What every builder reads: the whole dump (headers: compiles), its count-recompiles rows and the
    facts of each module that parsed."""

    dump: Dump
    facts: list[ModuleFacts]
    readable: list[DumpModule]
    recompiles: list
    """`count_recompiles` of the dump: headers only, so it runs while workers analyse the modules."""
    timing: Timing
    """Step time per function, ops, compiles: measured with a profile, else the roofline estimate."""


@dataclass
class DumpReport:
    """One report of a whole dump: the modules table and each section."""

    root: str
    modules: Table
    sections: list[Section]
    skipped: list

    def findings(self) -> list[Finding]:
        """Every section's findings, costliest first within a unit, the units in `UNIT_ORDER`."""
        found = [f for s in self.sections for f in s.findings]
        return sorted(found, key=lambda f: (UNIT_ORDER.index(f.unit), -f.cost))


def dump_report(
    dump: Dump,
    advance: Callable[[int], None] | None = None,
    trace: str | Path | None = None,
    log: JaxLog | None = None,
) -> DumpReport:
    """Run every section builder on the dump; `advance(n)` as modules are analysed (a progress bar's).
    With `trace` (a jax.profiler trace of the same run) step times are measured; with `log` (its jax
    log) compiles have seconds.

    count-recompiles (headers only) and the profile run while the modules are analysed; the files
    count-recompiles skips are kept apart and listed after those the analyses skipped, in the order a
    serial run finds them."""
    from xlainspect.analysis.recompiles import count_recompiles

    headers = Dump(dump.root, dump.modules)

    def meanwhile():
        return count_recompiles(headers), _profiled(trace, dump)

    all_facts, (recompiles, profiled) = _facts_of(dump.modules, advance or (lambda n: None), meanwhile)
    facts, readable = [], []
    for dump_module, found in zip(dump.modules, all_facts):
        if isinstance(found, XlaInspectError):
            dump.skip(dump_module.hlo_file().path, found)
            continue
        facts.append(found)
        readable.append(dump_module)
        for path, message in found.problems:
            dump.skip(Path(path), XlaInspectError(message))
    dump.skipped += recompiles.skipped
    times = timing([f.time for f in facts if f.time is not None], readable, profiled, log)
    source = ReportInput(dump, facts, readable, recompiles.functions, times)
    sections = [section for build in SECTION_BUILDERS if (section := build(source)) is not None]
    return DumpReport(str(dump.root), _modules_table(dump), sections, dump.skipped)


@remembered("path", "profile", "log")
def report_of(
    path: str | Path,
    *,
    profile: str | Path | None = None,
    log: str | Path | None = None,
    strict: bool = False,
    progress: Progress = silent,
) -> DumpReport:
    """`dump_report` of the dump under `path` (the `report` command's function), with the run's profile
    and jax log (the log `capture` saved in the dump when none is given), answered from the command
    cache while the inputs are unchanged."""
    dump = load_dump(Path(path), strict=strict)
    return dump_report(dump, progress("analysing modules", len(dump.modules)), profile, run_log(path, log))


def _profiled(trace: str | Path | None, dump: Dump) -> ProfileReport | None:
    """`profile` of the trace against the dump (its ops joined to their costs), None without a trace."""
    if trace is None:
        return None
    from xlainspect.analysis.profile import profile
    from xlainspect.dump.xplane import read_trace

    profiled = profile(read_trace(trace), dump, _chip(next(iter(dump.modules), None)))
    if not profiled.joined:
        profiled.notes.append(
            f"{trace}: none of the traced modules is in this dump (module ids and names differ): a profile of "
            "another run? Its ops are shown without costs."
        )
    return profiled


def _chip(dump_module: DumpModule | None) -> Chip | None:
    """The GPU the dump was compiled for; None for a CPU dump, or a TPU dump that does not say which."""
    try:
        return chip_for(dump_module, ChipChoice())
    except UsageError:
        return None


CHUNK_MODULES = 16
"""Modules per worker task in a dump of `SHARE_MIN_MODULES` or more: few enough to balance the load,
enough to amortise a task's round trip. Fewer modules go one at a time."""


def _facts_of(
    modules: list[DumpModule], advance: Callable[[int], None], meanwhile: Callable[[], T]
) -> tuple[list[ModuleFacts | XlaInspectError], T]:
    """Each module's facts, or the error that kept its HLO from parsing, in order, and what
    `meanwhile()` returns: work of this process that needs no facts, done while workers find them
    (`workers.map_shared`, the largest modules first).

    Where xlainspect owns the process, garbage collection pauses until they are found (forked workers
    inherit the pause) and what was made is frozen after: the facts and models live to the end of the run,
    and collections scanning them would cost a tenth of the work here and half of the sections'."""
    also: list[T] = []
    with kept_objects():
        found = map_shared(
            _facts_or_error,
            modules,
            CHUNK_MODULES if len(modules) >= SHARE_MIN_MODULES else 1,
            advance=advance,
            meanwhile=lambda: also.append(meanwhile()),
            size=DumpModule.hlo_bytes,
            serial_below=SHARE_MIN_MODULES,
            serial_below_size=SHARE_MIN_BYTES,
        )
    return found, also[0]


def _facts_or_error(dump_module: DumpModule) -> ModuleFacts | XlaInspectError:
    """The module's facts from the results cache, else found now; the error when its HLO does not parse."""
    from xlainspect.dump.model_cache import cached_result

    try:
        return cached_result(dump_module.hlo_file().path, _analysis_key(dump_module), lambda: module_facts(dump_module))
    except XlaInspectError as error:
        return error


def module_facts(dump_module: DumpModule) -> ModuleFacts:
    """Run the per-module analyses once on a parsed module; raises XlaInspectError when its HLO does not parse."""
    from xlainspect.analysis.collectives import collectives
    from xlainspect.analysis.copies import copies
    from xlainspect.analysis.cost import module_cost
    from xlainspect.analysis.fusions import fusions, unfused_ops
    from xlainspect.analysis.layouts import LedgerInput, padding_ledger
    from xlainspect.analysis.lookup import module_label
    from xlainspect.analysis.memory import assigned_memory
    from xlainspect.dump.buffers import read_buffer_assignment
    from xlainspect.dump.files import read_text

    module = dump_module.module("after")
    problems, memory, padding = [], None, ()
    side = dump_module.file(kind="buffer-assignment")
    try:
        assignment = None
        if side is not None:  # read once, for memory and padding alike
            text = read_text(side.path)
            assignment = read_buffer_assignment(text, str(side.path))
            memory = assigned_memory(dump_module, text, assignment)
        ledger = LedgerInput(module, dump_module.name or module.name, dump_module.platform, assignment)
        padding = tuple(padding_ledger([ledger]))
    except XlaInspectError as error:  # a side file (buffer assignment, live ranges) unreadable: say which
        problems.append((str((side or dump_module.hlo_file()).path), str(error)))
    return ModuleFacts(
        module_label(module),
        memory,
        padding,
        tuple(fusions(module)),
        dict(unfused_ops(module).most_common()),
        tuple(copies(module, dump_module.platform)),
        tuple(collectives(module)),
        tuple(problems),
        module_time(module_cost(module, chip)) if (chip := _chip(dump_module)) else None,
    )


def _analysis_key(dump_module: DumpModule) -> str:
    """The results cache's name for this module's facts; with the cache off, no side file is stat'ed."""
    return f"report:{_side_stamp(dump_module)}" if cache_enabled() else "report"


def _side_stamp(dump_module: DumpModule) -> str:
    """Size and mtime of the side files, so cached facts follow a buffer assignment rewritten on its own."""
    stamps = []
    for dump_file in dump_module.files:
        if dump_file.kind != "hlo":
            with contextlib.suppress(OSError):
                stat = dump_file.path.stat()
                stamps.append(f"{dump_file.kind}:{stat.st_size}:{stat.st_mtime_ns}")
    return ",".join(sorted(stamps))


def _modules_table(dump: Dump) -> Table:
    rows = tuple((m.label, m.name or "", m.platform_tag or m.platform or "", ", ".join(m.stages)) for m in dump.modules)
    return Table("modules", ("module", "function", "platform", "stages"), rows)


def table(title: str, columns: tuple[str, ...], rows: list[tuple], what: str = "") -> Table:
    """A table of the first `MAX_ROWS` rows, with a note saying how many were left out and where they are."""
    note = f"showing {MAX_ROWS:,} of {len(rows):,} rows; {what}" if len(rows) > MAX_ROWS and what else ""
    return Table(title, columns, tuple(rows[:MAX_ROWS]), note)


def _largest(items: list, key: Callable, count: int = TOP_FINDINGS) -> list:
    return sorted((i for i in items if key(i)), key=key, reverse=True)[:count]


# ---- sections

TOP_OPS_FOUND = 10
"""Ops by time lost that become findings (each with its HLO neighbourhood on the page)."""
MIN_LOSS_SHARE = 0.001
"""An op loss under this share of the longest function's step time is not a finding (noise, not a fix)."""
CHART_FUNCTIONS = 15
"""Functions in the step-time chart (the slowest)."""
ROOFLINE_OPS = 400
"""Ops on the roofline chart (the slowest)."""
TIMELINE_LANES = 30
"""Functions on the compile timeline, one lane each (those with the most compile time, else compiles)."""


def time_section(source: ReportInput) -> Section:
    """Where the time goes: step time per function (measured, or the roofline estimate, said which),
    split by op kind, with its compiles and memory peak; the ops that lose the most time a step are
    findings, each linked to its HLO neighbourhood and source line."""
    t = source.timing
    compiles = {r.name: r.modules for r in source.recompiles}
    peaks: dict[str, tuple[int, str]] = {}
    for facts in source.facts:
        memory = facts.memory
        if memory is not None and memory.peak_bytes and memory.peak_bytes > peaks.get(memory.function, (0, ""))[0]:
            peaks[memory.function] = (memory.peak_bytes, memory.module)
    how = "measured" if t.measured else "roofline estimate"
    rows = [
        (
            f.function,
            f.seconds * 1e6 if f.seconds is not None else None,
            how,
            f.module or "",
            f.bound or "",
            ", ".join(f"{k} {_share(s, f.seconds)}".strip() for k, s in list(f.by_kind.items())[:3]),
            compiles.get(f.function),
            t.compile_seconds.get(f.function),
            t.recompile_seconds.get(f.function),
            peaks.get(f.function, (None,))[0],
        )
        for f in t.functions
    ]
    columns = (
        "function",
        "step_us",
        "time",
        "module",
        "bound",
        "largest op kinds",
        "compiles",
        "compile_seconds",
        "recompile_seconds",
        "peak_bytes",
    )
    if t.measured:  # over every module of the function: no module to name
        columns = tuple(c for c in columns if c != "module")
        rows = [row[:3] + row[4:] for row in rows]
    found = _losses(t)[:TOP_OPS_FOUND]
    details = [d for op, _ in found if (d := _detail(source, op)) is not None]
    anchors = {(d.module, d.name): d.anchor for d in details}
    copied = {(c.module, c.name): c for f in source.facts for c in f.copies}
    findings = [
        Finding(
            "time",
            _loss_text(op, copied.get((op.module, op.name))),
            lost,
            "seconds",
            anchors.get((op.module, op.name), ""),
            op.source or "",
        )
        for op, lost in found
    ]
    timed = [f for f in t.functions if f.seconds]
    charts = [StepBreakdown(timed[:CHART_FUNCTIONS], len(timed))] if timed else []
    curves = {f.memory.module: f.memory for f in source.facts if f.memory is not None and f.memory.curve}
    top = max(peaks.values(), default=None)
    links = [(f"memory curve of {top[1]}, the peak", f"memory-{top[1]}")] if top and top[1] in curves else []
    links += [("roofline", "roofline")] if t.chip is not None else []
    links.append(("compile timeline", "compiles"))
    return Section(
        "time",
        "Where the time goes",
        _time_intro(source, peaks),
        [table("step time per function", columns, rows, "xlainspect profile / cost list every op")] if rows else [],
        findings,
        charts=charts,
        details=details,
        links=links,
    )


def _losses(t: Timing) -> list[tuple[OpTiming, float]]:
    """Ops by seconds lost a step, down to `MIN_LOSS_SHARE` of the longest function's step time."""
    longest = max((f.seconds or 0.0 for f in t.functions), default=0.0)
    return [(op, lost) for op, lost in losses(t.ops, t.measured) if lost >= MIN_LOSS_SHARE * longest]


def _share(seconds: float, whole: float | None) -> str:
    return f"{seconds / whole:.0%}" if whole else ""


def _time_intro(source: ReportInput, peaks: dict[str, tuple[int, str]]) -> str:
    """The first screen's words: how the times were found, compile time and the worst recompile, the peak."""
    t = source.timing
    if t.measured:
        steps = f"{t.steps} steps" if t.steps else "no steps found: times are of the whole trace"
        said = f"Measured in the profile ({steps}): a function's step time is its kernels' time a step."
    elif t.functions:
        chip = t.chip.key if t.chip else "the chip"
        said = (
            f"Roofline estimate on {chip}, not measured: every op at the chip's peak FLOP/s or HBM bandwidth, "
            "whichever is slower, of each function's module compiled last. Pass --profile TRACE to measure."
        )
    else:
        said = (
            "No step time: the dump does not name a GPU to draw the roofline for (a CPU dump, or a TPU dump), "
            "and no profile was given (--profile TRACE)."
        )
    compiled = sum(t.compile_seconds.values())
    said += f" {compiled:.2f} s compiling ({t.compile_source})." if t.compile_seconds else ""
    again = [r for r in source.recompiles if r.modules > 1 and not r.eager]
    if again:
        worst = max(again, key=lambda r: (t.recompile_seconds.get(r.name, 0.0), r.modules))
        spent = t.recompile_seconds.get(worst.name)
        why = "; ".join(causes_text(worst.causes)[:2]) or "no cause found"
        said += f" {worst.name} compiled {worst.modules} times" + (f" ({spent:.2f} s again)" if spent else "")
        said += f": {why}."
    top = max(peaks.values(), default=None)
    said += f" Memory peaks at {top[0]:,} bytes in {top[1]}." if top else ""
    return said + "".join(f" Note: {n}" for n in t.notes[:3])


ADVICE = {
    "collective": "collective, on the step's path unless overlapped with compute (async collectives, XLA's "
    "latency-hiding scheduler); or shard so it sends less",
    "layout copy": "layout copy: make producer and consumer agree on the layout (xlainspect copies) to remove it",
    "fusion missed": "fusion missed: left outside any fusion, its result makes a round trip through HBM "
    "(xlainspect fusions)",
}
"""What to do about an op, by `OpTiming.category` (padding says its share, below)."""


def _loss_text(op: OpTiming, copy=None) -> str:
    """What the op loses and what to do about it; a copy as `copies` found it (`Copy`): one that moves
    a value between memory spaces or keeps its layout is no layout copy."""
    category = op.category
    if category == "layout copy" and copy is not None and copy.memory_space_change:
        advice = (
            f"copy between memory spaces ({copy.memory_space_change}): a prefetch or offload, lost where it "
            "does not overlap compute"
        )
    elif category == "layout copy" and copy is not None and not copy.relayout:
        advice = "copy that keeps the layout (copy insertion: a loop-carried or output buffer)"
    elif category in ADVICE:
        advice = ADVICE[category]
    elif category == "padding":
        advice = (
            f"padding: {op.padding_share:.0%} of its bytes are tile padding; make the minor dimensions multiples "
            "of the tile (xlainspect layouts)"
        )
    elif op.measured_seconds and op.roofline_seconds:
        slower = op.measured_seconds / op.roofline_seconds
        times = f"{slower:,.0f}x" if slower >= 10 else f"{slower:.2g}x"
        advice = f"takes {times} its roofline time ({op.bound or '?'} bound)"
    else:
        advice = "measured time, no roofline to compare with"
    return f"{op.module} {op.name} ({op.kind}): {advice}"


def _detail(source: ReportInput, op: OpTiming) -> OpDetail | None:
    """The op's HLO line and its neighbourhood within `graph --around`'s default depth; None where its
    module or instruction is not in the dump (a profile of another run)."""
    from xlainspect.analysis.neighbourhood import neighbourhood
    from xlainspect.dump.files import read_text

    dump_module = next((m for m in source.readable if m.label == op.module), None)
    if dump_module is None:
        return None
    name = f"{op.computation}/{op.name}" if op.computation else op.name
    try:
        module = dump_module.module("after")
        graph = neighbourhood(module, name, NEIGHBOURHOOD_DEPTH)
        if len(graph.nodes) > NEIGHBOURHOOD_LINES:  # a busy op (a loop body's): its operands and users only
            graph = neighbourhood(module, name, 1)
        text = read_text(dump_module.hlo_file("after").path).splitlines()
    except XlaInspectError:
        return None
    lines = tuple(
        (i.line, text[i.line - 1].strip() if 0 < i.line <= len(text) else i.name, i.name == op.name)
        for i in graph.nodes.values()
    )
    anchor = f"op-{op.module}-{op.name}"
    return OpDetail(anchor, op.module, op.name, str(dump_module.hlo_file("after").path), lines, op.source or "")


NEIGHBOURHOOD_DEPTH = 2
"""Edges from the op, either way, as `graph --around` draws by default."""
NEIGHBOURHOOD_LINES = 24
"""Past this many instructions at that depth, the page shows the op's direct neighbours only."""


def roofline_section(source: ReportInput) -> Section | None:
    """The roofline: ops at their achieved (measured) or roofline FLOP/s against arithmetic intensity,
    coloured by bound, on the chip's ceilings; the table of ops by time lost."""
    t = source.timing
    drawn = sorted(
        (op for op in t.ops if op.intensity and op.flops_per_second),
        key=lambda op: -(op.measured_seconds or op.roofline_seconds or 0),
    )[:ROOFLINE_OPS]
    found = _losses(t)
    if t.chip is None or not (drawn or found):
        return None
    measured = "achieved FLOP/s (measured)" if t.measured else "FLOP/s at the roofline (not measured)"
    rows = [
        (
            op.module,
            op.name,
            op.kind,
            op.category or "",
            lost * 1e6,
            op.per_step_seconds * 1e6 if op.per_step_seconds is not None else None,
            op.roofline_seconds * 1e6 if op.roofline_seconds is not None else None,
            op.bound or "",
            op.intensity,
            op.op_name or "",
            op.source or "",
        )
        for op, lost in found
    ]
    columns = (
        "module",
        "op",
        "kind",
        "fix",
        "lost_us_per_step",
        "measured_us_per_step",
        "roofline_us",
        "bound",
        "flops_per_byte",
        "op_name",
        "source",
    )
    return Section(
        "roofline",
        "Roofline",
        f"{len(drawn):,} ops with FLOPs at {measured}, against FLOPs per byte moved, on "
        f"{t.chip.key}'s bf16 and f32 ceilings (dashed: the ridge).",
        [table("ops by time lost a step", columns, rows, "xlainspect profile / cost list every op")],
        charts=[Roofline(drawn, t.chip)] if drawn else [],
    )


def compiles_section(source: ReportInput) -> Section | None:
    """Compiles on a time axis, per function: seconds (profile or jax log) and what recompiled."""
    t = source.timing
    if not t.compiles:
        return None
    rows = [
        (
            r.name,
            r.modules,
            t.compile_seconds.get(r.name),
            t.recompile_seconds.get(r.name),
            "; ".join(causes_text(r.causes)),
        )
        for r in sorted(source.recompiles, key=lambda r: -(t.compile_seconds.get(r.name) or 0.0))
    ]
    seconds = sum(t.compile_seconds.values())
    timed = f"{seconds:.2f} s in all, from the {t.compile_source}" if t.compile_seconds else "no seconds known"
    counts: dict[str, int] = {}
    for mark in t.compiles:
        counts[mark.function] = counts.get(mark.function, 0) + 1
    lanes = sorted(counts, key=lambda f: (-(t.compile_seconds.get(f) or 0.0), -counts[f]))[:TIMELINE_LANES]
    drawn = [m for m in t.compiles if m.function in lanes]
    left_out = (
        f" The timeline draws the {TIMELINE_LANES} functions with the most compile time of {len(counts):,}."
        if len(counts) > TIMELINE_LANES
        else ""
    )
    return Section(
        "compiles",
        "Compile time",
        f"{len(t.compiles):,} compiles ({timed}); red bars are recompiles.{left_out}",
        [
            table(
                "compile time per function",
                ("function", "compiles", "compile_seconds", "recompile_seconds", "what recompiled"),
                rows,
                "xlainspect count-recompiles --log explains each",
            )
        ],
        charts=[CompileTimeline(drawn, t.compile_source)],
    )


def recompiles_section(source: ReportInput) -> Section:
    """count-recompiles: the user's functions first (recompiled ones first) with their source lines,
    causes and suggestions, then the eager ops; the eager traffic is one finding (one fix)."""
    rows = source.recompiles
    by_name = source.dump.functions()
    user, eager = for_people(rows)
    ranked = [*user, *(eager.functions if eager else ())]
    tab = table(
        "compiles per function",
        ("function", "compiles", "modules", "eager", "source", "why", "suggestion"),
        [
            (
                r.name,
                r.modules,
                tuple(m.label for m in by_name.get(r.name, ()) if m.module_id in r.module_ids),
                r.eager,
                r.source or "",
                "; ".join(causes_text(r.causes)),
                suggestion(r) or "",
            )
            for r in ranked
        ],
        "xlainspect count-recompiles lists every function",
    )
    again = source.timing.recompile_seconds
    findings = [
        _compile_finding(
            f"{r.name} compiled {r.modules} times: {'; '.join(causes_text(r.causes)) or 'no cause found'}",
            r.modules - 1,
            again.get(r.name),
            r.source or "",
        )
        for r in user
        if r.modules > 1
    ]
    if eager is not None and eager.compiles > 1:
        spent = [source.timing.compile_seconds.get(r.name) for r in eager.functions]
        findings.append(
            _compile_finding(
                f"{eager.compiles} compiles of eager jax ops ({eager.summary()}): jit the surrounding code",
                eager.compiles,
                sum(s for s in spent if s) if any(spent) else None,
            )
        )
    total = sum(r.modules for r in rows)
    intro = (
        f"{total:,} compiles of {len(rows):,} functions, {sum(r.modules > 1 for r in rows):,} compiled more than once."
    )
    return Section("recompiles", "Recompiles", intro, [tab], findings)


def _compile_finding(text: str, compiles: int, seconds: float | None, where: str = "") -> Finding:
    """A recompile finding in compile seconds where the log or profile timed them, else in compiles."""
    if seconds is None:
        return Finding("recompiles", text, compiles, "compiles", source=where)
    return Finding("recompiles", text, seconds, "compile seconds", source=where)


def memory_section(source: ReportInput) -> Section | None:
    """memory: totals and peak per module, the curve and top buffers of the highest peaks."""
    rows = [f.memory for f in source.facts if f.memory is not None]
    if not rows:
        return None
    peaks = sorted(rows, key=lambda r: -(r.peak_bytes or 0))
    tab = table(
        "memory per module (bytes)",
        ("module", "function", "total_bytes", "peak_bytes", "peak_instruction"),
        [(r.module, r.function, r.total_bytes, r.peak_bytes, r.peak_instruction or "") for r in peaks],
        "xlainspect memory lists every module",
    )
    findings = [
        Finding(
            "memory",
            f"{r.module} peaks at {r.peak_bytes:,} bytes at {r.peak_instruction or 'the end'}",
            r.peak_bytes,
            "bytes",
        )
        for r in _largest(peaks, lambda r: r.peak_bytes or 0)
    ]
    curves = [r for r in peaks if r.curve][:MAX_CURVES]
    drawable = sum(1 for r in rows if r.curve)
    intro = f"{len(rows):,} modules with a buffer assignment; curves of the {len(curves)} highest peaks" + (
        f" of {drawable:,} with live ranges (xlainspect memory DIR --html draws every one)."
        if len(curves) < drawable
        else "."
    )
    return Section("memory", "Memory", intro, [tab], findings, curves)


def padding_section(source: ReportInput) -> Section | None:
    """layouts: bytes lost to tile padding, per function and the most wasteful values."""
    from xlainspect.analysis.layouts import ledger_totals

    labelled = sorted(((f.label, r) for f in source.facts for r in f.padding), key=lambda lr: -lr[1].wasted_bytes)
    rows = [r for _, r in labelled]
    if not rows:
        return None
    per_function = ledger_totals(rows, "function")
    totals = table(
        "per function",
        ("function", "values", "logical_bytes", "padded_bytes", "wasted_bytes", "expansion"),
        [(t.group, t.values, t.logical_bytes, t.padded_bytes, t.wasted_bytes, t.expansion) for t in per_function],
    )
    values = table(
        "most wasted bytes",
        ("module", "instruction", "shape", "logical_bytes", "padded_bytes", "wasted_bytes", "expansion", "op_name"),
        [
            (label, r.instruction, r.shape, r.logical_bytes, r.padded_bytes, r.wasted_bytes, r.expansion, r.op_name)
            for label, r in labelled
            if r.wasted_bytes
        ],
        "xlainspect layouts lists every value",
    )
    findings = [
        Finding(
            "padding",
            f"{t.group} loses {t.wasted_bytes:,} bytes to tile padding ({t.expansion}x)",
            t.wasted_bytes,
            "bytes",
        )
        for t in _largest(per_function, lambda t: t.wasted_bytes)
    ]
    wasted = sum(t.wasted_bytes for t in per_function)
    return Section(
        "padding",
        "Padding waste",
        f"{wasted:,} bytes of tile padding in {len(rows):,} array values.",
        [totals, values],
        findings,
    )


def fusions_section(source: ReportInput) -> Section:
    """fusions: totals per kind, the largest fusions, and compute ops left outside fusions."""
    from xlainspect.analysis.fusions import fusion_kind_totals

    rows = [fusion for f in source.facts for fusion in f.fusions]
    unfused = [
        (f.label, sum(f.unfused.values()), " ".join(f"{k}:{n}" for k, n in f.unfused.items()))
        for f in source.facts
        if f.unfused
    ]
    kinds = table(
        "fusions per kind",
        ("module", "kind", "count", "output_bytes"),
        [(t.module, t.kind, t.count, t.output_bytes) for t in fusion_kind_totals(rows)],
        "xlainspect fusions",
    )
    largest = table(
        "largest fusions",
        ("module", "name", "kind", "root", "output_shape", "output_bytes", "op_name"),
        [
            (f.module, f.name, f.backend_kind or f.kind, f.root, f.output_shape, f.output_bytes, f.op_name or "")
            for f in sorted(rows, key=lambda f: -f.output_bytes)
        ],
        "xlainspect fusions lists every fusion",
    )
    outside = table(
        "compute ops outside fusions",
        ("module", "ops", "opcodes"),
        sorted(unfused, key=lambda u: -u[1]),
        "xlainspect fusions",
    )
    intro = f"{len(rows):,} fusions; {sum(u[1] for u in unfused):,} compute ops outside fusions."
    return Section("fusions", "Fusions", intro, [kinds, largest, outside])


def copies_section(source: ReportInput) -> Section:
    """copies: bytes moved per module and the largest copies."""
    from xlainspect.analysis.copies import copy_totals

    rows = [c for f in source.facts for c in f.copies]
    totals = copy_totals(rows)
    findings = [
        Finding("copies", f"{t.module}: {t.kind} x{t.count} moves {t.bytes:,} bytes", t.bytes, "bytes")
        for t in _largest(totals, lambda t: t.bytes)
    ]
    return Section(
        "copies",
        "Copies",
        f"{len(rows):,} copies, transposes and relayouts.",
        [
            table(
                "per module and kind",
                ("module", "kind", "count", "bytes", "relayout", "layout_only"),
                [(t.module, t.kind, t.count, t.bytes, t.relayout, t.layout_only) for t in totals],
                "xlainspect copies",
            ),
            table(
                "largest copies",
                ("module", "name", "kind", "from_layout", "to_layout", "memory_space_change", "bytes", "op_name"),
                [
                    (
                        c.module,
                        c.name,
                        c.kind,
                        c.from_layout or "",
                        c.to_layout or "",
                        c.memory_space_change or "",
                        c.bytes,
                        c.op_name or "",
                    )
                    for c in sorted(rows, key=lambda c: -c.bytes)
                ],
                "xlainspect copies lists every copy",
            ),
        ],
        findings,
    )


def collectives_section(source: ReportInput) -> Section:
    """collectives: payload and bytes per step per module and kind, and every collective."""
    from xlainspect.analysis.collectives import collective_totals

    rows = [c for f in source.facts for c in f.collectives]
    totals = collective_totals(rows)
    findings = [
        Finding(
            "collectives",
            f"{t.module}: {t.kind} x{t.count} sends {t.bytes_per_step or t.payload_bytes:,} bytes a step",
            t.bytes_per_step or t.payload_bytes,
            "bytes",
        )
        for t in _largest(totals, lambda t: t.bytes_per_step or t.payload_bytes)
    ]
    return Section(
        "collectives",
        "Collectives",
        f"{len(rows):,} collectives.",
        [
            table(
                "per module and kind",
                ("module", "kind", "count", "payload_bytes", "bytes_per_step"),
                [(t.module, t.kind, t.count, t.payload_bytes, t.bytes_per_step) for t in totals],
                "xlainspect collectives",
            ),
            table(
                "collectives",
                (
                    "module",
                    "name",
                    "kind",
                    "dtype",
                    "payload_bytes",
                    "group_size",
                    "bytes_per_device",
                    "executions",
                    "bytes_per_step",
                    "op_name",
                ),
                [
                    (
                        c.module,
                        c.name,
                        c.kind,
                        c.dtype,
                        c.payload_bytes,
                        c.group_size,
                        c.bytes_per_device,
                        c.executions,
                        c.bytes_per_step,
                        c.op_name or "",
                    )
                    for c in sorted(rows, key=lambda c: -c.payload_bytes)
                ],
                "xlainspect collectives lists every collective",
            ),
        ],
        findings,
    )


SECTION_BUILDERS: list[Callable[[ReportInput], Section | None]] = [
    time_section,
    roofline_section,
    compiles_section,
    recompiles_section,
    memory_section,
    padding_section,
    fusions_section,
    copies_section,
    collectives_section,
]
"""The report's sections in page order. Append a builder to add a section (e.g. cost/roofline); a
builder returning None leaves its section out (no buffer assignment: no memory section)."""
