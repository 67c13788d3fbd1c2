"""Steps, the device time in them, and autotuning's device work kept apart from the program's."""

from __future__ import annotations

import bisect
from collections import defaultdict

from xlainspect.analysis.profile.events import event_label
from xlainspect.analysis.profile.model import Autotuning, FunctionTime, Step
from xlainspect.dump.directory import Dump
from xlainspect.dump.xplane import StatValue, TraceEvent
from xlainspect.errors import UsageError, literal


def split_autotuning(
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


def autotuning_work(tuning: list[TraceEvent]) -> Autotuning | None:
    if not tuning:
        return None
    per: dict[str, list[float]] = defaultdict(list)
    for event in tuning:
        per[str(event.stats.get("hlo_module") or "(unnamed)")].append(event.duration_ns / 1e9)
    fusions = sorted(((name, len(s), sum(s)) for name, s in per.items()), key=lambda f: -f[2])
    return Autotuning(len(tuning), sum(e.duration_ns for e in tuning) / 1e9, fusions)


def launch_times(events: list[TraceEvent], op_events: list[TraceEvent]) -> dict[int, tuple[str, float]]:
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


def find_steps(
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
        grouped[(event_label(event), run)].append(event)
    return [(min(e.start_ns for e in g), max(e.start_ns + e.duration_ns for e in g)) for g in grouped.values()]


def step_at(steps: list[Step], seconds: float) -> int | None:
    started = [s for s in steps if s.start_seconds <= seconds]
    return started[-1].number if started else None


def step_index(
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


def fill_steps(steps: list[Step], op_events: list[TraceEvent], step_of: dict[int, int]) -> None:
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


def function_times(op_events: list[TraceEvent], steps: list[Step], step_of: dict[int, int]) -> list[FunctionTime]:
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
                len({event_label(e) for e in events}),
                len(events),
                sum(e.duration_ns for e in events) / 1e9,
                per_step,
            )
        )
    return sorted(found, key=lambda f: -f.seconds)
