"""`report`: one report of a whole dump, worded from the facts the analyses found (`report_of`).

A report is a list of sections, each made by one function of `SECTION_BUILDERS` from the same
`DumpFacts`: the dump and, per module, the `ModuleFacts` the analyses found in its files. A section
holds tables and findings; a finding carries what it costs, so the summary can rank findings from every
section together. A new analysis joins the report by adding its facts to `ModuleFacts` (or
`DumpFacts`) and appending one builder to `SECTION_BUILDERS`.

Tables keep at most `MAX_ROWS` rows (the largest first) and memory curves are drawn for the
`MAX_CURVES` modules with the highest peaks, each with a note naming what was left out: a dump of
thousands of modules still gives a page of a few megabytes that a browser opens at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from xlainspect.analysis.chips import Chip
from xlainspect.analysis.collectives import collective_totals
from xlainspect.analysis.commands import remembered
from xlainspect.analysis.commands.report import DumpFacts, op_lines, report_of
from xlainspect.analysis.copies import copy_totals
from xlainspect.analysis.fusions import fusion_kind_totals
from xlainspect.analysis.layouts import ledger_totals
from xlainspect.analysis.memory import ModuleMemory
from xlainspect.analysis.tabular import Tabular
from xlainspect.analysis.timing import CompileMark, FunctionTiming, OpTiming, Timing, losses
from xlainspect.dump.directory import Dump, SkippedFile
from xlainspect.progress import Progress, silent
from xlainspect.report.causes import causes_text, for_people, suggestion
from xlainspect.report.document import Table

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
    memory: list[ModuleMemory] = field(default_factory=list[ModuleMemory])
    """The rows whose curves the HTML page draws (the memory section's)."""
    charts: list[Chart] = field(default_factory=list)
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
class DumpReport(Tabular):
    """One report of a whole dump: the modules table and each section."""

    root: str
    modules: Table
    sections: list[Section]
    skipped: list[SkippedFile]

    def findings(self) -> list[Finding]:
        """Every section's findings, costliest first within a unit, the units in `UNIT_ORDER`."""
        found = [f for s in self.sections for f in s.findings]
        return sorted(found, key=lambda f: (UNIT_ORDER.index(f.unit), -f.cost))


def dump_report(facts: DumpFacts) -> DumpReport:
    """Every section builder run on the facts of a dump (`xlainspect.report_of`)."""
    sections = [section for build in SECTION_BUILDERS if (section := build(facts)) is not None]
    return DumpReport(str(facts.dump.root), _modules_table(facts.dump), sections, facts.skipped)


@remembered("path", "profile", "log")
def report_at(
    path: str | Path,
    *,
    profile: str | Path | None = None,
    log: str | Path | None = None,
    strict: bool = False,
    progress: Progress = silent,
) -> DumpReport:
    """`dump_report(report_of(path, ...))`, what the `report` command writes, answered from the command
    cache while the inputs are unchanged."""
    return dump_report(report_of(path, profile=profile, log=log, strict=strict, progress=progress))


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


def time_section(source: DumpFacts) -> Section:
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


def _time_intro(source: DumpFacts, peaks: dict[str, tuple[int, str]]) -> str:
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


def _detail(source: DumpFacts, op: OpTiming) -> OpDetail | None:
    """The op's HLO lines and neighbourhood, for the page; None where its module is not in the dump."""
    found = op_lines(source, op)
    if found is None:
        return None
    return OpDetail(f"op-{op.module}-{op.name}", op.module, op.name, found.path, found.lines, op.source or "")


def roofline_section(source: DumpFacts) -> Section | None:
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


def compiles_section(source: DumpFacts) -> Section | None:
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


def recompiles_section(source: DumpFacts) -> Section:
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


def memory_section(source: DumpFacts) -> Section | None:
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


def padding_section(source: DumpFacts) -> Section | None:
    """layouts: bytes lost to tile padding, per function and the most wasteful values."""
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


def fusions_section(source: DumpFacts) -> Section:
    """fusions: totals per kind, the largest fusions, and compute ops left outside fusions."""
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


def copies_section(source: DumpFacts) -> Section:
    """copies: bytes moved per module and the largest copies."""
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


def collectives_section(source: DumpFacts) -> Section:
    """collectives: payload and bytes per step per module and kind, and every collective."""
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


SECTION_BUILDERS: list[Callable[[DumpFacts], Section | None]] = [
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
