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

from dataclasses import replace

import numpy as np

from xlainspect.analysis.chips import Chip
from xlainspect.analysis.cost import OpCost
from xlainspect.analysis.profile.breakdown import (
    DISPATCH,
    SpanColumns,
    device_kind,
    measure_steps,
    summary,
    transfer_event,
)
from xlainspect.analysis.profile.by_source import user_files
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
from xlainspect.analysis.profile.details import with_details
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
from xlainspect.analysis.profile.ops import OpEvents, distinct_rows, grouped, op_events
from xlainspect.analysis.profile.placement import place, thunk_sequences
from xlainspect.analysis.profile.steps import (
    autotuning_work,
    device_sums,
    executions,
    find_steps,
    function_sums,
    function_times,
    launch_times,
    split_autotuning,
    spread,
    steady_steps,
    step_at,
    step_index,
    step_markers,
)
from xlainspect.dump.directory import Dump
from xlainspect.dump.events import Events, Ints, TraceEvent
from xlainspect.dump.module import SkippedFile
from xlainspect.dump.xplane import Trace
from xlainspect.errors import UsageError, literal
from xlainspect.hlo.opcodes import name_opcode

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
    events = trace.events
    said = said_events(events)
    windows = [(e.start_ns, e.start_ns + e.duration_ns) for e in said if e.name in COMPILE_EVENTS]
    jit, tuning, other = split_autotuning(events, dump, windows)
    ops = op_events(events, np.flatnonzero(jit & events.has("hlo_op")))
    launch_line = launch_times(events, ops)
    runs = executions(events, ops, launch_line)
    marked = step_markers(said)
    steps, source, function = find_steps(marked, ops, runs, step_function)
    skipped: list[SkippedFile] = []
    labels = ops.labels()
    sequences = thunk_sequences(dump, labels, skipped) if dump is not None else {}
    placed, unplaced = place(events, ops, sequences, dump is not None)
    ops.op = np.where(placed >= 0, placed, ops.annotated).astype(np.int32)
    ops.step = step_index(steps, ops, source == "step markers")
    notes: list[ProfileNote] = []
    if dump is not None:
        costs = dump_costs(dump, labels, chip, skipped)
    else:
        costs = {name: op_costs(m, chip) for name, m in embedded_modules(trace, labels, notes).items()}
    device = _device_spans(ops, costs, other)
    device["launch"] = (runs.first[runs.size > 1], runs.last[runs.size > 1])
    files = user_files(row.source for rows in costs.values() for row in rows.values() if row.source)
    measure_steps(steps, events, said, marked, device, np.sort(ops.start_ns), tuning, files)
    ops.steady = steady_steps(steps, ops)
    tuned = {e.row for e in tuning}
    report = ProfileReport(
        [str(p) for p in trace.paths],
        steps,
        source,
        _op_times(ops, steps, costs, chip.launch_seconds if chip is not None else 0.0),
        with_modules(trace_compiles(said, lambda e: e.row in tuned, lambda t: step_at(steps, t)), ops),
        sorted(costs),
        ops,
        chip,
        ("dump" if dump is not None else "trace") if costs else None,
        notes,
        skipped,
        functions=function_times(ops, steps),
        placed=(int((placed >= 0).sum()), len(ops)),
        unplaced=unplaced,
        autotuning=autotuning_work(tuning),
        other_device=(len(other), sum(e.duration_ns for e in other) / 1e9),
        step_summary=summary(steps, lambda chosen: function or _busiest(ops, chosen, steps), marked),
        step_function=function,
        step_named=step_function is not None,
    )
    return with_details(report, trace)


def said_events(events: Events) -> list[TraceEvent]:
    """The events the analyses read one by one, as objects: step markers, compiles and everything that
    ran during them, jax's dispatches and lowerings, host-to-device transfers. The rest (op events, the
    Python tracer's frames, flows' ends: nearly all of a host's events) stay columns."""
    names = np.array(
        [n in COMPILE_EVENTS or n == LOWERING or n.startswith(DISPATCH) or transfer_event(n) for n in events.strings],
        np.bool_,
    )
    wanted = names[events.name] | events.has("step_num") | events.has("module")
    for compiling in np.flatnonzero(events.named(COMPILE_EVENTS)).tolist():
        start, end = events.start_ns[compiling], events.end_ns[compiling]
        wanted[np.searchsorted(events.start_ns, start, "left") : np.searchsorted(events.start_ns, end, "right")] = True
    return events.select(np.flatnonzero(wanted))


def op_kinds(ops: OpEvents, costs: dict[str, dict[str, OpCost]]) -> tuple[list[str], Ints]:
    """The kinds of the op events for the step breakdown (`breakdown.device_kind`: a cost row's kind where
    the dump has one, else the opcode the annotation names), and each event's index among them."""
    distinct, back = distinct_rows([ops.label, ops.op, ops.annotated, ops.name, ops.copies])
    kinds: list[str] = []
    for label, op, annotated, name, copies in distinct:
        cost = costs.get(ops.text(label), {}).get(ops.text(op))
        kind = cost.kind if cost is not None else name_opcode(ops.text(annotated))
        kinds.append(device_kind(ops.text(name), bool(copies), kind))
    distinct = sorted(set(kinds))
    index = np.array([distinct.index(kind) for kind in kinds], np.int64)
    return distinct, index[back] if len(back) else back


def _device_spans(
    ops: OpEvents, costs: dict[str, dict[str, OpCost]], other: list[TraceEvent]
) -> dict[str, SpanColumns]:
    """The program's device activity by kind: its op events, and device work of no function (a memcpy)."""
    kinds, of_op = op_kinds(ops, costs)
    found: dict[str, SpanColumns] = {}
    for k, kind in enumerate(kinds):
        mine = of_op == k
        found[kind] = (ops.start_ns[mine], ops.end_ns[mine])
    for kind in {device_kind(e.name, _copies(e), None) for e in other}:
        mine = [e for e in other if device_kind(e.name, _copies(e), None) == kind]
        starts, ends = found.get(kind, (np.zeros(0), np.zeros(0)))
        found[kind] = (
            np.concatenate([starts, [e.start_ns for e in mine]]),
            np.concatenate([ends, [e.end_ns for e in mine]]),
        )
    return found


def _copies(event: TraceEvent) -> bool:
    return "memcpy_details" in event.stats or "Memset_details" in event.stats


def _op_times(
    ops: OpEvents, steps: list[StepTime], costs: dict[str, dict[str, OpCost]], launch_seconds: float
) -> list[OpTime]:
    """Each op's time, in all over every device, a step one device's (over the devices that ran it) over
    the steps its module (the compiled function it is in) ran in that count (`steady_steps`); ranked by
    time lost in the run where a roofline is known, else by measured time."""
    ran_in: dict[int, int] = {}
    for label in np.unique(ops.label).tolist():
        ran_in[label] = len(np.unique(ops.steady[(ops.label == label) & (ops.steady >= 0)]))
    counted: list[int] = np.unique(ops.steady[ops.steady >= 0]).tolist()
    busy = sum(steps[k].busy_seconds for k in counted)
    order, bounds, group = grouped([ops.label, ops.function, ops.op])
    sums, ran, devices = device_sums(ops.device, ops.duration_ns, np.where(ops.steady >= 0, group, -1), len(bounds) - 1)
    rows: list[OpTime] = []
    for index, (lo, hi) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist())):
        mine = order[lo:hi]
        first = mine[0]
        key = (ops.text(int(ops.label[first])), ops.text(int(ops.function[first])), ops.text(int(ops.op[first])))
        cost = costs.get(key[0], {}).get(key[2])
        durations = ops.duration_ns[mine].tolist()
        in_steps = (ops.steady[mine] >= 0).tolist()
        module_steps = ran_in[int(ops.label[first])]
        by_device = spread(sums[index], ran[index], devices, ops.strings, module_steps)
        rows.append(op_time(key, durations, in_steps, module_steps, by_device, busy, cost, launch_seconds))
    found = per_module_run(rows)
    known = any(op.lost_seconds is not None for op in found)
    found.sort(key=lambda op: -((op.lost_seconds or 0.0) if known else op.total_seconds))
    return found


def _busiest(ops: OpEvents, chosen: list[StepTime], steps: list[StepTime]) -> str | None:
    """The function with most of the device time in the `chosen` steps: the one they run (None: none
    has most of it)."""
    picked = {id(step) for step in chosen}
    wanted = [index for index, step in enumerate(steps) if id(step) in picked]
    inside = np.isin(ops.step, wanted)
    seconds = function_sums(ops.function[inside], ops.duration_ns[inside], ops.strings)
    busiest = max(seconds, key=seconds.__getitem__, default=None)
    return busiest if busiest is not None and seconds[busiest] > sum(seconds.values()) / 2 else None


def only_function(report: ProfileReport, function: str | None) -> ProfileReport:
    """The report narrowed to one function; a name that matches nothing is an input error."""
    if function is None:
        return report
    rows = [op for op in report.ops if op.function == function]
    compiles = [c for c in report.compiles if c.function == function]
    if not rows and not compiles:
        known = sorted({op.function for op in report.ops} | {c.function or "?" for c in report.compiles})
        raise UsageError(
            "$function " + literal(f"{function}: no op or compile of it in the trace; it has: {', '.join(known)}")
        )
    ops = report.op_events
    events = ops.only(ops.function == ops.code(function)) if ops is not None else None
    functions = [f for f in report.functions if f.function == function]
    unplaced = [u for u in report.unplaced if u.module.rpartition(".")[2] == function or u.module == function]
    return replace(report, ops=rows, compiles=compiles, op_events=events, functions=functions, unplaced=unplaced)
