"""Steps, the device time in them, and autotuning's device work kept apart from the program's."""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass

from xlainspect.analysis.profile.events import event_label
from xlainspect.analysis.profile.model import Autotuning, FunctionTime, StepSource, StepTime
from xlainspect.dump.directory import Dump
from xlainspect.dump.events import StatValue, TraceEvent
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


@dataclass(slots=True)
class Execution:
    """One execution of a compiled module: its device events, and when the host started it."""

    label: str
    host_start: float | None
    """ns: the host `...Execute` event (PjRt's, with the `run_id` stat) around the launch; None unknown."""
    events: list[TraceEvent]

    @property
    def span(self) -> tuple[float, float]:
        return min(e.start_ns for e in self.events), max(e.start_ns + e.duration_ns for e in self.events)

    @property
    def start(self) -> float:
        """The host's start where known, else the device's: a step of executions begins at the launch."""
        return min(self.host_start, self.span[0]) if self.host_start is not None else self.span[0]


def step_markers(events: list[TraceEvent]) -> dict[int, list[TraceEvent]]:
    """The step markers by step number: events with a `step_num` stat (`jax.profiler.StepTraceAnnotation`)."""
    marked: dict[int, list[TraceEvent]] = defaultdict(list)
    for event in events:
        number = event.stats.get("step_num")
        if isinstance(number, int) or (isinstance(number, str) and number.isdigit()):
            marked[int(number)].append(event)
    return dict(marked)


def find_steps(
    marked: dict[int, list[TraceEvent]],
    op_events: list[TraceEvent],
    runs: dict[int, Execution],
    step_function: str | None,
) -> tuple[list[StepTime], StepSource, str | None]:
    """The step markers' spans (`marked`: `step_markers`), else one step per execution of the step
    function: from the start of one to the start of the next (the last: to its end). Also what the
    steps are, and the step function where steps are its executions."""
    if marked and step_function is None:
        spans = {n: (min(e.start_ns for e in m), max(e.start_ns + e.duration_ns for e in m)) for n, m in marked.items()}
        return [StepTime(n, s / 1e9, (e - s) / 1e9) for n, (s, e) in sorted(spans.items())], "step markers", None
    device_time: dict[str, float] = defaultdict(float)
    for event in op_events:
        device_time[str(event.stats["hlo_module"])] += event.duration_ns
    if step_function is not None and step_function not in device_time:
        known = ", ".join(sorted(device_time)) or "none"
        raise UsageError("$step_function " + literal(f"{step_function}: no kernel of it in the trace; it has: {known}"))
    if not device_time:
        return [], "none", None
    function = step_function or max(device_time, key=device_time.__getitem__)  # most_common(1)[0][0]
    ran = sorted(
        {id(r): r for r in runs.values() if r.events[0].stats["hlo_module"] == function}.values(), key=lambda r: r.start
    )
    bounds = [r.start for r in ran[1:]] + [max(r.span[1] for r in ran)]
    steps = [StepTime(n, r.start / 1e9, (end - r.start) / 1e9) for n, (r, end) in enumerate(zip(ran, bounds))]
    return steps, "executions", function


def executions(
    events: list[TraceEvent], op_events: list[TraceEvent], launched: dict[int, tuple[str, float]]
) -> dict[int, Execution]:
    """id(op event) -> its execution: the events of one module grouped by `run_id` (theirs, or that of the
    host `...Execute` event around the call that launched them: PjRt's `run_id` stat). An event whose run
    is not known is an execution of its own."""
    runs: dict[str, list[tuple[float, float, StatValue]]] = defaultdict(list)
    first: dict[StatValue, float] = {}
    for event in events:
        if "run_id" in event.stats and not event.plane.startswith("/device") and "hlo_op" not in event.stats:
            runs[event.line].append((event.start_ns, event.start_ns + event.duration_ns, event.stats["run_id"]))
            first.setdefault(event.stats["run_id"], event.start_ns)
    starts = {line: [r[0] for r in spans] for line, spans in runs.items()}
    grouped: dict[tuple[str, object], Execution] = {}
    found: dict[int, Execution] = {}
    for event in op_events:
        run: object = event.stats.get("run_id")
        host = first.get(run) if run is not None else None
        if run is None and id(event) in launched:
            line, at = launched[id(event)]
            index = bisect.bisect_right(starts.get(line, []), at) - 1
            if index >= 0 and at <= runs[line][index][1]:
                run, host = (runs[line][index][2], runs[line][index][0]), runs[line][index][0]
        key = (event_label(event), run if run is not None else id(event))
        execution = grouped.setdefault(key, Execution(key[0], host, []))
        execution.events.append(event)
        found[id(event)] = execution
    return found


def step_at(steps: list[StepTime], seconds: float) -> int | None:
    started = [s for s in steps if s.start_seconds <= seconds]
    return started[-1].number if started else None


def step_index(
    steps: list[StepTime], op_events: list[TraceEvent], launched: dict[int, tuple[str, float]]
) -> dict[int, int]:
    """id(op event) -> index in `steps` of the step it belongs to: launched during it (step markers are
    host spans), else run during it (steps that are executions are spans of device time)."""
    starts = [s.start_seconds * 1e9 for s in steps]
    found: dict[int, int] = {}
    for event in op_events:
        at = launched[id(event)][1] if id(event) in launched else event.start_ns
        index = bisect.bisect_right(starts, at) - 1
        if index >= 0 and at <= starts[index] + steps[index].wall_seconds * 1e9:
            found[id(event)] = index
        elif index >= 0 and not launched:  # an execution's own span holds its events; markers may end early
            found[id(event)] = index
    return found


def function_times(op_events: list[TraceEvent], steps: list[StepTime], step_of: dict[int, int]) -> list[FunctionTime]:
    per: dict[str, list[TraceEvent]] = defaultdict(list)
    for event in op_events:
        per[str(event.stats["hlo_module"])].append(event)
    found: list[FunctionTime] = []
    for function, events in per.items():
        per_step = [0.0] * len(steps)
        for event in events:
            if id(event) in step_of:
                per_step[step_of[id(event)]] += event.duration_ns / 1e9
        ran = [seconds for seconds in per_step if seconds > 0]
        found.append(
            FunctionTime(
                function,
                len({event_label(e) for e in events}),
                len(events),
                sum(e.duration_ns for e in events) / 1e9,
                per_step,
                sum(ran) / len(ran) if ran else None,
            )
        )
    return sorted(found, key=lambda f: -f.seconds)
