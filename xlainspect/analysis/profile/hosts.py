"""The job, not one device: every host's trace of a run read at once, their clocks aligned, each host's and
device's step, the straggler the others wait for, and each collective's wait apart from its transfer.

* **One host at a time, in parallel** (`workers.map_shared`): a host's trace is read and profiled
  (`profile`, the per-step computation every command shares), summarised (`HostSummary`: its steps,
  per-device busy and collective time, each collective part) and dropped, so memory
  holds one trace per worker and the summaries. The whole profile (ops, steps, compiles) that stands for
  the job's is the straggler's, where one stands out: its steps are the job's and its collectives do not
  wait, so its op table shows what the others wait for; else the first host's (kept from the parallel
  pass). A collective op row gains its wait (`with_op_waits`). The straggler's trace is read once more
  (`host_activity`): its profile, and what its devices did and its host ran (the outermost events inside
  its step markers) while the others waited.
* **Dumps** (`host_dumps`): each host's trace joins its own folder of a per-host `--dump` (costs, thunk
  sequences, the bytes its collectives send), else the whole dump; the rows say which.
* **Devices**: a `/device:*` plane is a device (GPU, TPU); on CPU, XLA's thunk executor names the device
  of each op event (`device_ordinal`, jax's global device id).
* **Clocks** (`align_clocks`): every participant of a collective leaves it at about the same instant (no
  device leaves an all-reduce before the last has brought its data), so each host's offset from the first
  host is the median, over the collective executions both ran (same module, op and `run_id`, which PjRt
  shares across the processes of one launch; else the same step and occurrence in it), of the difference
  of their ends. Without shared collectives, the ends of the same step numbers; one host needs none.
* **Wait and transfer** per device part of one execution: wait = the last participant's arrival (start,
  on the aligned clock) - this device's arrival, at most its duration; transfer = the rest. Exposed = the
  part's time not overlapped by compute (non-collective ops) on the same device; hidden = the overlap.
* **The straggler** (`straggler`): per step without a compile, each host's (or, on one host, each
  device's) lateness is the sum over the step's collective executions of its arrival (its last device's)
  minus the first arrival; its margin is its lateness minus the latest other's. The straggler is the one
  whose median margin over the steps exceeds `STRAGGLER_SHARE` of the median step: it arrives last in most
  steps, and the others wait that much longer for it than for anyone else. Otherwise no host stands out.
"""

from __future__ import annotations

import bisect
import functools
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from statistics import median
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from xlainspect.analysis.chips import Chip
from xlainspect.analysis.collectives import KINDS, collectives
from xlainspect.analysis.profile import ProfileReport, profile
from xlainspect.analysis.profile.breakdown import device_kind
from xlainspect.analysis.profile.by_source import user_files
from xlainspect.analysis.profile.costs import embedded_modules
from xlainspect.analysis.profile.events import (
    dump_label,
    outermost_positions,
    traced_modules,
)
from xlainspect.analysis.profile.host_dumps import host_dumps
from xlainspect.analysis.profile.job import (
    STRAGGLER_SHARE,
    ClockAlignment,
    CollectivePart,
    CollectiveRow,
    Execution,
    HostStep,
    HostSummary,
    Interval,
    JobReport,
    Straggler,
    UnitRow,
)
from xlainspect.analysis.profile.model import IDLE_CAUSES, OpTime, StepTime
from xlainspect.analysis.profile.ops import NONE, OpEvents, distinct_rows
from xlainspect.dump.directory import Dump
from xlainspect.dump.events import Events, Floats, Ints, TraceEvent
from xlainspect.dump.module import SkippedFile
from xlainspect.dump.storage import local
from xlainspect.dump.xplane import Trace, read_trace
from xlainspect.errors import UsageError, XlaInspectError
from xlainspect.hlo.model import Module
from xlainspect.hlo.opcodes import name_opcode
from xlainspect.workers import map_hosts


def job_profile(
    traces: Mapping[str, Sequence[str | Path]],
    dump: Dump | None = None,
    chip: Chip | None = None,
    step_function: str | None = None,
    scheduler: str | None = None,
) -> ProfileReport:
    """The whole profile of the host the job waits for, its `job` every host's: each host's trace read and
    summarised in parallel, their clocks aligned, the straggler found. The profile is the straggler's
    where one stands out (what it runs is what the others wait for), else the first host's (`job.ops_host`
    says whose); its collective op rows gain their wait for the last peer. A host whose trace cannot be
    read is skipped (`job.skipped`); none readable is an error. With a `scheduler` (a Dask scheduler's
    address) every read of a trace is a task on that cluster (`workers.map_hosts`): the answer is the same.
    A trace named by an fsspec URL is fetched by the process that reads it (`storage.local`): on a cluster
    each worker fetches its own host's, and the paths reported are the URLs."""
    names = list(traces)
    dumps = host_dumps(dump, names)
    summarise = functools.partial(_summary_or_skipped, chip=chip, step_function=step_function)
    tasks = [_HostTask(host, traces[host], dumps[host].dump, host == names[0]) for host in names]
    found = map_hosts(summarise, tasks, scheduler)
    read = [s for s in found if not isinstance(s, SkippedFile)]
    summaries = [summary for summary, _ in read]
    skipped = [s for s in found if isinstance(s, SkippedFile)]
    if not summaries:
        raise XlaInspectError("; ".join(f"{s.path}: {s.reason}" for s in skipped))
    for summary in summaries:
        summary.dump, summary.dump_match = dumps[summary.host].path, dumps[summary.host].match
    reread: dict[str, ProfileReport] = {}

    def activity(host: str) -> Activity:
        again = functools.partial(host_activity, dump=dumps[host].dump, chip=chip, step_function=step_function)
        reread[host], done = map_hosts(again, [traces[host]], scheduler)[0]
        return done

    job = job_of(summaries, skipped, chip, activity)
    shown = next((s for s in summaries if s.host in reread), summaries[0])
    report = reread.get(shown.host) or read[0][1]
    if report is None:  # the first host was skipped: the first readable host's report, read again
        report = _kept(
            map_hosts(summarise, [_HostTask(shown.host, traces[shown.host], dumps[shown.host].dump, True)], scheduler)[
                0
            ]
        )
    report.paths = [str(p) for s in summaries for p in s.paths]
    report.skipped += skipped  # named on stderr with the dump's, as every command names a file it left out
    job.ops_host = shown.host
    report.job = job
    with_op_waits(report, shown, collective_waits(summaries, job.clock.offsets))
    found = job.straggler
    if found is not None and found.name is not None and found.level == "device":  # one host: its ops shown
        found.extra_work = extra_work(report.ops, found.name)
    return report


class _HostTask(NamedTuple):
    """One host's read: its name, XSpace files (paths or URLs) and dump, and whether its whole profile
    travels back."""

    host: str
    paths: Sequence[str | Path]
    dump: Dump | None
    keep: bool


def _kept(found: tuple[HostSummary, ProfileReport | None] | SkippedFile) -> ProfileReport:
    """The profile a task kept; a host that read before and not now (its file changed) is an input error."""
    if isinstance(found, SkippedFile):
        raise XlaInspectError(f"{found.path}: {found.reason}")
    assert found[1] is not None, "a kept task returns its profile"
    return found[1]


def _summary_or_skipped(
    task: _HostTask, chip: Chip | None, step_function: str | None
) -> tuple[HostSummary, ProfileReport | None] | SkippedFile:
    """The host's summary, and its whole profile where `keep` (the first host's: the one shown unless a
    straggler stands out; the others' do not travel back from the workers). A damaged host's trace is
    named and skipped; the others are still read."""
    shown = task.paths[0]
    fetched: list[Path] = []
    try:
        fetched += [local(path) for path in task.paths]
        summary, report = summarise_host(task.host, fetched, task.dump, chip, step_function)
        summary.paths = [str(path) for path in task.paths]  # where the trace lies, not this worker's copy
        return summary, report if task.keep else None
    except UsageError:
        raise  # the command's error (a --step-function no host ran), not this file's
    except XlaInspectError as error:
        said = str(error).removeprefix(f"{fetched[0] if fetched else shown}: ")  # the path is said once
        return SkippedFile(shown, said)


def job_of(
    summaries: list[HostSummary],
    skipped: list[SkippedFile],
    chip: Chip | None,
    activity: Callable[[str], Activity],
) -> JobReport:
    """Per host and device rows, collectives' waits and the straggler of the hosts' summaries;
    `activity(host)` reads the straggler's device work again."""
    clock = align_clocks(summaries)
    rows = [_unit_row(s, None, clock.offsets[s.host]) for s in summaries]
    devices = [_unit_row(s, d, clock.offsets[s.host]) for s in summaries for d in sorted(s.devices)]
    waits = collective_waits(summaries, clock.offsets)
    return JobReport(
        _with_waits(rows, waits, summaries),
        _with_waits(devices, waits, summaries),
        collective_rows(summaries, waits, chip),
        straggler(summaries, clock.offsets, waits, activity),
        clock,
        skipped,
    )


# -- one host ----------------------------------------------------------------------------------------


def summarise_host(
    host: str, paths: list[Path], dump: Dump | None, chip: Chip | None, step_function: str | None
) -> tuple[HostSummary, ProfileReport]:
    """One host's trace, profiled and summarised, and its profile; the trace is dropped on return."""
    trace = read_trace(paths)
    report = profile(trace, dump, chip, step_function)
    origin = trace.origin_ns
    kinds = _kinds(report)
    compiles = [(origin + c.start_seconds * 1e9, origin + (c.start_seconds + c.seconds) * 1e9) for c in report.compiles]
    steps = [_host_step(s, origin) for s in report.steps]
    ops = report.op_events
    assert ops is not None
    collective = _collectives(ops, kinds)
    parts: list[CollectivePart] = []
    devices: dict[str, list[HostStep]] = {}
    codes, first = np.unique(ops.device, return_index=True)
    for code in codes[np.argsort(first)].tolist():  # in the order they first ran
        mine = np.flatnonzero(ops.device == code)
        devices[ops.text(code)] = _device_steps(steps, ops, mine, collective, origin)
        parts += _collective_parts(ops.text(code), ops, mine, collective, steps, origin)
    median_step = report.step_summary.step_seconds if report.step_summary is not None else None
    found = HostSummary(host, [str(p) for p in paths], steps, median_step, devices, parts, compiles)
    found.bytes_sent = _bytes_sent(trace, dump, {p.module for p in parts})
    return found, report


Named = list[tuple[str, float, float]]
"""(name, start, end) of host events, on the host's clock."""
Activity = tuple[list[Interval], list[Interval], Named, Named]
"""(when some device ran an op other than a collective, when a device moved data for no compiled
function: input and output transfers), merged spans on the host's clock; the outermost host events
inside the step markers (the user's `load_batch`, jax's dispatch); and the Python tracer's frames of the
user's files inside them (`user_frames`; none with the tracer off), by start."""


def host_activity(
    paths: Sequence[str | Path], dump: Dump | None, chip: Chip | None, step_function: str | None
) -> tuple[ProfileReport, Activity]:
    """A host's profile, its device work, transfers and host annotations: read again for the straggler
    only, so that no host's spans (as many as its kernels and Python calls) are held while every host is
    summarised. URLs are fetched here, by the worker that reads them."""
    trace = read_trace([local(path) for path in paths])
    report = profile(trace, dump, chip, step_function)
    origin = trace.origin_ns
    ops = report.op_events
    assert ops is not None
    computing = _collectives(ops, _kinds(report)) == None  # noqa: E711 (an array of objects, elementwise)
    work = _merged(origin + ops.start_ns[computing], origin + ops.start_ns[computing] + ops.duration_ns[computing])
    events = trace.events
    moved = events.select(np.flatnonzero(events.on_device() & ~events.has("hlo_module")))
    files = user_files(op.source for op in report.ops if op.source is not None)
    frames = user_frames(events, origin, files)
    return report, (work, _union(_span(e, origin) for e in moved), _annotations(events, origin), frames)


def with_op_waits(report: ProfileReport, summary: HostSummary, waits: Waits) -> None:
    """Each collective op row of the host's profile gains its devices' wait for the last peer (in the
    trace, every device's; a step, one device's over the steps its module ran in that count, as its
    `seconds_per_step`: those without a compile, else every step), so that its time less the wait is its
    transfer."""
    clean = {s.number for s in summary.steps if not s.compiled}
    total: dict[tuple[str, str], float] = defaultdict(float)
    in_steps: dict[tuple[str, str], float] = defaultdict(float)
    in_clean: dict[tuple[str, str], float] = defaultdict(float)
    modules_clean: set[str] = set()
    for part in summary.parts:
        wait = waits[id(part)][1] / 1e9
        total[part.module, part.op] += wait
        in_steps[part.module, part.op] += wait if part.step is not None else 0.0
        in_clean[part.module, part.op] += wait if part.step in clean else 0.0
        if part.step in clean:
            modules_clean.add(part.module)
    for op in report.ops:
        if (op.module, op.name) in total:
            counted = in_clean if op.module in modules_clean else in_steps
            op.wait_seconds = total[op.module, op.name]
            op.wait_seconds_per_step = counted[op.module, op.name] / op.steps / op.devices if op.steps else None


def _kinds(report: ProfileReport) -> dict[tuple[str, str], str | None]:
    """(module, op) -> the op's kind from its cost row (None without costs)."""
    return {(op.module, op.name): op.kind for op in report.ops}


def _span(event: TraceEvent, origin: float) -> Interval:
    return (origin + event.start_ns, origin + event.start_ns + event.duration_ns)


def _collectives(ops: OpEvents, kinds: dict[tuple[str, str], str | None]) -> npt.NDArray[np.object_]:
    """The collective each op event runs (`collective_kind`; None: none), its kind from the profile's cost
    rows by module and the op its annotation names."""
    distinct, back = distinct_rows([ops.label, ops.annotated, ops.name, ops.copies])
    found = [
        collective_kind(ops.text(name), bool(copies), ops.text(op), kinds.get((ops.text(label), ops.text(op))))
        for label, op, name, copies in distinct
    ]
    return np.array(found + [None], object)[:-1][back]


def _bytes_sent(trace: Trace, dump: Dump | None, labels: set[str]) -> dict[tuple[str, str], int | None]:
    """Bytes each device sends per execution of each collective of the traced modules: from the dump's
    after-optimizations module, else the HLO the trace embeds (none where neither reads: `profile` has
    named why)."""
    modules: dict[str, Module] = {}
    if dump is None:
        modules = embedded_modules(trace, labels, [])
    for dumped in traced_modules(dump, labels) if dump is not None else []:
        try:
            modules[dump_label(dumped)] = dumped.module("after")
        except XlaInspectError:
            continue  # in the report's skipped files already
    return {(label, c.name): c.bytes_per_device for label, module in modules.items() for c in collectives(module)}


def collective_kind(name: str, copies: bool, op: str, kind: str | None) -> str | None:
    """The collective an op event of this name runs (as the step breakdown's `device_kind` decides): its
    kind from the HLO where costs are known, else XLA's default instruction name `op`, which is its opcode
    (`all-reduce.3`, `all-gather-start`); an NCCL kernel without one is `nccl`."""
    kind = kind or name_opcode(op)
    if device_kind(name, copies, kind) != "collectives":
        return None
    kind = kind.removesuffix("-start").removesuffix("-done")
    return kind if kind in KINDS else "nccl"


def _device_steps(
    steps: list[HostStep], ops: OpEvents, rows: Ints, collective: npt.NDArray[np.object_], origin: float
) -> list[HostStep]:
    """Each step as one device (its op events `rows`) saw it: the union of its ops' spans, and of its
    collectives'."""
    found = [HostStep(s.number, s.start_ns, s.wall_seconds, 0.0, 0.0, 0.0, s.compiled) for s in steps]
    start = origin + ops.start_ns[rows]
    at = np.searchsorted(np.array([s.start_ns for s in steps]), start, "right") - 1
    order = np.argsort(at, kind="stable")
    bounds = np.searchsorted(at[order], np.arange(len(steps) + 1))
    end = start + ops.duration_ns[rows]
    moving = collective[rows] != None  # noqa: E711 (an array of objects, elementwise)
    for k, step in enumerate(found):
        mine = order[bounds[k] : bounds[k + 1]]
        step.busy_seconds = _length(_merged(start[mine], end[mine])) / 1e9
        mine = mine[moving[mine]]
        step.collective_seconds = _length(_merged(start[mine], end[mine])) / 1e9
        step.idle_seconds = max(0.0, step.wall_seconds - step.busy_seconds)
    return found


def _host_step(step: StepTime, origin: float) -> HostStep:
    """The host's step as `profile` measured it, on the host's clock."""
    return HostStep(
        step.number,
        origin + step.start_seconds * 1e9,
        step.wall_seconds,
        step.busy_seconds,
        step.idle_seconds,
        step.breakdown.get("collectives", 0.0),
        step.compiles > 0,
        {cause: step.breakdown.get(cause, 0.0) for cause in IDLE_CAUSES},
    )


def _collective_parts(
    device: str, ops: OpEvents, rows: Ints, collective: npt.NDArray[np.object_], steps: list[HostStep], origin: float
) -> list[CollectivePart]:
    """Each collective op event of one device (its op events `rows`), with how much compute overlapped it."""
    starts = [s.start_ns for s in steps]
    computing = collective[rows] == None  # noqa: E711 (an array of objects, elementwise)
    if computing.all():
        return []
    begin = origin + ops.start_ns
    compute = _merged(begin[rows[computing]], begin[rows[computing]] + ops.duration_ns[rows[computing]])
    seen: dict[tuple[str, str, int | None], int] = defaultdict(int)
    parts: list[CollectivePart] = []
    for k in rows[~computing].tolist():
        start, end = float(begin[k]), float(begin[k] + ops.duration_ns[k])
        at = _step_at(starts, start)
        number = steps[at].number if at is not None else None
        key = (ops.text(int(ops.label[k])), ops.text(int(ops.annotated[k])), number)
        run = int(ops.run[k]) if ops.run[k] != NONE else None
        execution = (run,) if run is not None else (number, seen[key])
        seen[key] += 1
        hidden = _overlap(compute, start, end)
        parts.append(CollectivePart(key[0], key[1], str(collective[k]), execution, device, number, start, end, hidden))
    return parts


def user_frames(events: Events, origin: float, files: dict[str, str]) -> Named:
    """The Python tracer's frames (`$file.py:12 f`: tsl's python_hooks.cc names a frame by its file's base
    name, its first line and its function) of the user's `files` (`by_source.user_files`) that start
    inside a step marker, on the markers' threads, by start."""
    wanted = [k for k, name in enumerate(events.strings) if name[:1] == "$" and name[1:].partition(":")[0] in files]
    markers = np.flatnonzero(events.has("step_num"))
    if not wanted or not len(markers):
        return []
    marked: list[int] = np.unique(events.thread[markers]).tolist()
    lines = {events.threads[k][1] for k in marked}
    threads = [k for k, (_, line) in enumerate(events.threads) if line in lines]
    rows = np.flatnonzero(np.isin(events.name, wanted) & np.isin(events.thread, threads))
    spans = np.array(_merged(events.start_ns[markers], events.end_ns[markers]))
    at = np.searchsorted(spans[:, 0], events.start_ns[rows], "right") - 1
    inside = rows[(at >= 0) & (events.start_ns[rows] < spans[np.maximum(at, 0), 1])]
    names: list[int] = events.name[inside].tolist()
    starts, ends = events.start_ns[inside].tolist(), events.end_ns[inside].tolist()
    return [(events.strings[n][1:], origin + a, origin + b) for n, a, b in zip(names, starts, ends)]


def _annotations(events: Events, origin: float) -> list[tuple[str, float, float]]:
    """The outermost events inside each step marker on the marker's own thread."""
    marked = events.has("step_num")
    markers = np.flatnonzero(marked)
    line_of = np.array([line for _, line in events.threads] + [""], object)
    lines = set(line_of[events.thread[markers]].tolist())
    codes = [k for k, (_, line) in enumerate(events.threads) if line in lines]
    rows = np.flatnonzero(np.isin(events.thread, codes) & ~marked)
    starts, ends = events.start_ns[rows], events.end_ns[rows]
    found: list[tuple[str, float, float]] = []
    for marker in markers.tolist():
        at = slice(
            *np.searchsorted(starts, [events.start_ns[marker], events.start_ns[marker] + events.duration_ns[marker]])
        )
        mine = line_of[events.thread[rows[at]]] == line_of[events.thread[marker]]
        top = rows[at][mine][outermost_positions(starts[at][mine], ends[at][mine])]
        names: list[int] = events.name[top].tolist()
        for name, start, duration in zip(names, events.start_ns[top].tolist(), events.duration_ns[top].tolist()):
            found.append((events.strings[name], origin + start, origin + start + duration))
    return found


# -- the job -----------------------------------------------------------------------------------------


def align_clocks(summaries: list[HostSummary]) -> ClockAlignment:
    """Each host's offset to the first host's clock. The recorded clocks are kept where every shared
    collective is causal on them (no participant leaves it before the last one has arrived: one machine,
    or hosts whose clocks agree closer than a collective lasts); else each host is moved by the median
    difference of the ends of the collectives it shares with the first host, else of the steps."""
    if len(summaries) == 1:
        return ClockAlignment("one host", 0, {summaries[0].host: 0.0})
    ends = [_median_ends(s.parts) for s in summaries]
    shared = [set(ends[0]) & set(e) for e in ends]
    if all(shared[1:]) and _causal(summaries):
        return ClockAlignment("recorded clocks", min(len(c) for c in shared[1:]), {s.host: 0.0 for s in summaries})
    if all(shared[1:]):
        pairs = zip(summaries, ends, shared)
        offsets = {s.host: median(ends[0][k] - e[k] for k in common) / 1e9 for s, e, common in pairs}
        return ClockAlignment("collective ends", min(len(c) for c in shared[1:]), offsets)
    step_ends = [{st.number: _end(st) for st in s.steps} for s in summaries]
    common = [set(step_ends[0]) & set(e) for e in step_ends]
    offsets = {
        s.host: median(step_ends[0][n] - e[n] for n in c) / 1e9 if c else 0.0
        for s, e, c in zip(summaries, step_ends, common)
    }
    return ClockAlignment("step ends", min(len(c) for c in common[1:]), offsets)


def _causal(summaries: list[HostSummary]) -> bool:
    """Whether, on the recorded clocks, every participant of every collective execution left it after the
    last participant arrived."""
    arrived: dict[Execution, float] = defaultdict(lambda: float("-inf"))
    left: dict[Execution, float] = defaultdict(lambda: float("inf"))
    for summary in summaries:
        for part in summary.parts:
            arrived[part.key] = max(arrived[part.key], part.start_ns)
            left[part.key] = min(left[part.key], part.end_ns)
    return all(left[k] >= arrived[k] for k in arrived)


def _median_ends(parts: list[CollectivePart]) -> dict[Execution, float]:
    ends: dict[Execution, list[float]] = defaultdict(list)
    for part in parts:
        ends[part.key].append(part.end_ns)
    return {k: median(v) for k, v in ends.items()}


Waits = dict[int, tuple[float, float]]
"""id(part) -> (arrival on the aligned clock, wait ns)."""


def collective_waits(summaries: list[HostSummary], offsets: dict[str, float]) -> Waits:
    """Each part's arrival on the aligned clock and its wait for the last participant of its execution."""
    executions: dict[Execution, list[tuple[float, CollectivePart]]] = defaultdict(list)
    for summary in summaries:
        for part in summary.parts:
            arrival = part.start_ns + offsets[summary.host] * 1e9
            executions[part.key].append((arrival, part))
    waits: Waits = {}
    for arrivals in executions.values():
        last = max(a for a, _ in arrivals)
        for arrival, part in arrivals:
            waits[id(part)] = (arrival, min(last - arrival, part.end_ns - part.start_ns))
    return waits


def _unit_row(summary: HostSummary, device: str | None, offset: float) -> UnitRow:
    steps = summary.steps if device is None else summary.devices[device]
    clean = [s for s in steps if not s.compiled]
    causes = {c for s in clean for c in s.idle}
    return UnitRow(
        summary.host,
        device,
        steps,
        summary.step_seconds,
        _median(s.busy_seconds for s in clean),
        _median(s.idle_seconds for s in clean),
        {c: median(s.idle[c] for s in clean) for c in IDLE_CAUSES if c in causes},
        _median(s.collective_seconds for s in clean),
        None,
        None,
        None,
        offset,
        summary.dump,
        summary.dump_match,
    )


def _with_waits(rows: list[UnitRow], waits: Waits, summaries: list[HostSummary]) -> list[UnitRow]:
    """Each row's wait, transfer and exposed collective time, medians over its steps without a compile
    (a host's: the mean over its devices)."""
    parts = {s.host: s.parts for s in summaries}
    for row in rows:
        clean = {s.number for s in row.steps if not s.compiled}
        mine = [p for p in parts[row.host] if p.step in clean and (row.device is None or p.device == row.device)]
        devices = len({p.device for p in mine}) or 1
        per_step: dict[int | None, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
        for part in mine:
            wait = waits[id(part)][1]
            sums = per_step[part.step]
            sums[0] += wait / devices
            sums[1] += (part.end_ns - part.start_ns - wait) / devices
            sums[2] += (part.end_ns - part.start_ns - part.hidden_ns) / devices
        if per_step:
            row.wait_seconds, row.transfer_seconds, row.exposed_seconds = (
                median(v[k] for v in per_step.values()) / 1e9 for k in range(3)
            )
    return rows


def collective_rows(summaries: list[HostSummary], waits: Waits, chip: Chip | None) -> list[CollectiveRow]:
    """Per collective op per device, over its executions in steps without a compile; bytes from its
    host's own program (hosts may run different ones), against the chip's link."""
    rows: dict[tuple[str, str, str, str], CollectiveRow] = {}
    for summary in summaries:
        clean = {s.number for s in summary.steps if not s.compiled}
        for part in summary.parts:
            if part.step not in clean:
                continue
            key = (summary.host, part.device, part.module, part.op)
            row = rows.setdefault(
                key, CollectiveRow(part.module, part.op, part.kind, summary.host, part.device, 0, 0, 0, 0, 0, 0)
            )
            seconds, wait = (part.end_ns - part.start_ns) / 1e9, waits[id(part)][1] / 1e9
            row.count += 1
            row.seconds += seconds
            row.wait_seconds += wait
            row.transfer_seconds += seconds - wait
            row.hidden_seconds += part.hidden_ns / 1e9
            row.exposed_seconds += seconds - part.hidden_ns / 1e9
    sent = {s.host: s.bytes_sent for s in summaries}
    for row in rows.values():
        row.bytes_per_execution = sent[row.host].get((row.module, row.op))
        if row.bytes_per_execution is not None and row.transfer_seconds > 0:
            row.transfer_bytes_per_second = row.bytes_per_execution * row.count / row.transfer_seconds
        row.link_bandwidth = chip.ici_bandwidth if chip is not None else None
    return list(rows.values())


# -- the straggler -----------------------------------------------------------------------------------


def straggler(
    summaries: list[HostSummary], offsets: dict[str, float], waits: Waits, activity: Callable[[str], Activity]
) -> Straggler | None:
    """The host (or, with one host, the device) that arrives last at the collectives of most steps, by a
    median margin over `STRAGGLER_SHARE` of the median step; None without collectives. `activity(host)`:
    the straggler's device work and transfers, for what it did meanwhile."""
    level = "host" if len(summaries) > 1 else "device"
    compiled = {s.number for summary in summaries for s in summary.steps if s.compiled}
    lateness = _lateness(summaries, waits, compiled, level)
    if not lateness:
        return None
    units = sorted({u for per in lateness.values() for u in per})
    margins = {u: median(_margin(per, u) for per in lateness.values()) for u in units}
    walls = [s.wall_seconds for summary in summaries for s in summary.steps if s.number not in compiled]
    step = median(walls) if walls else 0.0
    threshold = STRAGGLER_SHARE * step
    slowest = max(units, key=margins.__getitem__)
    last = sum(max(per, key=per.__getitem__) == slowest for per in lateness.values())
    stands_out = margins[slowest] > threshold and len(units) > 1
    others, waited_in = _others_wait(summaries, waits, compiled, level, slowest)
    name = slowest if stands_out else None
    found = Straggler(level, name, last, len(lateness), margins[slowest], threshold, others, step, waited_in)
    if stands_out and level == "host":
        late = next(s for s in summaries if s.host == slowest)
        windows = _waited(late, summaries, offsets, waits, compiled)
        done = activity(slowest)
        found.meanwhile = _meanwhile(late, done, windows)
        found.frame = _busiest_frame(done[3], windows)
    return found


def extra_work(ops: list[OpTime], device: str) -> tuple[str, float, str | None] | None:
    """The op a device straggler spends the most time in a step beyond the median device, of the ops it is
    the slowest device of (`OpTime.seconds_per_step_max_device` less `seconds_per_step_median_device`),
    collectives left out (their extra time on it is moving data, not what the others wait for); with that
    excess and the op's source line (its HLO metadata's, where the dump or the trace's HLO gives it). SPMD
    gives every device the same program and shapes, so what one device runs longer is its own control
    flow (a loop's trips, a conditional's branch) or data; None where no op takes it longer."""
    excess = [
        (op.seconds_per_step_max_device - op.seconds_per_step_median_device, op.name, op.source)
        for op in ops
        if op.slowest_device == device
        and op.wait_seconds is None
        and op.seconds_per_step_max_device is not None
        and op.seconds_per_step_median_device is not None
    ]
    seconds, name, source = max(excess, key=lambda found: found[0], default=(0.0, "", None))
    return (name, seconds, source) if seconds > 0 else None


def _unit(summary: HostSummary, part: CollectivePart, level: str) -> str:
    return summary.host if level == "host" else part.device


def _lateness(
    summaries: list[HostSummary], waits: Waits, compiled: set[int], level: str
) -> dict[int | None, dict[str, float]]:
    """Per step, per unit: the sum over the step's executions of its arrival (its last device's) after the first."""
    arrivals: dict[Execution, dict[str, float]] = defaultdict(dict)
    steps: dict[Execution, int | None] = {}
    for summary in summaries:
        for part in summary.parts:
            if part.step in compiled:
                continue
            key = part.key
            unit = _unit(summary, part, level)
            arrivals[key][unit] = max(arrivals[key].get(unit, float("-inf")), waits[id(part)][0])
            steps.setdefault(key, part.step)
    lateness: dict[int | None, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for key, per_unit in arrivals.items():
        first = min(per_unit.values())
        for unit, arrival in per_unit.items():
            lateness[steps[key]][unit] += (arrival - first) / 1e9
    return lateness


def _margin(per_unit: dict[str, float], unit: str) -> float:
    others = [v for u, v in per_unit.items() if u != unit]
    return per_unit.get(unit, 0.0) - max(others, default=0.0)


def _others_wait(
    summaries: list[HostSummary], waits: Waits, compiled: set[int], level: str, slowest: str
) -> tuple[float, str | None]:
    """Median over the steps of the mean wait per step of the other units' devices, and the collective op
    they wait in most."""
    per_step: dict[int | None, float] = defaultdict(float)
    per_op: dict[str, float] = defaultdict(float)
    devices: set[tuple[str, str]] = set()
    for summary in summaries:
        for part in summary.parts:
            if part.step not in compiled and _unit(summary, part, level) != slowest:
                per_step[part.step] += waits[id(part)][1] / 1e9
                per_op[part.op] += waits[id(part)][1]
                devices.add((summary.host, part.device))
    waited_in = max(per_op, key=per_op.__getitem__, default=None)
    return (median(v / max(1, len(devices)) for v in per_step.values()) if per_step else 0.0), waited_in


def _waited(
    late: HostSummary, summaries: list[HostSummary], offsets: dict[str, float], waits: Waits, compiled: set[int]
) -> list[Interval]:
    """When the others waited for the straggler, on its clock: from their median arrival at each collective
    execution of a step without a compile to its own, merged."""
    others: dict[Execution, list[float]] = defaultdict(list)
    for summary in summaries:
        if summary is not late:
            for part in summary.parts:
                others[part.key].append(waits[id(part)][0])
    windows: list[Interval] = []
    for part in late.parts:
        key = part.key
        if part.step not in compiled and key in others:
            start = median(others[key]) - offsets[late.host] * 1e9
            if start < part.start_ns:
                windows.append((start, part.start_ns))
    return _union(windows)


def _meanwhile(late: HostSummary, activity: Activity, windows: list[Interval]) -> list[tuple[str, str, float]]:
    """What the straggler ran, a step, while the others waited (`windows`, `_waited`)."""
    steps = len({s.number for s in late.steps if not s.compiled}) or 1

    def within(spans: list[Interval]) -> float:
        return sum(_overlap(windows, *span) for span in spans) / 1e9 / steps

    work, transfers, annotations, _ = activity
    found = [("compile", "", within(late.compiles)), ("device", "", within(work)), ("input", "", within(transfers))]
    by_name: dict[str, list[Interval]] = defaultdict(list)
    for name, start, end in annotations:
        by_name[name].append((start, end))
    found += [("host", name, within(spans)) for name, spans in by_name.items()]
    covered = _union([*late.compiles, *work, *transfers, *(a[1:] for a in annotations)])
    found.append(("host", "(unannotated)", (_length(windows) - _covered(windows, covered)) / 1e9 / steps))
    return sorted((f for f in found if f[2] > 0), key=lambda f: -f[2])


def _busiest_frame(frames: Named, windows: list[Interval]) -> str | None:
    """The user's frame the straggler spent most of the others' wait in: each frame's time in `windows`
    less that of the user's frames it called (the time of jax's and installed packages' frames goes to the
    user's frame that called them: the first frame outside them, from the inside); None without frames."""
    own = [_overlap(windows, start, end) for _, start, end in frames]
    stack: list[int] = []
    for k, (_, start, _) in enumerate(frames):  # by start: a frame's caller is the last one still open
        while stack and frames[stack[-1]][2] <= start:
            stack.pop()
        if stack:
            own[stack[-1]] -= _overlap(windows, start, frames[k][2])
        stack.append(k)
    charged: dict[str, float] = defaultdict(float)
    for (name, _, _), seconds in zip(frames, own):
        charged[name] += seconds
    busiest = max(charged, key=charged.__getitem__, default=None)
    return busiest if busiest is not None and charged[busiest] > 0 else None


def _covered(windows: list[Interval], merged: list[Interval]) -> float:
    """How much of the disjoint `windows` the disjoint `merged` spans cover."""
    return sum(_overlap(merged, *window) for window in windows)


# -- intervals ---------------------------------------------------------------------------------------


def _merged(starts: Floats, ends: Floats) -> list[Interval]:
    """`_union` of the spans [starts, ends), sorted and merged with numpy: a span opens a new interval
    where it starts after every earlier one's end."""
    if not len(starts):
        return []
    order = np.lexsort((ends, starts))
    starts, reach = starts[order], np.maximum.accumulate(ends[order])
    opens = np.flatnonzero(np.concatenate([[True], starts[1:] > reach[:-1]]))
    closes = np.concatenate([opens[1:] - 1, [len(starts) - 1]])
    return list(zip(starts[opens].tolist(), reach[closes].tolist()))


def _union(intervals: Iterable[Interval]) -> list[Interval]:
    spans = list(intervals)
    return _merged(np.array([a for a, _ in spans]), np.array([b for _, b in spans]))


def _length(merged: list[Interval]) -> float:
    return sum(end - start for start, end in merged)


def _overlap(merged: list[Interval], start: float, end: float) -> float:
    """How much of [start, end] the sorted, disjoint `merged` covers."""
    k = max(0, bisect.bisect_right(merged, (start, float("inf"))) - 1)
    total = 0.0
    while k < len(merged) and merged[k][0] < end:
        total += max(0.0, min(end, merged[k][1]) - max(start, merged[k][0]))
        k += 1
    return total


def _step_at(starts: list[float], at: float) -> int | None:
    index = bisect.bisect_right(starts, at) - 1
    return index if index >= 0 else None


def _end(step: HostStep) -> float:
    return step.start_ns + step.wall_seconds * 1e9


def _median(values: Iterable[float]) -> float | None:
    found = list(values)
    return median(found) if found else None
