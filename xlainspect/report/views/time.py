"""The report's time sections: where the time goes (step time per function, measured with --profile or
the roofline estimate, said which; the ops that lose the most time a step, each linked to its HLO
neighbourhood and source line) and the roofline. `profile` and `cost` word the same figures per op
(`views.cost`)."""

from __future__ import annotations

from xlainspect.analysis.commands.report import DumpFacts, op_lines
from xlainspect.analysis.copies import Copy
from xlainspect.analysis.profile.model import CATEGORIES
from xlainspect.analysis.timing import OpLoss, OpTiming, Timing, losses, run_seconds
from xlainspect.report.sections import (
    A_STEP,
    Chart,
    Finding,
    HostBars,
    OpDetail,
    Roofline,
    Section,
    StepBars,
    StepBreakdown,
    rank,
    table,
)
from xlainspect.report.views.compiles import COMPILE_SOURCES, recompiles_in_brief
from xlainspect.report.views.cost import duration
from xlainspect.report.views.hosts import host_bars, job_headline
from xlainspect.report.views.profile import IDLE_FIXED, headline, idle_advice, note_text

TOP_OPS_FOUND = 10
"""Ops by time lost that become findings (each with its HLO neighbourhood on the page)."""
MIN_LOSS_SHARE = 0.001
"""An op loss under this share of the longest function's step time is not a finding (noise, not a fix)."""
CHART_FUNCTIONS = 15
"""Functions in the step-time chart (the slowest)."""
ROOFLINE_OPS = 400
"""Ops on the roofline chart (the slowest)."""
IDLE_SHARE = 0.05
"""An idle cause under this share of the headline's step is not a finding."""
CATEGORY_WORDS = {
    "compute": "compute",
    "collectives": "collectives",
    "copies": "copies (memcpy, memset)",
    "compile": "compiling",
    "autotune": "autotuning",
    "input": "idle: input (host-to-device transfers)",
    "launch": "idle: launch (gaps between kernels)",
    "host": "idle: host (Python, dispatch)",
}
"""Each category of a step's breakdown (`profile.model.CATEGORIES`) in the step chart's legend."""


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
        "device_us_per_step",
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
    details = [d for loss in found if (d := _detail(source, loss.op)) is not None]
    anchors = {(d.module, d.name): d.anchor for d in details}
    copied = {(c.module, c.name): c for f in source.facts for c in f.copies}
    ops = [
        Finding(
            "time",
            _loss_text(op, copied.get((op.module, op.name))),
            lost,
            A_STEP,
            anchors.get((op.module, op.name), ""),
            op.source or "",
            run,
        )
        for op, lost, run in found
    ]
    findings = sorted(_idle_findings(t, _straggler_work(source)) + ops, key=rank)  # as the summary ranks them
    timed = [f for f in t.functions if f.seconds]
    bars = host_bars(source.job) if source.job is not None else []
    charts: list[Chart] = [
        *([HostBars(bars)] if bars else []),
        *_step_bars(source),
        *([StepBreakdown(timed[:CHART_FUNCTIONS], len(timed))] if timed else []),
    ]
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
        headline=(source.job and job_headline(source.job))
        or headline(t.step_summary, t.step_times, t.step_source, _device(source))
        or "",
        brief=recompiles_in_brief(source),
    )


def _step_bars(source: DumpFacts) -> list[StepBars]:
    """The chart of each step's wall, where the profile found steps."""
    t = source.timing
    if not t.step_times:
        return []
    median = t.step_summary.median_step if t.step_summary else None
    return [StepBars(t.step_times, {c: CATEGORY_WORDS[c] for c in CATEGORIES}, median, _device(source))]


def _device(source: DumpFacts) -> str:
    """`GPU`, `TPU`, `CPU`: the platform the dump compiled the step's function for, else `device`."""
    summary = source.timing.step_summary
    platforms = {m.platform for m in source.dump.modules if summary is not None and m.name == summary.function}
    only = platforms.pop() if len(platforms) == 1 else None
    return only.upper() if only is not None else "device"


def _straggler_work(source: DumpFacts) -> str | None:
    """What the straggler ran while the other hosts waited (`Straggler.meanwhile`'s first kind), where the
    profile shown is the straggler's: its idle time for that cause is the hosts section's finding, costed
    by what it makes the others wait."""
    job = source.job
    found = job.straggler if job is not None else None
    if job is None or found is None or found.name != job.ops_host or found.level != "host" or not found.meanwhile:
        return None
    return found.meanwhile[0][0]


def _idle_findings(t: Timing, straggler: str | None = None) -> list[Finding]:
    """The headline step's idle causes a fix removes (the host, input, launch gaps), each in seconds a
    step and over every step of the run; compiling is the recompiles section's finding, and the idle cause
    that is the straggler's work (`straggler`) the hosts section's."""
    summary = t.step_summary
    if summary is None:
        return []
    step = summary.typical
    run = run_seconds(t.step_times)
    return [
        Finding(
            "time",
            f"idle, {cause}: {idle_advice(cause, step, summary.function)}",
            seconds,
            A_STEP,
            run_seconds=run.get(cause),
        )
        for cause in IDLE_FIXED
        if cause not in ("compile", straggler)
        and (seconds := step.breakdown.get(cause, 0.0)) >= IDLE_SHARE * step.wall_seconds
        and seconds > 0
    ]


def _losses(t: Timing) -> list[OpLoss]:
    """Ops by seconds lost (`timing.losses`), down to `MIN_LOSS_SHARE` of the longest function's step time."""
    longest = max((f.seconds or 0.0 for f in t.functions), default=0.0)
    return [loss for loss in losses(t.ops, t.measured) if loss.seconds >= MIN_LOSS_SHARE * longest]


def _share(seconds: float, whole: float | None) -> str:
    return f"{seconds / whole:.0%}" if whole else ""


def _time_intro(source: DumpFacts, peaks: dict[str, tuple[int, str]]) -> str:
    """The first screen's words: how the times were found, compile time and the worst recompile, the peak."""
    t = source.timing
    if t.measured:
        steps = f"{t.steps} steps" if t.steps else "no steps found: times are of the whole trace"
        said = (
            f"Measured in the profile ({steps}): the step is its wall, the device's time in it above; a "
            "function's device time a step (the table) is one device's (the mean over the devices that ran "
            "it), its kernels' over the steps without a compile it ran in."
        )
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
    said += f" {compiled:.2f} s compiling ({COMPILE_SOURCES[t.compile_source]})." if t.compile_seconds else ""
    top = max(peaks.values(), default=None)
    said += f" Memory peaks at {top[0]:,} bytes in {top[1]}." if top else ""
    return said + "".join(f" Note: {note_text(n)}" for n in t.notes[:3])


ADVICE = {
    "collective": "collective, on the step's path unless overlapped with compute (async collectives, XLA's "
    "latency-hiding scheduler); or shard so it sends less",
    "layout copy": "layout copy: make producer and consumer agree on the layout (xlainspect copies) to remove it",
    "fusion missed": "fusion missed: left outside any fusion, its result makes a round trip through HBM "
    "(xlainspect fusions)",
}
"""What to do about an op, by `OpTiming.category` (padding says its share, below)."""


def _loss_text(op: OpTiming, copy: Copy | None = None) -> str:
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
    elif category == "collective" and op.wait_seconds:
        advice = (
            f"moving data {duration(max(0.0, (op.per_step_seconds or 0.0) - op.wait_seconds))} a step (its "
            f"{duration(op.wait_seconds)} a step waiting for the last peer is charged to what it waits for): "
            + ADVICE[category]
        )
    elif category in ADVICE:
        advice = ADVICE[category]
    elif category == "padding":
        advice = (
            f"padding: {op.padding_share:.0%} of its bytes are tile padding; make the minor dimensions multiples "
            "of the tile (xlainspect layouts)"
        )
    elif op.efficiency:  # the profile's one figure: roofline over measured seconds per execution
        slower = 1 / op.efficiency
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
            op.efficiency,
            op.bound or "",
            op.intensity,
            op.op_name or "",
            op.source or "",
        )
        for op, lost, _ in found
    ]
    columns = (
        "module",
        "op",
        "kind",
        "fix",
        "lost_us_per_step",
        "measured_us_per_step",
        "roofline_us_per_execution",
        "efficiency",
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
