"""Measured time per HLO op from a jax.profiler trace, beside the op's roofline; compiles on the timeline.

* **Op events** carry the stats `hlo_op` and `hlo_module` (XLA's thunk executor on CPU, the device
  streams on GPU/TPU), and `program_id`, the module id of the dump file the op belongs to, so an op is
  labelled like the other commands label it (`module_0002.jit_train_step`) and joined to the `cost` row
  of that module by instruction name: the dump's module, else the HLO the trace embeds.
* **Steps** are the trace's step markers (events with a `step_num` stat: `jax.profiler.StepTraceAnnotation`),
  else the executions (`run_id`) of the function executed most often.
* **Compiles** are the host events jax names `backend_compile_and_load` (jax 0.10.2,
  jax/_src/compiler.py) or `backend_compile` (older jax); the function is the HloModule name XLA's
  passes carry (`module` stat) during the compile, else the enclosing `PjitFunction(f)` as `jit_f`.
  A compile falls in the last step that started before it (None: before the first step).
* **Efficiency** is roofline time / measured time per execution; **lost** is measured - roofline over
  all executions, the time an op spends above its roofline (a layout copy, a bad sharding, a stall).
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from xlainspect.analysis.chips import Chip
from xlainspect.dump.directory import Dump, DumpModule
from xlainspect.dump.model_cache import cached_result
from xlainspect.dump.xplane import Trace, TraceEvent, embedded_hlo_text
from xlainspect.errors import XlaInspectError
from xlainspect.hlo.model import Module

if TYPE_CHECKING:  # the costs are computed, and the analysis imported, only where a report is made
    from xlainspect.analysis.cost import OpCost

COMPILE_EVENTS = frozenset({"backend_compile_and_load", "backend_compile"})


@dataclass(slots=True)
class Step:
    """One training step found in a profile: its number and time."""

    number: int
    start_seconds: float
    """Seconds since the trace's first event."""
    seconds: float


@dataclass(slots=True)
class CompileEvent:
    """One compile a profile recorded, with the step it fell in."""

    name: str
    """The event as jax names it (`backend_compile_and_load`)."""
    function: str | None
    """The HloModule name (`jit_train_step`), as in the dump and count-recompiles."""
    start_seconds: float
    seconds: float
    step: int | None
    thread: str


@dataclass(slots=True)
class OpTime:
    """One HLO op's measured time in a profile, beside its roofline time where costs are known."""

    module: str
    """`module_0002.jit_train_step` (the dump file's label) where the trace names the module id."""
    function: str
    name: str
    count: int
    total_seconds: float
    per_step_seconds: float | None
    min_seconds: float
    median_seconds: float
    max_seconds: float
    step_share: float | None
    """Of all steps' time, the fraction this op took."""
    kind: str | None = None
    """From the dump (`cost`): fusion kind, collective kind or opcode."""
    flops: float | None = None
    bytes_accessed: int | None = None
    """Padded bytes read and written per execution."""
    measured_bytes_per_second: float | None = None
    roofline_seconds: float | None = None
    """Per execution, on the chip."""
    efficiency: float | None = None
    lost_seconds: float | None = None
    bound: str | None = None
    op_name: str | None = None
    source: str | None = None


@dataclass
class ProfileReport:
    """Measured time per op, steps and compiles of a profile, joined with a dump's costs."""

    paths: list[str]
    steps: list[Step]
    step_source: str
    """`step markers`, `executions of <function>` or `none`."""
    ops: list[OpTime]
    """Ranked by time lost (measured - roofline) where a roofline is known, else by measured time."""
    compiles: list[CompileEvent]
    joined: list[str] = field(default_factory=list)
    """Modules whose ops were joined with a dump module's cost."""
    op_events: list[TraceEvent] = field(default_factory=list, repr=False)
    """The op events themselves, for the timeline."""
    chip: Chip | None = field(default=None, repr=False)
    """The chip the roofline times are for."""
    hlo_source: str | None = None
    """Where the ops' costs come from: `dump`, `embedded in the trace`, or None (no costs)."""
    notes: list[str] = field(default_factory=list)
    """Why costs are missing, for stderr."""
    skipped: list = field(default_factory=list)
    """`SkippedFile`s of the dump that could not be read."""


def profile(trace: Trace, dump: Dump | None = None, chip: Chip | None = None) -> ProfileReport:
    """Op times, steps and compiles of `trace`. Each op gets its cost row from the module of `dump` (the
    same run's) with its module id, else from the HLO the trace embeds (printed by jaxlib, when jax is
    installed; otherwise a note says so)."""
    op_events = [e for e in trace.events if "hlo_op" in e.stats and "hlo_module" in e.stats]
    steps, source = _steps(trace.events, op_events)
    labels, notes = {_label(e) for e in op_events}, []
    if dump is not None:
        costs = _dump_costs(dump, labels, chip)
    else:
        costs = {label: _op_costs(m, chip) for label, m in _embedded_modules(trace, labels, notes).items()}
    ops = [_op_time(key, events, steps, costs.get(key[0], {})) for key, events in _by_op(op_events).items()]
    known = any(op.lost_seconds is not None for op in ops)
    ops.sort(key=lambda op: -((op.lost_seconds or 0.0) if known else op.total_seconds))
    hlo = ("dump" if dump is not None else "embedded in the trace") if costs else None
    return ProfileReport(
        [str(p) for p in trace.paths],
        steps,
        source,
        ops,
        compiles(trace, steps),
        sorted(costs),
        op_events,
        chip,
        hlo,
        notes,
    )


def compiles(trace: Trace, steps: list[Step]) -> list[CompileEvent]:
    """Every compile event of the trace with its function and the step it fell in."""
    starts = [e.start_ns for e in trace.events]  # the trace's events are sorted by start
    found = []
    for event in trace.events:
        if event.name in COMPILE_EVENTS:
            start = event.start_ns / 1e9
            found.append(
                CompileEvent(
                    event.name,
                    _compiled_function(trace.events, starts, event),
                    start,
                    event.duration_ns / 1e9,
                    _step_at(steps, start),
                    event.line,
                )
            )
    return found


def only_function(report: ProfileReport, function: str | None) -> ProfileReport:
    """The report narrowed to one function; a name that matches nothing is an input error."""
    if function is None:
        return report
    ops = [op for op in report.ops if op.function == function]
    compiles = [c for c in report.compiles if c.function == function]
    if not ops and not compiles:
        known = sorted({op.function for op in report.ops} | {c.function or "?" for c in report.compiles})
        raise XlaInspectError(f"--function {function}: no op or compile of it in the trace; it has: {', '.join(known)}")
    events = [e for e in report.op_events if e.stats.get("hlo_module") == function]
    return replace(report, ops=ops, compiles=compiles, op_events=events)


def compiles_after(report: ProfileReport, step: int) -> list[CompileEvent]:
    """The compiles that fell in a step after `step`: the gate of `--max-compiles-after-step`."""
    return [c for c in report.compiles if c.step is not None and c.step > step]


def compile_seconds(report: ProfileReport) -> dict[str, list[float]]:
    """Measured seconds of each function's compiles, in trace order (to pair with a dump's modules)."""
    seconds: dict[str, list[float]] = defaultdict(list)
    for event in report.compiles:
        seconds[event.function or "?"].append(event.seconds)
    return dict(seconds)


def paired_compile_seconds(counts: dict[str, int], report: ProfileReport) -> tuple[dict[str, tuple], list[str]]:
    """Per function of a dump (`counts`: its compiles), the measured seconds of the trace's compiles paired
    in order with its modules (None past the trace's), and a sentence for each function whose counts
    differ: a trace covers a window of the run, so compiles before or after it are not in it."""
    measured = compile_seconds(report)
    paired, unpaired = {}, []
    for name, count in counts.items():
        seconds = measured.pop(name, [])
        paired[name] = tuple(seconds[:count]) + (None,) * (count - len(seconds))
        if len(seconds) != count:
            unpaired.append(
                f"{name}: {count} compile(s) in the dump, {len(seconds)} in the trace; the first "
                f"{min(count, len(seconds))} paired in order"
            )
    unpaired += [f"{name}: {len(s)} compile(s) in the trace, none in the dump" for name, s in measured.items()]
    return paired, unpaired


def _label(event: TraceEvent) -> str:
    program = event.stats.get("program_id")
    name = str(event.stats["hlo_module"])
    return _module_label(program, name) if isinstance(program, int) else name


def _module_label(program_id: int, name: str) -> str:
    """The trace's program_id is the dump's module id: label as `DumpModule.label` does, without the host."""
    return f"module_{program_id:04d}.{name}"


def _by_op(op_events: list[TraceEvent]) -> dict[tuple[str, str, str], list[TraceEvent]]:
    grouped: dict[tuple[str, str, str], list[TraceEvent]] = defaultdict(list)
    for event in op_events:
        grouped[(_label(event), str(event.stats["hlo_module"]), str(event.stats["hlo_op"]))].append(event)
    return grouped


def _steps(events: list[TraceEvent], op_events: list[TraceEvent]) -> tuple[list[Step], str]:
    marked: dict[int, tuple[float, float]] = {}
    for event in events:
        number = event.stats.get("step_num")
        if isinstance(number, int) or (isinstance(number, str) and number.isdigit()):
            start, end = marked.get(int(number), (event.start_ns, event.start_ns + event.duration_ns))
            marked[int(number)] = (min(start, event.start_ns), max(end, event.start_ns + event.duration_ns))
    if marked:
        return [Step(n, s / 1e9, (e - s) / 1e9) for n, (s, e) in sorted(marked.items())], "step markers"
    runs: dict[tuple[str, object], list[TraceEvent]] = defaultdict(list)
    for event in op_events:  # by function, not module: a recompiled step function is still the step
        runs[(str(event.stats["hlo_module"]), event.stats.get("run_id"), _label(event))].append(event)
    if not runs:
        return [], "none"
    function = Counter(key[0] for key in runs).most_common(1)[0][0]
    spans = sorted(
        (min(e.start_ns for e in run), max(e.start_ns + e.duration_ns for e in run))
        for key, run in runs.items()
        if key[0] == function
    )
    return [Step(n, s / 1e9, (e - s) / 1e9) for n, (s, e) in enumerate(spans)], f"executions of {function}"


def _step_at(steps: list[Step], seconds: float) -> int | None:
    started = [s for s in steps if s.start_seconds <= seconds]
    return started[-1].number if started else None


def _compiled_function(events: list[TraceEvent], starts: list[float], compile_event: TraceEvent) -> str | None:
    """The HloModule XLA's passes name during the compile, else the enclosing PjitFunction(f) as jit_f."""
    start, end = compile_event.start_ns, compile_event.start_ns + compile_event.duration_ns
    during = events[bisect.bisect_left(starts, start) : bisect.bisect_right(starts, end)]
    named = Counter(str(e.stats["module"]) for e in during if "module" in e.stats)
    functions = [(name, n) for name, n in named.most_common() if _is_function(name)]
    if functions:
        return functions[0][0]
    callers = [
        e
        for e in events[: bisect.bisect_right(starts, start)]
        if e.name.startswith("PjitFunction(") and e.line == compile_event.line and end <= e.start_ns + e.duration_ns
    ]
    return f"jit_{callers[-1].name.removeprefix('PjitFunction(').removesuffix(')')}" if callers else None


def _is_function(module: str) -> bool:
    """Not one of XLA:CPU's per-kernel codegen modules (`__compute_module_x`, `x_kernel_module`)."""
    return not module.startswith("__compute_module") and not module.endswith("_kernel_module")


def _dump_costs(dump: Dump, labels: set[str], chip: Chip | None) -> dict[str, dict[str, OpCost]]:
    """The op costs of each traced label's after-optimizations module in the dump; files that do not
    parse are skipped."""
    costs = {}
    for module in _traced_modules(dump, labels):
        try:
            costs[_dump_label(module)] = _cached_op_costs(module, chip)
        except XlaInspectError as error:
            dump.skip(module.hlo_file().path, error)
    return costs


def _cached_op_costs(module: DumpModule, chip: Chip | None) -> dict[str, OpCost]:
    """`_op_costs` of the module, answered from the results cache while its file is unchanged."""
    hlo = module.hlo_file("after")
    compute = lambda: _op_costs(module.module("after"), chip)  # noqa: E731
    # the chip by every figure: each `--peak-flops`/`--hbm-bandwidth` chip is keyed `custom`
    return compute() if hlo is None else cached_result(hlo.path, f"profile-costs:{chip!r}", compute)


def _op_costs(module: Module, chip: Chip | None) -> dict[str, OpCost]:
    from xlainspect.analysis.cost import module_cost

    return {row.name: row for row in module_cost(module, chip).ops}


def _embedded_modules(trace: Trace, labels: set[str], notes: list[str]) -> dict[str, Module]:
    """The HLO modules the trace embeds (XLA's optimized HLO, with the names the op events carry). The
    parser is imported here: with a dump whose costs are cached, a profile never loads Lark."""
    from xlainspect.hlo.parser import parse_hlo

    modules = {}
    for program_id, (name, proto) in sorted(trace.hlo_protos.items()):
        label = _module_label(program_id, name)
        if label not in labels:
            continue
        try:
            modules[label] = parse_hlo(embedded_hlo_text(proto), label)[0]
        except XlaInspectError as error:
            notes.append(f"{label}: {error}")
            break  # the same reason (no jax) holds for every module
    return modules


def _traced_modules(dump: Dump, labels: set[str]) -> list[DumpModule]:
    return [m for m in dump.modules if _dump_label(m) in labels]


def _dump_label(module: DumpModule) -> str:
    """The label `_label` gives an op event of this module (the host prefix is not in the trace)."""
    return module.label.rpartition("/")[2]


def _op_time(key: tuple[str, str, str], events: list[TraceEvent], steps: list[Step], costs: dict) -> OpTime:
    from statistics import median

    label, function, name = key
    seconds = [e.duration_ns / 1e9 for e in events]
    total = sum(seconds)
    stepped = sum(s.seconds for s in steps)
    measured = OpTime(
        label,
        function,
        name,
        len(seconds),
        total,
        total / len(steps) if steps else None,
        min(seconds),
        median(seconds),
        max(seconds),
        total / stepped if stepped else None,
    )
    cost = costs.get(name)
    return measured if cost is None else _with_cost(measured, cost)


def _with_cost(measured: OpTime, cost: OpCost) -> OpTime:
    moved = cost.padded_bytes_read + cost.padded_bytes_written
    per_run = measured.total_seconds / measured.count
    roofline = cost.roofline_seconds
    return replace(
        measured,
        kind=cost.kind,
        flops=cost.flops,
        bytes_accessed=moved,
        measured_bytes_per_second=moved / per_run if per_run > 0 and moved >= 0 else None,
        roofline_seconds=roofline,
        efficiency=roofline / per_run if roofline is not None and per_run > 0 else None,
        lost_seconds=measured.total_seconds - roofline * measured.count if roofline is not None else None,
        bound=cost.bound,
        op_name=cost.op_name,
        source=cost.source,
    )
