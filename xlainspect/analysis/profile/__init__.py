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

from collections import defaultdict
from dataclasses import replace

import numpy as np

from xlainspect.analysis.chips import Chip
from xlainspect.analysis.cost import OpCost
from xlainspect.analysis.profile.breakdown import DISPATCH, device_kind, measure_steps, summary, transfer_event
from xlainspect.analysis.profile.compiles import (
    COMPILE_EVENTS,
    LOWERING,
    CompileEvent,
    compile_seconds,
    compiles_after,
    paired_compile_seconds,
    trace_compiles,
    with_modules,
)
from xlainspect.analysis.profile.costs import dump_costs, embedded_modules, op_costs, op_time, per_module_run
from xlainspect.analysis.profile.events import by_op, event_label, op_name, op_opcode
from xlainspect.analysis.profile.model import (
    Autotuning,
    FunctionTime,
    OpTime,
    ProfileNote,
    ProfileReport,
    StepSummary,
    StepTime,
    Unplaced,
)
from xlainspect.analysis.profile.placement import place, thunk_sequences
from xlainspect.analysis.profile.steps import (
    autotuning_work,
    executions,
    find_steps,
    function_times,
    launch_times,
    split_autotuning,
    step_at,
    step_index,
    step_markers,
)
from xlainspect.dump.directory import Dump
from xlainspect.dump.events import Events, TraceEvent
from xlainspect.dump.module import SkippedFile
from xlainspect.dump.xplane import Trace
from xlainspect.errors import UsageError, literal

__all__ = [
    "Autotuning",
    "CompileEvent",
    "FunctionTime",
    "OpTime",
    "ProfileNote",
    "ProfileReport",
    "StepSummary",
    "StepTime",
    "Unplaced",
    "compile_seconds",
    "compiles_after",
    "only_function",
    "paired_compile_seconds",
    "profile",
]


def profile(
    trace: Trace,
    dump: Dump | None = None,
    chip: Chip | None = None,
    step_function: str | None = None,
) -> ProfileReport:
    """Op times, steps, device time per function and compiles of `trace`. Each op gets its cost row
    from the module of `dump` (the same run's) with its module id, else from the HLO the trace embeds
    (printed by jaxlib, when jax is installed; otherwise a note says so)."""
    everything = said_events(trace.events)
    annotated = [e for e in everything if "hlo_module" in e.stats]
    windows = [(e.start_ns, e.start_ns + e.duration_ns) for e in everything if e.name in COMPILE_EVENTS]
    jit, tuning, other = split_autotuning(everything, annotated, dump, windows)
    op_events = [e for e in jit if "hlo_op" in e.stats]
    launched = launch_times(everything, op_events)
    runs = executions(everything, op_events, launched)
    marked = step_markers(everything)
    steps, source, function = find_steps(marked, op_events, runs, step_function)
    skipped: list[SkippedFile] = []
    sequences = thunk_sequences(dump, {event_label(e) for e in op_events}, skipped) if dump is not None else {}
    placed, unplaced = place(op_events, sequences, dump is not None)
    step_of = step_index(steps, op_events, launched if source == "step markers" else {})
    labels = {event_label(e) for e in op_events}
    notes: list[ProfileNote] = []
    if dump is not None:
        costs = dump_costs(dump, labels, chip, skipped)
    else:
        costs = {name: op_costs(m, chip) for name, m in embedded_modules(trace, labels, notes).items()}

    def kind_of(event: TraceEvent) -> str:
        if "hlo_op" not in event.stats:  # device work of no function: a memcpy, a memset
            return device_kind(event, None)
        cost = costs.get(event_label(event), {}).get(placed.get(id(event)) or op_name(event), None)
        return device_kind(event, cost.kind if cost is not None else op_opcode(event))

    spans = [r.span for r in {id(r): r for r in runs.values()}.values() if len(r.events) > 1]
    measure_steps(steps, trace.events, everything, marked, [*op_events, *other], kind_of, tuning, spans)
    ops = _op_times(op_events, placed, steps, step_of, costs, chip.launch_seconds if chip is not None else 0.0)
    hlo = ("dump" if dump is not None else "trace") if costs else None
    tuned = {id(e) for e in tuning}
    return ProfileReport(
        [str(p) for p in trace.paths],
        steps,
        source,
        ops,
        with_modules(
            trace_compiles(everything, lambda e: id(e) in tuned, lambda t: step_at(steps, t)), op_events, launched
        ),
        sorted(costs),
        op_events,
        chip,
        hlo,
        notes,
        skipped,
        functions=function_times(op_events, steps, step_of),
        placed=(sum(placed.get(id(e)) is not None for e in op_events), len(op_events)),
        unplaced=unplaced,
        autotuning=autotuning_work(tuning),
        other_device=(len(other), sum(e.duration_ns for e in other) / 1e9),
        step_summary=summary(steps, lambda chosen: function or _busiest(op_events, chosen, step_of, steps), marked),
        step_function=function,
        step_named=step_function is not None,
    )


def said_events(events: Events) -> list[TraceEvent]:
    """The events the analyses read one by one, as objects: device work and op events, step markers,
    compiles and everything that ran during them, jax's dispatches and lowerings, PjRt's executions
    (`run_id`) and launches (`correlation_id`), host-to-device transfers. The rest (the Python tracer's
    frames, flows' ends: most of a host's events) stay columns; the host thread's are read step by step
    (`breakdown.HostThread`)."""
    names = np.array(
        [n in COMPILE_EVENTS or n == LOWERING or n.startswith(DISPATCH) or transfer_event(n) for n in events.strings],
        np.bool_,
    )
    wanted = names[events.name] | events.on_device()
    for stat in ("hlo_module", "hlo_op", "step_num", "run_id", "correlation_id", "module"):
        wanted |= events.has(stat)
    for compiling in np.flatnonzero(names[events.name] & events.named(COMPILE_EVENTS)).tolist():
        start, end = events.start_ns[compiling], events.end_ns[compiling]
        wanted[np.searchsorted(events.start_ns, start, "left") : np.searchsorted(events.start_ns, end, "right")] = True
    return events.select(np.flatnonzero(wanted))


def _op_times(
    op_events: list[TraceEvent],
    placed: dict[int, str | None],
    steps: list[StepTime],
    step_of: dict[int, int],
    costs: dict[str, dict[str, OpCost]],
    launch_seconds: float,
) -> list[OpTime]:
    """Each op's time, per step over the steps its module (the compiled function it is in) ran in; ranked
    by time lost in the run where a roofline is known, else by measured time."""
    ran_in: dict[str, set[int]] = defaultdict(set)
    for event in op_events:
        if id(event) in step_of:
            ran_in[event_label(event)].add(step_of[id(event)])
    busy = sum(s.busy_seconds for s in steps)
    ops = per_module_run(
        [
            op_time(key, events, len(ran_in[key[0]]), busy, step_of, costs.get(key[0], {}).get(key[2]), launch_seconds)
            for key, events in by_op(op_events, placed).items()
        ]
    )
    known = any(op.lost_seconds is not None for op in ops)
    ops.sort(key=lambda op: -((op.lost_seconds or 0.0) if known else op.total_seconds))
    return ops


def _busiest(
    op_events: list[TraceEvent], chosen: list[StepTime], step_of: dict[int, int], steps: list[StepTime]
) -> str | None:
    """The function with most of the device time in the `chosen` steps: the one they run (None: none
    has most of it)."""
    wanted = {index for index, step in enumerate(steps) if step in chosen}
    seconds: dict[str, float] = defaultdict(float)
    for event in op_events:
        if step_of.get(id(event), -1) in wanted:
            seconds[str(event.stats["hlo_module"])] += event.duration_ns
    busiest = max(seconds, key=seconds.__getitem__, default=None)
    return busiest if busiest is not None and seconds[busiest] > sum(seconds.values()) / 2 else None


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
