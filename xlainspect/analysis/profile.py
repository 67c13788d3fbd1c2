"""Measured time per HLO op from a jax.profiler trace, beside the op's roofline; steps, functions, compiles.

* **Attribution by XLA's annotations**, never by a kernel's name alone: an op event carries `hlo_module`,
  `program_id` (the module id of the dump's file names) and `hlo_op`, whose last `::` segment is the
  op. On GPU, kernels that ran inside a CUDA graph (an XLA command buffer, jax 0.11's default) carry
  `hlo_op=command_buffer_N` instead: each is placed on the op that launched it from the dump's thunk
  sequence (`dump/thunks.py`: the buffer's commands, each kernel's name and op, in order), one graph
  launch (`correlation_id`) at a time, in graph-node order (`cuda_graph_node_id`); where one kernel
  serves several identical fusions, the k-th run of the kernel is the k-th such command. Copies and
  memsets go to the buffer's copy and memset commands, other library kernels (cuDNN, cuBLAS) to its
  library commands, by order. Events that cannot be placed are counted with the reason.
* **Autotuning apart**: device work of no compiled function of the program (an `hlo_module` without a
  `program_id` that the dump does not name: the fusion being tuned; device work with no module during
  a compile: buffer checks) is autotuning; never an op, never step time.
* **Steps** are the trace's step markers (events with a `step_num` stat: `jax.profiler.StepTraceAnnotation`),
  else the executions of the function with the most device time (`--step-function` picks another).
  Device events fall in the step during which their kernel was launched (the host event with their
  `correlation_id`), else in which they started.
* **Efficiency** is roofline time / measured time per execution; **lost** is measured - roofline over
  all executions, the time an op spends above its roofline (a layout copy, a bad sharding, a stall).
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import median

from xlainspect.analysis.chips import Chip
from xlainspect.analysis.commands import analyse_each
from xlainspect.analysis.cost import OpCost, module_cost
from xlainspect.analysis.profile_compiles import COMPILE_EVENTS, CompileEvent, trace_compiles
from xlainspect.analysis.tabular import Tabular
from xlainspect.dump.directory import Dump, DumpModule, SkippedFile
from xlainspect.dump.thunks import KERNEL_KINDS, Thunk, ThunkSequence, read_thunk_sequence, thunk_files
from xlainspect.dump.xplane import StatValue, Trace, TraceEvent, embedded_hlo_text
from xlainspect.errors import UsageError, XlaInspectError, literal
from xlainspect.hlo.model import Module
from xlainspect.hlo.parser import parse_hlo
from xlainspect.workers import OWNED

COMMAND_BUFFER = "command_buffer_"
_CONTROL_KINDS = frozenset(
    {"kWhile", "kConditional", "kSequential", "kAsyncStart", "kAsyncDone", "kDynamicSliceFusion", "kWaitForStreams"}
)
"""Thunks that launch nothing of their own (`xla/backends/gpu/runtime/thunk.h`)."""


@dataclass(slots=True)
class Step:
    """One training step found in a profile: its number, time and device work."""

    number: int
    start_seconds: float
    """Seconds since the trace's first event."""
    seconds: float
    busy_seconds: float = 0.0
    """Time some kernel of a compiled function ran (overlaps counted once)."""
    idle_seconds: float = 0.0
    """Gaps between those kernels, from the step's first kernel to its last."""
    kernels: int = 0


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
    """Of all steps' device-busy time, the fraction this op took."""
    per_step_count: float | None = None
    """Kernel executions per step, over the steps the op ran in (a loop body's ops: its trip count)."""
    kind: str | None = None
    """From the dump (`cost`): fusion kind, collective kind or opcode."""
    executions: float | None = None
    """Runs per call of its module, from the dump (`cost`): the product of the trip counts of the loops
    it runs in. A kernel per run makes `per_step_count` equal it where the function runs once a step."""
    flops: float | None = None
    """Per execution (`cost`'s `flops_per_execution`)."""
    bytes_accessed: int | None = None
    """Padded bytes read and written per execution."""
    measured_bytes_per_second: float | None = None
    roofline_seconds: float | None = None
    """Per execution, on the chip."""
    efficiency: float | None = None
    """Roofline time / measured time per execution: the module's runs in the trace times `executions`
    (a library call that launches several kernels is one execution)."""
    lost_seconds: float | None = None
    bound: str | None = None
    op_name: str | None = None
    source: str | None = None


@dataclass(slots=True)
class FunctionTime:
    """A compiled function's device time: the sum of its kernels, per step and in all."""

    function: str
    modules: int
    kernels: int
    seconds: float
    per_step_seconds: list[float]
    """In step order; empty without steps."""


@dataclass(slots=True)
class Unplaced:
    """Kernel executions of a compiled function that could not be put on an HLO op, and why."""

    module: str
    hlo_op: str
    kernel: str
    count: int
    seconds: float
    reason: str | None
    """None: the commands that ran them name no HLO op (a thunk without metadata)."""


@dataclass(slots=True)
class Autotuning:
    """Device work of no compiled function: what XLA ran while autotuning."""

    kernels: int
    seconds: float
    per_fusion: list[tuple[str, int, float]]
    """(fusion tuned, kernels, seconds), most time first; `(unnamed)`: buffer checks and comparisons."""


@dataclass
class ProfileReport(Tabular):
    """Measured time per op, steps, functions and compiles of a profile, joined with a dump's costs."""

    paths: list[str]
    steps: list[Step]
    step_source: str
    """`step markers`, `executions of <function> (...)` or `none`."""
    ops: list[OpTime]
    """Ranked by time lost (measured - roofline) where a roofline is known, else by measured time."""
    compiles: list[CompileEvent]
    joined: list[str] = field(default_factory=list[str])
    """Modules whose ops were joined with a dump module's cost."""
    op_events: list[TraceEvent] = field(default_factory=list[TraceEvent], repr=False)
    """The op events themselves (compiled functions' kernels), for the timeline."""
    chip: Chip | None = field(default=None, repr=False)
    """The chip the roofline times are for."""
    hlo_source: str | None = None
    """Where the ops' costs come from: `dump`, `embedded in the trace`, or None (no costs)."""
    notes: list[str] = field(default_factory=list[str])
    """Why costs are missing, for stderr."""
    skipped: list[SkippedFile] = field(default_factory=list[SkippedFile])
    """`SkippedFile`s of the dump that could not be read."""
    functions: list[FunctionTime] = field(default_factory=list[FunctionTime])
    """Device time per compiled function, most first."""
    placed: tuple[int, int] = (0, 0)
    """(kernel executions on an HLO op, kernel executions of compiled functions)."""
    unplaced: list[Unplaced] = field(default_factory=list[Unplaced])
    autotuning: Autotuning | None = None
    other_device: tuple[int, float] = (0, 0.0)
    """(events, seconds) of device work of no module outside compiles: transfers of a program's inputs
    and outputs, eager copies."""


def profile(
    trace: Trace, dump: Dump | None = None, chip: Chip | None = None, step_function: str | None = None
) -> ProfileReport:
    """Op times, steps, device time per function and compiles of `trace`. Each op gets its cost row
    from the module of `dump` (the same run's) with its module id, else from the HLO the trace embeds
    (printed by jaxlib, when jax is installed; otherwise a note says so)."""
    annotated = [e for e in trace.events if "hlo_module" in e.stats]
    windows = [(e.start_ns, e.start_ns + e.duration_ns) for e in trace.events if e.name in COMPILE_EVENTS]
    jit, tuning, other = _split_autotuning(trace.events, annotated, dump, windows)
    op_events = [e for e in jit if "hlo_op" in e.stats]
    launched = _launch_times(trace.events, op_events)
    steps, source = _steps(trace.events, op_events, launched, step_function)
    skipped: list[SkippedFile] = []
    sequences = _thunk_sequences(dump, {_label(e) for e in op_events}, skipped) if dump is not None else {}
    placed, unplaced = _place(op_events, sequences, dump is not None)
    step_of = _step_index(steps, op_events, launched if source == "step markers" else {})
    _fill_steps(steps, op_events, step_of)
    labels = {_label(e) for e in op_events}
    notes: list[str] = []
    if dump is not None:
        costs = _dump_costs(dump, labels, chip, skipped)
    else:
        costs = {label: _op_costs(m, chip) for label, m in _embedded_modules(trace, labels, notes).items()}
    busy = sum(s.busy_seconds for s in steps)
    ops = _per_module_run(
        [
            _op_time(key, events, steps, busy, step_of, costs.get(key[0], {}))
            for key, events in _by_op(op_events, placed).items()
        ]
    )
    known = any(op.lost_seconds is not None for op in ops)
    ops.sort(key=lambda op: -((op.lost_seconds or 0.0) if known else op.total_seconds))
    hlo = ("dump" if dump is not None else "embedded in the trace") if costs else None
    tuned = {id(e) for e in tuning}
    return ProfileReport(
        [str(p) for p in trace.paths],
        steps,
        source,
        ops,
        _with_modules(
            trace_compiles(trace.events, lambda e: id(e) in tuned, lambda t: _step_at(steps, t)), op_events, launched
        ),
        sorted(costs),
        op_events,
        chip,
        hlo,
        notes,
        skipped,
        functions=_function_times(op_events, steps, step_of),
        placed=(sum(placed.get(id(e)) is not None for e in op_events), len(op_events)),
        unplaced=unplaced,
        autotuning=_autotuning(tuning),
        other_device=(len(other), sum(e.duration_ns for e in other) / 1e9),
    )


def _with_modules(
    compiles: list[CompileEvent], op_events: list[TraceEvent], launched: dict[int, tuple[str, float]]
) -> list[CompileEvent]:
    """Each compile with the module it made: its function's first module to run (be launched) after it."""
    runs: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for event in op_events:
        if isinstance(event.stats.get("program_id"), int):
            at = launched[id(event)][1] if id(event) in launched else event.start_ns
            runs[str(event.stats["hlo_module"])].append((at, _label(event)))
    for found in runs.values():
        found.sort()
    for event in compiles:
        after = runs.get(event.function or "", [])
        index = bisect.bisect_left(after, ((event.start_seconds + event.seconds) * 1e9, ""))
        event.module = after[index][1] if index < len(after) else None
    return compiles


def _split_autotuning(
    events: list[TraceEvent], annotated: list[TraceEvent], dump: Dump | None, windows: list[tuple[float, float]]
) -> tuple[list[TraceEvent], list[TraceEvent], list[TraceEvent]]:
    """(events of compiled functions, autotuning's device work, other device work). A function's events
    carry its `program_id`, or (a trace without module ids) a module name the dump has, or any name when
    neither tells; autotuning's carry a fusion's name, or no module at all while a compile runs."""
    with_ids = any("program_id" in e.stats for e in annotated)
    dumped: set[str | None] = {m.name for m in dump.modules} if dump is not None else set()
    jit: list[TraceEvent] = []
    tuning: list[TraceEvent] = []
    other: list[TraceEvent] = []
    for event in annotated:
        if "program_id" in event.stats or str(event.stats["hlo_module"]) in dumped or not (with_ids or dumped):
            jit.append(event)
        elif event.plane.startswith("/device"):
            tuning.append(event)
    starts = sorted(windows)
    for event in events:
        if event.plane.startswith("/device") and "hlo_module" not in event.stats and "program_id" not in event.stats:
            at = bisect.bisect_right(starts, (event.start_ns, float("inf"))) - 1
            if at >= 0 and event.start_ns <= starts[at][1]:
                tuning.append(event)
            else:
                other.append(event)
    return jit, sorted(tuning, key=lambda e: e.start_ns), other


def _autotuning(tuning: list[TraceEvent]) -> Autotuning | None:
    if not tuning:
        return None
    per: dict[str, list[float]] = defaultdict(list)
    for event in tuning:
        per[str(event.stats.get("hlo_module") or "(unnamed)")].append(event.duration_ns / 1e9)
    fusions = sorted(((name, len(s), sum(s)) for name, s in per.items()), key=lambda f: -f[2])
    return Autotuning(len(tuning), sum(e.duration_ns for e in tuning) / 1e9, fusions)


def _launch_times(events: list[TraceEvent], op_events: list[TraceEvent]) -> dict[int, tuple[str, float]]:
    """id(device event) -> (host thread, time) of the host call that launched it (same `correlation_id`)."""
    device = [e for e in op_events if e.plane.startswith("/device")]
    wanted = {e.stats["correlation_id"] for e in device if "correlation_id" in e.stats}
    if not wanted:
        return {}
    host: dict[StatValue, tuple[str, float]] = {}
    for event in events:
        corr = event.stats.get("correlation_id")
        if corr in wanted and not event.plane.startswith("/device") and corr not in host:
            host[corr] = (event.line, event.start_ns)
    return {id(e): host[e.stats["correlation_id"]] for e in op_events if e.stats.get("correlation_id") in host}


def _steps(
    events: list[TraceEvent],
    op_events: list[TraceEvent],
    launched: dict[int, tuple[str, float]],
    step_function: str | None,
) -> tuple[list[Step], str]:
    """The step markers' spans, else one step per execution of the step function."""
    marked: dict[int, tuple[float, float]] = {}
    for event in events:
        number = event.stats.get("step_num")
        if isinstance(number, int) or (isinstance(number, str) and number.isdigit()):
            start, end = marked.get(int(number), (event.start_ns, event.start_ns + event.duration_ns))
            marked[int(number)] = (min(start, event.start_ns), max(end, event.start_ns + event.duration_ns))
    if marked and step_function is None:
        return [Step(n, s / 1e9, (e - s) / 1e9) for n, (s, e) in sorted(marked.items())], "step markers"
    device_time: dict[str, float] = defaultdict(float)
    for event in op_events:
        device_time[str(event.stats["hlo_module"])] += event.duration_ns
    if step_function is not None and step_function not in device_time:
        known = ", ".join(sorted(device_time)) or "none"
        raise UsageError("$step_function " + literal(f"{step_function}: no kernel of it in the trace; it has: {known}"))
    if not device_time:
        return [], "none"
    function = step_function or max(device_time, key=device_time.__getitem__)  # most_common(1)[0][0]
    how = "named by --step-function" if step_function else "the function with the most device time"
    spans = sorted(_executions([e for e in op_events if e.stats["hlo_module"] == function], events, launched))
    steps = [Step(n, s / 1e9, (e - s) / 1e9) for n, (s, e) in enumerate(spans)]
    return steps, f"executions of {function}, {how}"


def _executions(
    function_events: list[TraceEvent], events: list[TraceEvent], launched: dict[int, tuple[str, float]]
) -> list[tuple[float, float]]:
    """(start, end) of each execution of one function: its events grouped by `run_id` (theirs, or that
    of the host `...Execute` event around the call that launched them: PjRt's `run_id` stat)."""
    runs: dict[str, list[tuple[float, float, StatValue]]] = defaultdict(list)
    for event in events:
        if "run_id" in event.stats and not event.plane.startswith("/device"):
            runs[event.line].append((event.start_ns, event.start_ns + event.duration_ns, event.stats["run_id"]))
    starts = {line: [r[0] for r in spans] for line, spans in runs.items()}
    grouped: dict[tuple[str, StatValue | tuple[StatValue, float]], list[TraceEvent]] = defaultdict(list)
    for event in function_events:
        run: StatValue | tuple[StatValue, float] = event.stats.get("run_id")
        if run is None and id(event) in launched:
            line, at = launched[id(event)]
            index = bisect.bisect_right(starts.get(line, []), at) - 1
            if index >= 0 and at <= runs[line][index][1]:
                run = (runs[line][index][2], runs[line][index][0])
        grouped[(_label(event), run)].append(event)
    return [(min(e.start_ns for e in g), max(e.start_ns + e.duration_ns for e in g)) for g in grouped.values()]


def _step_at(steps: list[Step], seconds: float) -> int | None:
    started = [s for s in steps if s.start_seconds <= seconds]
    return started[-1].number if started else None


def _step_index(
    steps: list[Step], op_events: list[TraceEvent], launched: dict[int, tuple[str, float]]
) -> dict[int, int]:
    """id(op event) -> index in `steps` of the step it belongs to: launched during it (step markers are
    host spans), else run during it (steps that are executions are spans of device time)."""
    starts = [s.start_seconds * 1e9 for s in steps]
    found: dict[int, int] = {}
    for event in op_events:
        at = launched[id(event)][1] if id(event) in launched else event.start_ns
        index = bisect.bisect_right(starts, at) - 1
        if index >= 0 and at <= starts[index] + steps[index].seconds * 1e9:
            found[id(event)] = index
        elif index >= 0 and not launched:  # an execution's own span holds its events; markers may end early
            found[id(event)] = index
    return found


def _fill_steps(steps: list[Step], op_events: list[TraceEvent], step_of: dict[int, int]) -> None:
    """Each step's device-busy time (the union of its kernels' spans), idle gaps and kernel count."""
    spans: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for event in op_events:
        if id(event) in step_of:
            spans[step_of[id(event)]].append((event.start_ns, event.start_ns + event.duration_ns))
    for index, intervals in spans.items():
        intervals.sort()
        busy, reach = 0.0, intervals[0][0]
        for start, end in intervals:
            busy += max(0.0, end - max(start, reach))
            reach = max(reach, end)
        steps[index].busy_seconds = busy / 1e9
        steps[index].idle_seconds = (reach - intervals[0][0] - busy) / 1e9
        steps[index].kernels = len(intervals)


def _function_times(op_events: list[TraceEvent], steps: list[Step], step_of: dict[int, int]) -> list[FunctionTime]:
    per: dict[str, list[TraceEvent]] = defaultdict(list)
    for event in op_events:
        per[str(event.stats["hlo_module"])].append(event)
    found: list[FunctionTime] = []
    for function, events in per.items():
        per_step = [0.0] * len(steps)
        for event in events:
            if id(event) in step_of:
                per_step[step_of[id(event)]] += event.duration_ns / 1e9
        found.append(
            FunctionTime(
                function,
                len({_label(e) for e in events}),
                len(events),
                sum(e.duration_ns for e in events) / 1e9,
                per_step,
            )
        )
    return sorted(found, key=lambda f: -f.seconds)


def _label(event: TraceEvent) -> str:
    program = event.stats.get("program_id")
    name = str(event.stats["hlo_module"])
    return _module_label(program, name) if isinstance(program, int) else name


def _module_label(program_id: int, name: str) -> str:
    """The trace's program_id is the dump's module id: label as `DumpModule.label` does, without the host."""
    return f"module_{program_id:04d}.{name}"


def _op_name(event: TraceEvent) -> str:
    """The op an annotation names: the last `::` segment of `hlo_op`."""
    return str(event.stats["hlo_op"]).rpartition("::")[2]


def _by_op(op_events: list[TraceEvent], placed: dict[int, str | None]) -> dict[tuple[str, str, str], list[TraceEvent]]:
    """Events by (module label, function, op); an event not placed stays on its annotation."""
    grouped: dict[tuple[str, str, str], list[TraceEvent]] = defaultdict(list)
    for event in op_events:
        op = placed.get(id(event)) or _op_name(event)
        grouped[(_label(event), str(event.stats["hlo_module"]), op)].append(event)
    return grouped


# --- command buffers: kernels placed on the op that launched them ------------------------------------------


def _thunk_sequences(dump: Dump, labels: set[str], skipped: list[SkippedFile]) -> dict[str, ThunkSequence]:
    """The thunk sequence of each traced module the dump has; unreadable files are added to `skipped`."""
    found: dict[str, ThunkSequence] = {}
    for module in _traced_modules(dump, labels):
        sequence, metadata = thunk_files(module)
        if sequence is None:
            continue
        try:
            found[_dump_label(module)] = read_thunk_sequence(sequence, metadata)
        except XlaInspectError as error:
            skipped.append(SkippedFile.of(Path(sequence), error))
    return found


def _place(
    op_events: list[TraceEvent], sequences: dict[str, ThunkSequence], with_dump: bool
) -> tuple[dict[int, str | None], list[Unplaced]]:
    """id(event) -> the HLO op it ran for (None: not placed), and the unplaced kernels with the reason."""
    placed: dict[int, str | None] = {}
    launches: dict[tuple[str, str, str, StatValue], list[TraceEvent]] = defaultdict(list)
    for event in op_events:
        op = _op_name(event)
        if op.startswith(COMMAND_BUFFER):
            launches[(_label(event), op, event.plane, event.stats.get("correlation_id"))].append(event)
        else:
            placed[id(event)] = op
    failed: dict[tuple[str, str, str, str | None], list[TraceEvent]] = defaultdict(list)
    for (label, buffer, _, _), events in launches.items():
        events.sort(key=lambda e: (e.stats.get("cuda_graph_node_id", 0), e.start_ns))
        sequence = sequences.get(label)
        commands = sequence.command_buffers.get(buffer) if sequence is not None else None
        if commands is None:
            reason = (
                "no --dump: the dump's thunk sequence places a command buffer's kernels"
                if not with_dump
                else f"the dump has no thunk sequence of {label}"
                if sequence is None
                else f"{buffer} is not a command buffer of {label}'s thunk sequence"
            )
            for event in events:
                placed[id(event)] = None
                failed[(label, buffer, event.name, reason)].append(event)
            continue
        for event, op, reason in _place_launch(events, commands, buffer):
            placed[id(event)] = op
            if op is None:
                failed[(label, buffer, event.name, reason)].append(event)
    unplaced = [
        Unplaced(label, buffer, kernel, len(events), sum(e.duration_ns for e in events) / 1e9, reason)
        for (label, buffer, kernel, reason), events in failed.items()
    ]
    return placed, sorted(unplaced, key=lambda u: -u.seconds)


def _place_launch(
    events: list[TraceEvent], commands: list[Thunk], buffer: str
) -> Iterator[tuple[TraceEvent, str | None, str | None]]:
    """(event, op or None, reason) for one launch of a command buffer, its events in graph order.

    A kernel a kernel command names goes to the k-th command of that name at its k-th run. The others
    (copies, memsets, library kernels) go to the buffer's commands of their kind: the one there is, or
    in turn where their count is a multiple of the commands'; else to the one command of their kind
    between the commands of the named kernels around them in graph order."""
    at = _named_commands(events, commands)
    for event, command in zip(events, at):
        if command is not None:
            yield event, commands[command].op, None
    rest: dict[str, list[int]] = defaultdict(list)
    for position, event in enumerate(events):
        if at[position] is None:
            rest[_work_kind(event)].append(position)
    for kind, positions in rest.items():
        candidates = [c for c in commands if c.kernel is None and _command_kind(c) == kind]
        if len(candidates) == 1 or (candidates and len(positions) % len(candidates) == 0):
            for index, position in enumerate(positions):
                yield events[position], candidates[index % len(candidates)].op, None
            continue
        for position in positions:
            command = _between(at, position, commands, kind)
            reason = (
                f"no {kind} command in {buffer}"
                if not candidates
                else f"{len(positions)} {kind} events for {len(candidates)} {kind} commands of {buffer}, "
                "and not one between its neighbours"
            )
            yield events[position], command.op if command else None, None if command else reason


def _named_commands(events: list[TraceEvent], commands: list[Thunk]) -> list[int | None]:
    """The index of the command each event ran, where a kernel command names its kernel: the k-th run of
    a kernel is the k-th command of that name (in turn, when a loop in the graph runs them again)."""
    by_kernel: dict[str, list[int]] = defaultdict(list)
    for index, command in enumerate(commands):
        if command.kernel:
            by_kernel[command.kernel].append(index)
    seen: Counter[str] = Counter()
    at: list[int | None] = []
    for event in events:
        same = by_kernel.get(event.name)
        at.append(same[seen[event.name] % len(same)] if same else None)
        seen[event.name] += 1
    return at


def _between(at: list[int | None], position: int, commands: list[Thunk], kind: str) -> Thunk | None:
    """The one command of `kind` between the commands of the named kernels before and after `position`."""
    before = next((index for index in reversed(at[:position]) if index is not None), -1)
    after = next((index for index in at[position + 1 :] if index is not None), len(commands))
    if after <= before:  # the graph's loop started again: up to the end
        after = len(commands)
    found = [c for c in commands[before + 1 : after] if c.kernel is None and _command_kind(c) == kind]
    return found[0] if len(found) == 1 else None


def _work_kind(event: TraceEvent) -> str:
    """`copy`, `memset` or `library` for a kernel no kernel thunk names (the CUDA driver runs a small copy
    as a `memcpy32_post` kernel inside a graph; cuDNN and cuBLAS name their own kernels)."""
    name = event.name.lower()
    if "memcpy_details" in event.stats or name.startswith("memcpy"):
        return "copy"
    if "Memset_details" in event.stats or name.startswith("memset"):
        return "memset"
    return "library"


def _command_kind(command: Thunk) -> str | None:
    """What a command without a kernel of its own runs: None for control flow (nothing of its own)."""
    if command.kind in _CONTROL_KINDS or command.kind in KERNEL_KINDS:
        return None
    if "Copy" in command.kind or "Memcpy" in command.kind:
        return "copy"
    if "Memset" in command.kind or "Memzero" in command.kind:
        return "memset"
    return "library"


def only_function(report: ProfileReport, function: str | None) -> ProfileReport:
    """The report narrowed to one function; a name that matches nothing is an input error."""
    if function is None:
        return report
    ops = [op for op in report.ops if op.function == function]
    compiles = [c for c in report.compiles if c.function == function]
    if not ops and not compiles:
        known = sorted({op.function for op in report.ops} | {c.function or "?" for c in report.compiles})
        raise UsageError(
            "$function " + literal(f"{function}: no op or compile of it in the trace; it has: {', '.join(known)}")
        )
    events = [e for e in report.op_events if e.stats.get("hlo_module") == function]
    functions = [f for f in report.functions if f.function == function]
    unplaced = [u for u in report.unplaced if u.module.rpartition(".")[2] == function or u.module == function]
    return replace(report, ops=ops, compiles=compiles, op_events=events, functions=functions, unplaced=unplaced)


def compiles_after(report: ProfileReport, step: int) -> list[CompileEvent]:
    """The compiles that fell in a step after `step`: the gate of `--max-compiles-after-step`."""
    return [c for c in report.compiles if c.step is not None and c.step > step]


def compile_seconds(report: ProfileReport) -> dict[str, list[float]]:
    """Measured seconds of each function's compiles, in trace order (to pair with a dump's modules)."""
    seconds: dict[str, list[float]] = defaultdict(list)
    for event in report.compiles:
        seconds[event.function or "?"].append(event.seconds)
    return dict(seconds)


def paired_compile_seconds(
    counts: dict[str, int], report: ProfileReport
) -> tuple[dict[str, tuple[float | None, ...]], list[str]]:
    """Per function of a dump (`counts`: its compiles), the measured seconds of the trace's compiles paired
    in order with its modules (None past the trace's), and a sentence for each function whose counts
    differ: a trace covers a window of the run, so compiles before or after it are not in it."""
    measured = compile_seconds(report)
    paired: dict[str, tuple[float | None, ...]] = {}
    unpaired: list[str] = []
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


def _dump_costs(
    dump: Dump, labels: set[str], chip: Chip | None, skipped: list[SkippedFile]
) -> dict[str, dict[str, OpCost]]:
    """The op costs of each traced label's after-optimizations module in the dump, by the per-module
    runner (answered from the results cache while its file is unchanged); files that do not parse are
    added to `skipped`."""
    found = analyse_each(
        _traced_modules(dump, labels),
        lambda module: _op_costs(module.module("after"), chip),
        inputs=DumpModule.hlo_path,
        key=lambda _: f"profile-costs:{chip!r}",  # the chip by every figure: `--peak-flops` chips are `custom`
        blame=DumpModule.hlo_path,
        advance=lambda _: None,
    )
    skipped += found.skipped
    return {_dump_label(module): costs for module, costs in zip(found.modules, found.results)}


def _op_costs(module: Module, chip: Chip | None) -> dict[str, OpCost]:
    return {row.name: row for row in module_cost(module, chip).ops}


def _embedded_modules(trace: Trace, labels: set[str], notes: list[str]) -> dict[str, Module]:
    """The HLO modules the trace embeds (XLA's optimized HLO, with the names the op events carry)."""
    modules: dict[str, Module] = {}
    for program_id, (name, proto) in sorted(trace.hlo_protos.items()):
        label = _module_label(program_id, name)
        if label not in labels:
            continue
        try:
            modules[label] = parse_hlo(embedded_hlo_text(proto), label, runner=OWNED)[0]
        except XlaInspectError as error:
            notes.append(f"{label}: {error}")
            break  # the same reason (no jax) holds for every module
    return modules


def _traced_modules(dump: Dump, labels: set[str]) -> list[DumpModule]:
    return [m for m in dump.modules if _dump_label(m) in labels]


def _dump_label(module: DumpModule) -> str:
    """The label `_label` gives an op event of this module (the host prefix is not in the trace)."""
    return module.label.rpartition("/")[2]


def _op_time(
    key: tuple[str, str, str],
    events: list[TraceEvent],
    steps: list[Step],
    busy: float,
    step_of: dict[int, int],
    costs: dict[str, OpCost],
) -> OpTime:
    label, function, name = key
    seconds = [e.duration_ns / 1e9 for e in events]
    total = sum(seconds)
    ran_in = {step_of[id(e)] for e in events if id(e) in step_of}
    in_steps = sum(e.duration_ns for e in events if id(e) in step_of) / 1e9
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
        in_steps / busy if busy else None,
        sum(id(e) in step_of for e in events) / len(ran_in) if ran_in else None,
    )
    cost = costs.get(name)
    return measured if cost is None else _with_cost(measured, cost)


def _module_runs(ops: list[OpTime]) -> dict[str, int]:
    """How many times each module ran in the trace: the kernels per execution most of its ops show. XLA
    launches one kernel per execution of a fusion or op; a library call (cuDNN, cuBLAS) may launch
    several, so its own count over its executions is no measure of the runs."""
    ratios: dict[str, Counter[int]] = defaultdict(Counter)
    for op in ops:
        if op.executions:
            ratios[op.module][round(op.count / op.executions)] += 1
    return {module: counts.most_common(1)[0][0] for module, counts in ratios.items()}


def _per_module_run(ops: list[OpTime]) -> list[OpTime]:
    """Efficiency and time lost over the op's executions in the trace (its module's runs times its
    executions per run), not over its kernels: a cuDNN convolution of several kernels is one execution."""
    runs = _module_runs(ops)
    return [_over_executions(op, runs[op.module] * op.executions) if op.executions else op for op in ops]


def _over_executions(op: OpTime, ran: float) -> OpTime:
    """`op` with its measured time per execution (`ran` executions in the trace) beside its cost."""
    per_run = op.total_seconds / ran
    moved, roofline = op.bytes_accessed, op.roofline_seconds
    return replace(
        op,
        measured_bytes_per_second=moved / per_run if moved is not None and per_run > 0 else None,
        efficiency=roofline / per_run if roofline is not None and per_run > 0 else None,
        lost_seconds=op.total_seconds - roofline * ran if roofline is not None else None,
    )


def _with_cost(measured: OpTime, cost: OpCost) -> OpTime:
    """The op's measured time beside one execution's cost: `cost` gives figures per call of the module
    (an op in a loop body runs its trip count times a call)."""
    runs = cost.executions
    moved = round((cost.padded_bytes_read + cost.padded_bytes_written) / runs) if runs else None
    roofline = cost.roofline_seconds / runs if cost.roofline_seconds is not None and runs else None
    return replace(
        measured,
        kind=cost.kind,
        executions=runs,
        flops=cost.flops_per_execution,
        bytes_accessed=moved,
        roofline_seconds=roofline,
        bound=cost.bound,
        op_name=cost.op_name,
        source=cost.source,
    )
