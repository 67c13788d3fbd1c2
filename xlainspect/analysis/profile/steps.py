"""Steps, the device time in them, and autotuning's device work kept apart from the program's."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from xlainspect.analysis.profile.model import Autotuning, FunctionTime, StepSource, StepTime
from xlainspect.analysis.profile.ops import NONE, OpEvents, grouped, or_none
from xlainspect.dump.directory import Dump
from xlainspect.dump.events import Codes, Events, Floats, Ints, Mask, TraceEvent
from xlainspect.errors import UsageError, literal


def split_autotuning(
    events: Events, dump: Dump | None, windows: list[tuple[float, float]]
) -> tuple[Mask, list[TraceEvent], list[TraceEvent]]:
    """(events of compiled functions, autotuning's device work, other device work). A function's events
    carry its `program_id`, or (a trace without module ids) a module name the dump has, or any name when
    neither tells; autotuning's carry a fusion's name, or no module at all while a compile runs."""
    annotated, program = events.has("hlo_module"), events.has("program_id")
    with_ids = bool((annotated & program).any())
    dumped = {m.name for m in dump.modules if m.name is not None} if dump is not None else set[str]()
    named = np.isin(events.codes("hlo_module"), [c for c in map(events.code, dumped) if c >= 0])
    jit = annotated & (program | named | (not (with_ids or dumped)))
    device = events.on_device()
    loose = device & ~annotated & ~program
    starts = np.array(sorted(windows)).reshape(-1, 2)
    rows = np.flatnonzero(loose)
    at = np.searchsorted(starts[:, 0], events.start_ns[rows], "right") - 1
    compiling = (at >= 0) & (events.start_ns[rows] <= starts[np.maximum(at, 0), 1]) if len(starts) else at < -1
    tuning = np.union1d(np.flatnonzero(annotated & ~jit & device), rows[compiling])
    return jit, events.select(tuning), events.select(rows[~compiling])


def autotuning_work(tuning: list[TraceEvent]) -> Autotuning | None:
    if not tuning:
        return None
    per: dict[str, list[float]] = defaultdict(list)
    for event in tuning:
        per[str(event.stats.get("hlo_module") or "(unnamed)")].append(event.duration_ns / 1e9)
    fusions = sorted(((name, len(s), sum(s)) for name, s in per.items()), key=lambda f: -f[2])
    return Autotuning(len(tuning), sum(e.duration_ns for e in tuning) / 1e9, fusions)


def launch_times(events: Events, ops: OpEvents) -> Codes:
    """Fill `ops.launched` with the time of the host call that launched each (same `correlation_id`);
    returns the line (a code of the trace's strings) it was launched from, -1 where unknown."""
    line = np.full(len(ops), -1, np.int32)
    device = events.on_device()
    correlation = or_none(events, "correlation_id", ops.rows)
    wanted = np.unique(correlation[device[ops.rows] & (correlation != NONE)])
    if not len(wanted):
        return line
    carriers = events.carriers("correlation_id")
    values, where = events.ints_at("correlation_id", carriers)
    keep = where & ~device[carriers] & np.isin(values, wanted)
    host, values = carriers[keep], values[keep]
    found, first = np.unique(values, return_index=True)  # rows by start: the first of each
    at = np.minimum(np.searchsorted(found, correlation), max(len(found) - 1, 0))
    known = (found[at] == correlation) & (correlation != NONE) if len(found) else np.zeros(len(ops), bool)
    launcher = host[first[at[known]]]
    ops.launched[known] = events.start_ns[launcher]
    line[known] = events.line_codes()[events.thread[launcher]]
    return line


@dataclass
class Executions:
    """Executions of compiled modules: each op event's (`of`), and each one's label, the start of the host
    `...Execute` event around its launch (PjRt's, with the `run_id` stat; NaN: unknown) and its device
    span. Numbered by their first op event."""

    of: Ints
    label: Codes
    host_start: Floats
    first: Floats
    last: Floats
    size: Ints

    @property
    def start(self) -> Floats:
        """The host's start where known, else the device's: a step of executions begins at the launch."""
        return np.where(np.isnan(self.host_start), self.first, np.fmin(self.host_start, self.first))


def executions(events: Events, ops: OpEvents, launch_line: Codes) -> Executions:
    """The op events of one module grouped by `run_id` (theirs, or that of the host `...Execute` event
    around the call that launched them: PjRt's `run_id` stat). An event whose run is not known is an
    execution of its own."""
    carriers = events.carriers("run_id")
    values, where = events.ints_at("run_id", carriers)
    keep = where & ~events.on_device()[carriers] & ~events.has("hlo_op")[carriers]
    host, host_runs = carriers[keep], values[keep]
    run_ids, first = np.unique(host_runs, return_index=True)
    first_start = events.start_ns[host[first]]
    kind = np.where(ops.run != NONE, 0, 2)
    run, extra = ops.run.copy(), np.arange(len(ops), dtype=np.int64)
    host_start = _looked_up(run_ids, first_start, ops.run)
    lines = events.line_codes()[events.thread[host]]
    for line in np.unique(launch_line[(kind == 2) & (launch_line >= 0)]).tolist():
        mine = np.flatnonzero((kind == 2) & (launch_line == line))
        on_line, line_runs = host[lines == line], host_runs[lines == line]
        index = np.searchsorted(events.start_ns[on_line], ops.launched[mine], "right") - 1
        inside = (index >= 0) & (ops.launched[mine] <= events.end_ns[on_line[np.maximum(index, 0)]])
        mine, around = mine[inside], on_line[index[inside]]
        kind[mine], run[mine], host_start[mine] = 1, line_runs[index[inside]], events.start_ns[around]
        extra[mine] = events.start_ns[around].view(np.int64)
    extra[kind == 0] = 0
    order, bounds, group = grouped([ops.label, kind, run, extra])
    first_of = order[bounds[:-1]]
    return Executions(
        group,
        ops.label[first_of],
        host_start[first_of],
        np.minimum.reduceat(ops.start_ns[order], bounds[:-1]) if len(ops) else np.zeros(0),
        np.maximum.reduceat(ops.end_ns[order], bounds[:-1]) if len(ops) else np.zeros(0),
        np.diff(bounds),
    )


def _looked_up(keys: Ints, values: Floats, wanted: Ints) -> Floats:
    """`values` of the sorted `keys` at `wanted` (NaN where absent)."""
    if not len(keys):
        return np.full(len(wanted), np.nan)
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return np.where((keys[at] == wanted) & (wanted != NONE), values[at], np.nan)


def step_markers(events: list[TraceEvent]) -> dict[int, list[TraceEvent]]:
    """The step markers by step number: events with a `step_num` stat (`jax.profiler.StepTraceAnnotation`)."""
    marked: dict[int, list[TraceEvent]] = defaultdict(list)
    for event in events:
        number = event.stats.get("step_num")
        if isinstance(number, int) or (isinstance(number, str) and number.isdigit()):
            marked[int(number)].append(event)
    return dict(marked)


def find_steps(
    marked: dict[int, list[TraceEvent]], ops: OpEvents, runs: Executions, step_function: str | None
) -> tuple[list[StepTime], StepSource, str | None]:
    """From the start of one step marker to the start of the next (`marked`: `step_markers`; the last: to
    its end), else from one execution of the step function to the next (the last: to its end). The loop's
    work between two markers (the annotation's own entry and exit, the user's bookkeeping) is part of the
    step the user waits for: with Python's tracer on, a marker's span alone was 2% shorter than the step
    the program measured with time.perf_counter around it. Also what the steps are, and the step function
    where steps are its executions."""
    if marked and step_function is None:
        spans = sorted(
            (n, min(e.start_ns for e in m), max(e.start_ns + e.duration_ns for e in m)) for n, m in marked.items()
        )
        ends = [max(end, following) for (_, _, end), (_, following, _) in zip(spans, spans[1:])] + [spans[-1][2]]
        return [StepTime(n, s / 1e9, (e - s) / 1e9) for (n, s, _), e in zip(spans, ends)], "step markers", None
    device_time = function_sums(ops.function, ops.duration_ns, ops.strings)
    if step_function is not None and step_function not in device_time:
        known = ", ".join(sorted(device_time)) or "none"
        raise UsageError("$step_function " + literal(f"{step_function}: no kernel of it in the trace; it has: {known}"))
    if not device_time:
        return [], "none", None
    function = step_function or max(device_time, key=device_time.__getitem__)
    ran = _of_function(ops, runs, ops.code(function))
    started = runs.start[ran]
    ran = ran[np.argsort(started, kind="stable")]
    starts = runs.start[ran].tolist()
    bounds = [*starts[1:], float(runs.last[ran].max())]
    steps = [StepTime(n, s / 1e9, (end - s) / 1e9) for n, (s, end) in enumerate(zip(starts, bounds))]
    return steps, "executions", function


def _of_function(ops: OpEvents, runs: Executions, code: int) -> Ints:
    """The executions of the function `code` (by their first op event's function)."""
    first = np.full(len(runs.size), -1, np.int64)
    first[runs.of[::-1]] = np.arange(len(ops))[::-1]
    return np.flatnonzero(ops.function[first] == code)


def function_sums(functions: Codes, values: Floats, strings: list[str]) -> dict[str, float]:
    """`values` summed per function (codes of `strings`) in event order, functions in the order they
    first ran."""
    codes, first = np.unique(functions, return_index=True)
    sums = np.zeros(len(codes))
    np.add.at(sums, np.searchsorted(codes, functions), values)
    return {strings[int(codes[k])]: float(sums[k]) for k in np.argsort(first).tolist()}


def step_at(steps: list[StepTime], seconds: float) -> int | None:
    started = [s for s in steps if s.start_seconds <= seconds]
    return started[-1].number if started else None


def step_index(steps: list[StepTime], ops: OpEvents, launched: bool) -> Ints:
    """The index in `steps` of the step each op event belongs to (-1: none): launched during it (step
    markers are host spans; `launched`: use the launch times), else run during it (steps that are
    executions are spans of device time)."""
    starts = np.array([s.start_seconds * 1e9 for s in steps])
    ends = np.array([s.start_seconds * 1e9 + s.wall_seconds * 1e9 for s in steps])
    known = ~np.isnan(ops.launched) if launched else np.zeros(len(ops), np.bool_)
    at = np.where(known, ops.launched, ops.start_ns)
    index = np.searchsorted(starts, at, "right") - 1
    inside = (index >= 0) & (at <= ends[np.maximum(index, 0)]) if len(steps) else np.zeros(len(ops), np.bool_)
    if not known.any():  # an execution's own span holds its events; markers may end early
        inside = index >= 0
    return np.where(inside, index, -1)


class Spread(NamedTuple):
    """One figure per device, over the devices that ran something: a host's trace holds all its devices,
    and a figure a step is one device's (their sum would exceed the step)."""

    mean: float
    median: float
    max: float
    slowest: str
    """The device of the max."""
    devices: int


def device_sums(device: Codes, duration_ns: Floats, group: Ints, groups: int) -> tuple[Floats, Mask, Codes]:
    """Per (group, device): the ns of the events in each group (`group`, of `groups`; -1: none), and
    whether the device ran any of them; the devices (codes) are the columns. One `np.add.at` over the
    events, not a loop over them."""
    devices, column = np.unique(device, return_inverse=True)
    column, counted = np.asarray(column).ravel(), group >= 0
    sums = np.zeros((groups, len(devices)))
    np.add.at(sums, (group[counted], column[counted]), duration_ns[counted])
    ran = np.zeros((groups, len(devices)), np.bool_)
    ran[group[counted], column[counted]] = True
    return sums, ran, devices


def spread(ns: Floats, ran: Mask, devices: Codes, strings: list[str], over: int) -> Spread | None:
    """Seconds a step per device (`ns` per device over `over` steps), of the devices that `ran` (None:
    no steps, or no device)."""
    if not over or not ran.any():
        return None
    seconds = ns[ran] / 1e9 / over
    slowest = int(devices[int(np.argmax(np.where(ran, ns, -np.inf)))])
    middle, most = float(np.median(seconds)), float(seconds.max())
    return Spread(float(seconds.mean()), middle, most, strings[slowest], len(seconds))


def steady_steps(steps: list[StepTime], ops: OpEvents) -> Ints:
    """Each op event's step where figures a step count it (`OpEvents.steady`; -1: not counted): the steps
    without a compile, as the summary's median step is of, so that the compiling step's first runs (a
    first execution is slower: buffers, caches) do not make a step's op longer than the step; where its
    module ran in none of those, every step it ran in."""
    stepped = ops.step >= 0
    if not len(steps):
        return ops.step.copy()
    compiled = np.array([s.compiles > 0 for s in steps], np.bool_)
    clean = stepped & ~compiled[np.maximum(ops.step, 0)]
    counted = clean | (stepped & ~np.isin(ops.label, np.unique(ops.label[clean])))
    return np.where(counted, ops.step, -1)


def _uncovered_ns(ops: OpEvents, rows: Ints) -> Floats:
    """Each of one function's op events' time that no earlier-starting event of its device covers: their
    sum is the union of the device's spans of the function, its busy time. Events of one device overlap
    where XLA:CPU records a while op on the PjRt client's thread and its body's ops on an XLAEigen thread
    (both placed on the device), or where kernels of two streams run at once; a sum counted those twice."""
    own = np.zeros(len(rows))
    for device in np.unique(ops.device[rows]).tolist():
        at = np.flatnonzero(ops.device[rows] == device)
        at = at[np.argsort(ops.start_ns[rows[at]], kind="stable")]
        start = ops.start_ns[rows[at]]
        end = start + ops.duration_ns[rows[at]]
        reach = np.concatenate([[-np.inf], np.maximum.accumulate(end)[:-1]])
        own[at] = np.maximum(end - np.maximum(start, reach), 0.0)
    return own


def function_times(ops: OpEvents, steps: list[StepTime]) -> list[FunctionTime]:
    """Each function's device time: every device's in the trace; in each step and a step, one device's
    (the mean over the devices that ran it in steps, and the median and max); a step over the steps it
    ran in that count (`steady_steps`)."""
    order, bounds, _ = grouped([ops.function])
    found: list[FunctionTime] = []
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        mine = order[lo:hi]
        own = _uncovered_ns(ops, mine)
        sums, ran, devices = device_sums(ops.device[mine], own, ops.steady[mine], len(steps))
        ran_devices: Mask = ran.sum(axis=0) > 0
        used = max(int(ran_devices.sum()), 1)
        per_step = np.zeros(len(steps))
        counted = ops.step[mine] >= 0
        np.add.at(per_step, ops.step[mine][counted], own[counted] / 1e9 / used)
        ran_in = ran.any(axis=1)
        steady = int(ran_in.sum())
        by_device = spread(sums[ran_in].sum(axis=0), ran_devices, devices, ops.strings, steady)
        found.append(
            FunctionTime(
                ops.text(int(ops.function[mine[0]])),
                len(np.unique(ops.label[mine])),
                len(mine),
                sum(own.tolist()) / 1e9,
                per_step.tolist(),
                by_device.mean if by_device else None,
                by_device.median if by_device else None,
                by_device.max if by_device else None,
                int(ran_devices.sum()) or len(np.unique(ops.device[mine])),
                by_device.slowest if by_device else None,
            )
        )
    return sorted(found, key=lambda f: -f.seconds)
