"""The whole step: its wall time, the device's busy time by kind, and its idle time by cause.

Every instant of a step's wall goes to one category of `model.CATEGORIES`, so a step's breakdown adds
up to its wall and its idle time (wall less busy) never exceeds it. The first that holds, in order:

* **device busy** (`busy_seconds` is their union): some device activity of the program runs: an op
  event of a compiled function (on a `/device` plane; on CPU, on the client threads that run XLA:CPU's
  thunks) or device work of no function outside compiles (memcpy, memset). By kind, where kinds
  overlap the first of: `compute`, `collectives` (an op of a collective kind, `analysis.collectives`,
  or an NCCL kernel, `nccl*`: NCCL names its kernels `ncclDevKernel_*`/`ncclKernel_*`), `copies`
  (memcpy and memset, the CUPTI activities `cupti_collector.cc` records with `memcpy_details` /
  `Memset_details`, and copy ops);
* **autotune**: autotuning's device work runs (XLA compiling and timing candidate fusions);
* **compile**: a compile runs (`backend_compile_and_load`, on any thread);
* **launch**: inside one execution of a compiled function, between its device events: the device
  waits for the host to launch the next kernel (a step of many small kernels);
* **input**: the host is in a host-to-device transfer (`transfer_event`);
* **host**: the rest: the host runs something else (Python, eager jax functions, dispatch). `StepTime.host`
  names it from the host thread's events (`host_names`).

A step's **bound** is the largest of `model.BOUNDS` (`bound_of`).
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from statistics import median

import numpy as np

from xlainspect.analysis.collectives import KINDS as COLLECTIVE_KINDS
from xlainspect.analysis.profile.compiles import COMPILE_EVENTS
from xlainspect.analysis.profile.events import outermost_positions
from xlainspect.analysis.profile.model import BOUNDS, CATEGORIES, DEVICE_KINDS, StepSummary, StepTime
from xlainspect.dump.events import Events, Floats, Ints, TraceEvent
from xlainspect.workers import map_shared

Span = tuple[float, float]
"""(start, end) in ns since the trace's first event."""

UNTRACED = "(untraced)"
"""The host's share where its thread shows no event (Python runs untraced with the Python tracer off)."""
DISPATCH = "PjitFunction("
"""jax's C++ dispatch of a jitted function, eager ops included (`jaxlib` pjit.cc's TraceMe `PjitFunction(f)`)."""
TRANSFER_EVENTS = ("DevicePut", "BufferFromHostBuffer", "H2D Dispatch", "CopyRawHostToDevice", "TransferToDevice")
"""Host-to-device transfers as jaxlib and PjRt name their trace events: `DevicePut` and
`DevicePutWithSharding` (jaxlib py_values.cc, `jax.device_put` and numpy arguments of a jitted call),
`PjRtClient::BufferFromHostBuffer` and the C API's `PJRT_Client_BufferFromHostBuffer`, `H2D Dispatch`
and `CopyRawHostToDevice` (PjRt's stream-executor client)."""
_PRECEDENCE = ("compute", "collectives", "copies", "autotune", "compile", "launch", "input")


@functools.cache
def transfer_event(name: str) -> bool:
    """Whether a host event of this name is a host-to-device transfer (`TRANSFER_EVENTS`)."""
    return any(transfer in name for transfer in TRANSFER_EVENTS)


def device_kind(name: str, copies: bool, op_kind: str | None) -> str:
    """`compute`, `collectives` or `copies` for a device event of this name; `copies`: it carries CUPTI's
    `memcpy_details` or `Memset_details`; `op_kind`: its op's kind from the dump."""
    name = name.lower()
    if copies or name.startswith(("memcpy", "memset")):
        return "copies"
    kind = (op_kind or "").removesuffix("-start").removesuffix("-done")
    if kind in COLLECTIVE_KINDS or name.startswith("nccl"):
        return "collectives"
    return "copies" if kind == "copy" else "compute"


def bound_of(breakdown: dict[str, float]) -> str | None:
    """What a step waits on: the largest of the device's busy time (every kind together), compiling
    (autotuning included), input, launch and host time. Removing it would shorten the step the most;
    ties go to the first of `model.BOUNDS`."""
    groups = {
        "device": sum(breakdown.get(kind, 0.0) for kind in DEVICE_KINDS),
        "compile": breakdown.get("compile", 0.0) + breakdown.get("autotune", 0.0),
        "input": breakdown.get("input", 0.0),
        "launch": breakdown.get("launch", 0.0),
        "host": breakdown.get("host", 0.0),
    }
    best = max(BOUNDS, key=lambda bound: groups[bound])
    return best if groups[best] > 0 else None


SpanColumns = tuple[Floats, Floats]
"""Spans as two arrays: starts and ends (ns since the trace's first event)."""


def cut_steps(starts: Floats, ends: Floats, spans: dict[str, SpanColumns]) -> tuple[Floats, list[list[Span]]]:
    """Each step [starts[k], ends[k]) cut where any span starts or ends, each piece to the first category
    of `_PRECEDENCE` with a span over it, else to the host: (seconds per step and category, the categories
    of `_PRECEDENCE` then `host`; each step's host pieces). All steps at once: every span's edges inside
    the steps it overlaps, sorted, the spans open after each edge counted per category (a running sum),
    each piece between two edges summed into its step's category in time order."""
    host = len(_PRECEDENCE)
    step, time, change, rank = _edges(starts, ends, spans)
    order = np.lexsort((rank, change, time, step))
    step, time, change, rank = step[order], time[order], change[order], rank[order]
    first = np.full(len(step), host)
    for category in range(host - 1, -1, -1):
        first = np.where(np.cumsum(np.where(rank == category, change, 0)) > 0, category, first)
    inner = np.flatnonzero((step[:-1] == step[1:]) & (time[1:] > time[:-1]))
    has = np.zeros(len(starts), np.bool_)
    has[step] = True
    lead = np.searchsorted(step, np.arange(len(starts)))
    tail = np.searchsorted(step, np.arange(len(starts)), "right") - 1
    open_at = np.where(has, time[np.minimum(lead, max(len(time) - 1, 0))] if len(time) else starts, ends)
    close_at = np.where(has, time[np.maximum(tail, 0)] if len(time) else starts, ends)
    piece_step = np.concatenate([np.arange(len(starts)), step[inner], np.arange(len(starts))])
    piece_start = np.concatenate([starts, time[inner], close_at])
    piece_end = np.concatenate([open_at, time[inner + 1], ends])
    piece_category = np.concatenate([np.full(len(starts), host), first[inner], np.full(len(starts), host)])
    real = piece_end > piece_start
    real[len(starts) + len(inner) :] &= has  # a step with no edge has one piece: its first
    at = np.flatnonzero(real)
    at = at[np.lexsort((piece_start[at], piece_step[at]))]
    seconds = np.zeros((len(starts), host + 1))
    np.add.at(seconds, (piece_step[at], piece_category[at]), (piece_end[at] - piece_start[at]) / 1e9)
    pieces: list[list[Span]] = [[] for _ in range(len(starts))]
    idle = at[piece_category[at] == host]
    owners: list[int] = piece_step[idle].tolist()
    for k, a, b in zip(owners, piece_start[idle].tolist(), piece_end[idle].tolist()):
        pieces[k].append((a, b))
    return seconds, pieces


def _edges(starts: Floats, ends: Floats, spans: dict[str, SpanColumns]) -> tuple[Ints, Floats, Ints, Ints]:
    """(step, time, +1 or -1, category) of each span's start and end in each step it overlaps, clipped."""
    found: list[tuple[Ints, Floats, Ints, Ints]] = []
    ordered = bool(np.all(starts[1:] >= starts[:-1]) and np.all(ends[1:] >= ends[:-1]))  # found by bisection
    for category, label in enumerate(_PRECEDENCE):
        a, b = spans.get(label, (np.zeros(0), np.zeros(0)))
        keep = b > a
        a, b = a[keep], b[keep]
        span, step = _overlaps(a, b, starts, ends, ordered)
        begin, finish = np.maximum(a[span], starts[step]), np.minimum(b[span], ends[step])
        count = len(span)
        found.append((step, begin, np.ones(count, np.int64), np.full(count, category)))
        found.append((step, finish, -np.ones(count, np.int64), np.full(count, category)))
    step = np.concatenate([f[0] for f in found]).astype(np.int64)
    time = np.concatenate([f[1] for f in found]).astype(np.float64)
    change = np.concatenate([f[2] for f in found]).astype(np.int64)
    return step, time, change, np.concatenate([f[3] for f in found]).astype(np.int64)


def _overlaps(a: Floats, b: Floats, starts: Floats, ends: Floats, ordered: bool) -> tuple[Ints, Ints]:
    """(span, step) for every span of [a, b) and step of [starts, ends) that overlap: by bisection where
    the steps' starts and ends both ascend (the steps a span overlaps are then consecutive), else step by
    step."""
    if ordered:
        first = np.searchsorted(ends, a, "right")
        count = np.maximum(np.searchsorted(starts, b, "left") - first, 0)
        span = np.repeat(np.arange(len(a)), count)
        offset = np.arange(len(span)) - np.repeat(np.cumsum(count) - count, count)
        return span, np.repeat(first, count) + offset
    pairs = [(np.flatnonzero((b > s) & (a < e)), k) for k, (s, e) in enumerate(zip(starts.tolist(), ends.tolist()))]
    span = np.concatenate([p for p, _ in pairs]) if pairs else np.zeros(0, np.int64)
    step = np.concatenate([np.full(len(p), k) for p, k in pairs]) if pairs else np.zeros(0, np.int64)
    return span.astype(np.int64), step.astype(np.int64)


class HostThread:
    """The thread that runs the user's program, as rows of the trace's events."""

    def __init__(self, events: Events, rows: Ints, files: dict[str, str] | None = None) -> None:
        self.events = events
        self.rows = rows
        self.files = files or {}
        """The user's files by base name (`by_source.user_files`): which Python frames are the user's."""
        self.starts = events.start_ns[rows]
        self.ends = events.end_ns[rows]
        names = events.strings
        calls = events.has("run_id")[rows]
        dispatch = np.array([n.startswith(DISPATCH) for n in names], np.bool_)
        execute = np.array([n.endswith(")") and " (" in n for n in names], np.bool_)
        codes = events.name[rows]
        self.dispatches = dispatch[codes] | (execute[codes] & calls)
        called: list[int] = np.unique(codes[self.dispatches]).tolist()
        self.labels = {code: dispatched(names[code]) for code in called}
        """What each dispatch's name dispatches (`dispatched`): the dispatches' names are few."""

    def names(self, start: float, end: float, marker: TraceEvent | None) -> dict[str, list[Span]]:
        """Spans of the thread in [start, end) by what ran (`host_names`): inside the step's `marker` (left
        out itself) below any one frame that wraps all its events, then what the loop ran after it."""
        bounds: list[int] = np.searchsorted(self.starts, [start, end]).tolist()
        window: Ints = np.arange(bounds[0], bounds[1])
        window = window[self.rows[window] != (marker.row if marker is not None else -1)]
        inner = window[self.starts[window] < marker.end_ns] if marker is not None else window
        (top_in, user_in), (top_after, user_after) = self._top(inner), self._top(window[len(inner) :])
        top = np.concatenate([top_in, top_after])
        codes: list[int] = self.events.name[self.rows[top]].tolist()
        users = [user_in] * len(top_in) + [user_after] * len(top_after)
        names = [self._charged(self.events.strings[c], user) for c, user in zip(codes, users)]
        spans = list(zip(self.starts[top].tolist(), self.ends[top].tolist()))
        calls = window[self.dispatches[window]]
        labels = [self.labels[c] for c in self.events.name[self.rows[calls]].tolist()]
        return host_names(names, spans, list(zip(labels, self.starts[calls].tolist(), self.ends[calls].tolist())))

    def _top(self, window: Ints) -> tuple[Ints, str | None]:
        """The outermost of `window`'s events, below any one frame that wraps them all (not a dispatch),
        and the innermost of those wrappers that is a frame of the user's (`_user`), None where none is."""
        level = window
        top = outermost_positions(self.starts[level], self.ends[level])
        user: str | None = None
        while len(top) == 1 and not self.dispatches[level[top[0]]]:
            wrapper = level[top[0]]
            inside = window[(window != wrapper) & (self.ends[window] <= self.ends[wrapper])]
            if not len(inside):
                break
            user = self._user(self.events.strings[int(self.events.name[self.rows[wrapper]])]) or user
            level = inside
            top = outermost_positions(self.starts[level], self.ends[level])
        return level[top], user

    def _user(self, name: str) -> str | None:
        """A Python frame's name without its `$` where it is a frame of the user's files, else None."""
        file = name.removeprefix("$").partition(":")[0]
        return name.removeprefix("$") if name.startswith("$") and file in self.files else None

    def _charged(self, name: str, user: str | None) -> str:
        """What a host event's time is charged to: a Python frame outside the user's files (jax's own,
        an installed package's) to the user's frame around it in the step (`user`), where one is traced;
        anything else to itself (`$` cut)."""
        if user is not None and name.startswith("$") and self._user(name) is None:
            return user
        return name.removeprefix("$")


Dispatch = tuple[str, float, float]
"""A dispatch on the host thread: what it dispatches (`dispatched`), its start and end."""


def host_names(top: list[str], spans: list[Span], dispatches: list[Dispatch]) -> dict[str, list[Span]]:
    """Spans of the host thread by what ran: inside a jax dispatch `PjitFunction(f)`, the innermost
    one as `jit_f` (a jitted or eager jax function dispatched, and traced and compiled on a miss);
    elsewhere the outermost event of the step (`top`, with their `spans`: a Python function with the
    Python tracer on, `$` cut), below any one frame that wraps all the step's events (the user's step
    function says nothing of where its time went; its callees do: `HostThread.names` finds them)."""
    names: dict[str, list[Span]] = defaultdict(list)
    for name, span in zip(top, spans):
        names[name].append(span)
    # a dispatch wins over the outermost event: listed first (see `_segments`)
    return {**_innermost(dispatches), **names}


def dispatched(name: str) -> str:
    """The compiled function a host dispatch (`HostThread.dispatches`) runs: `jit_f` for jax's
    `PjitFunction(f)`; `<module>` for PjRt's `CommonPjRtLoadedExecutable::Execute (<module>)`, the event
    with the `run_id` stat, where jax's own is not traced."""
    if name.startswith(DISPATCH):
        return "jit_" + name.removeprefix(DISPATCH).removesuffix(")")
    return name.rpartition(" (")[2].removesuffix(")")


def _innermost(dispatches: list[Dispatch]) -> dict[str, list[Span]]:
    """Spans of each dispatched function, nested dispatches cut out of their callers' (the innermost
    dispatch names an instant). `dispatches`: one thread's, by start, the enclosing first."""
    found: dict[str, list[Span]] = defaultdict(list)
    stack: list[Dispatch] = []
    at = 0.0
    for dispatch in dispatches:
        while stack and stack[-1][2] <= dispatch[1]:
            at = _emit(found, stack.pop(), at, None)
        if stack:
            _emit(found, stack[-1], at, dispatch[1])
        stack.append(dispatch)
        at = dispatch[1]
    while stack:
        at = _emit(found, stack.pop(), at, None)
    return found


def _emit(found: dict[str, list[Span]], dispatch: Dispatch, at: float, until: float | None) -> float:
    """Add [at, until) (until None: the dispatch's end) to its function; the new `at`."""
    label, _, end = dispatch
    end = end if until is None else until
    if end > at:
        found[label].append((at, end))
    return max(at, end)


def _segments(
    spans: dict[str, list[Span]], start: float, end: float, precedence: Iterable[str] | None
) -> list[tuple[float, float, str | None]]:
    """[start, end) cut where any span starts or ends, each piece with the first label of `precedence`
    (None: the order of `spans`' keys) that has a span over it, or None."""
    order = list(precedence) if precedence is not None else list(spans)
    rank = {label: index for index, label in enumerate(order)}
    edges: list[tuple[float, int, int]] = []
    for label, found in spans.items():
        if label not in rank:
            continue
        for a, b in found:
            if b > start and a < end and b > a:
                edges += [(max(a, start), 1, rank[label]), (min(b, end), -1, rank[label])]
    edges.sort()
    active: dict[int, int] = {}  # the ranks with a span over the piece: few at once
    pieces: list[tuple[float, float, str | None]] = []
    at = start
    for time, change, index in edges:
        if time > at:
            pieces.append((at, time, order[min(active)] if active else None))
            at = time
        count = active.get(index, 0) + change
        if count:
            active[index] = count
        else:
            del active[index]
    if end > at:
        pieces.append((at, end, order[min(active)] if active else None))
    return pieces


def measure_steps(
    steps: list[StepTime],
    table: Events,
    events: list[TraceEvent],
    marked: dict[int, list[TraceEvent]],
    device: dict[str, SpanColumns],
    kernel_starts: Floats,
    tuning: list[TraceEvent],
    files: dict[str, str] | None = None,
) -> None:
    """Fill each step's busy time, breakdown, host names, bound, kernels and compiles. `device`: spans of
    the program's device activity by kind (op events of compiled functions, other device work outside
    compiles) and `launch`, each execution's device span; `kernel_starts`: the op events' starts, sorted;
    `marked`: the step markers (`steps.step_markers`); `tuning`: autotuning's device work; `events`: the
    trace's events that say what else ran (compiles, transfers), as objects (`table`: all, the host
    thread's among them); `files`: the user's files by base name, to charge the host's time in jax's frames
    to the user's frame around them (`HostThread`)."""
    spans = dict(device)
    spans["autotune"] = _columns(tuning)
    compiling = [e for e in events if e.name in COMPILE_EVENTS]
    spans["compile"] = _columns(compiling)
    host = [e for e in events if not e.plane.startswith("/device")]
    spans["input"] = _columns([e for e in host if transfer_event(e.name)])
    thread = _host_thread(host, marked)
    codes = [k for k, found in enumerate(table.threads) if found == thread]
    names = HostThread(table, np.flatnonzero(np.isin(table.thread, codes)), files)
    starts = np.array([s.start_seconds * 1e9 for s in steps])
    seconds, pieces = _cut_in_batches(starts, starts + np.array([s.wall_seconds * 1e9 for s in steps]), spans)
    for k, step in enumerate(steps):
        start, end = step.start_seconds * 1e9, (step.start_seconds + step.wall_seconds) * 1e9
        kernels = int(np.searchsorted(kernel_starts, end) - np.searchsorted(kernel_starts, start))
        compiles = sum(1 for e in compiling if e.start_ns < end and e.end_ns > start)
        _fill(step, dict(zip([*_PRECEDENCE, "host"], seconds[k].tolist())), kernels, compiles)

    def name(batch: range) -> list[dict[str, float]]:
        return [
            _host_names(names, pieces[k], steps[k], next(iter(marked.get(steps[k].number, [])), None)) for k in batch
        ]

    batches = [range(k, min(k + HOST_STEPS_AT_ONCE, len(steps))) for k in range(0, len(steps), HOST_STEPS_AT_ONCE)]
    for batch, named in zip(batches, map_shared(name, batches, 1)):  # Python's work: shared among the processes
        for k, host in zip(batch, named):
            steps[k].host = host


HOST_STEPS_AT_ONCE = 256
"""Steps whose host time one process names at once (`_host_names`, some 0.1 ms a step)."""


STEPS_AT_ONCE = 1024
"""Steps `cut_steps` cuts at once: its edges and pieces grow with the spans in them, not the trace."""


def _cut_in_batches(starts: Floats, ends: Floats, spans: dict[str, SpanColumns]) -> tuple[Floats, list[list[Span]]]:
    """`cut_steps` over `STEPS_AT_ONCE` steps at a time, each given the spans that may reach into them (by
    start, back as far as the category's longest span)."""
    ordered = {label: _by_start(*found) for label, found in spans.items()}
    seconds: list[Floats] = []
    pieces: list[list[Span]] = []
    for first in range(0, len(starts), STEPS_AT_ONCE):
        begin, end = starts[first : first + STEPS_AT_ONCE], ends[first : first + STEPS_AT_ONCE]
        nearby = {label: _reaching(found, float(begin.min()), float(end.max())) for label, found in ordered.items()}
        cut, found = cut_steps(begin, end, nearby)
        seconds.append(cut)
        pieces += found
    return (np.concatenate(seconds) if seconds else np.zeros((0, len(_PRECEDENCE) + 1))), pieces


def _by_start(starts: Floats, ends: Floats) -> tuple[Floats, Floats, float]:
    longest = float((ends - starts).max()) if len(starts) else 0.0
    if np.all(starts[1:] >= starts[:-1]):  # op events come by start: no copy
        return starts, ends, longest
    order = np.argsort(starts, kind="stable")
    return starts[order], ends[order], longest


def _reaching(spans: tuple[Floats, Floats, float], start: float, end: float) -> SpanColumns:
    """The spans (by start; the longest `spans[2]`) that may overlap [start, end)."""
    starts, ends, longest = spans
    lo, hi = np.searchsorted(starts, [start - longest, end], "left")
    return starts[lo:hi], ends[lo:hi]


def _columns(events: list[TraceEvent]) -> SpanColumns:
    return np.array([e.start_ns for e in events]), np.array([e.end_ns for e in events])


def _fill(step: StepTime, cut: dict[str, float], kernels: int, compiles: int) -> None:
    """`step` with its busy time, breakdown and bound."""
    seconds = {category: cut.get(category, 0.0) for category in CATEGORIES}
    busy = sum(seconds[kind] for kind in DEVICE_KINDS)
    step.busy_seconds = busy
    step.idle_seconds = step.wall_seconds - busy
    step.breakdown = seconds
    step.bound = bound_of(seconds)
    step.kernels, step.compiles = kernels, compiles


def _host_names(thread: HostThread, spans: list[Span], step: StepTime, marker: TraceEvent | None) -> dict[str, float]:
    """Seconds of the step's host pieces `spans` by what the host thread ran then (`host_names`)."""
    if not spans:
        return {}
    start = step.start_seconds * 1e9
    named = thread.names(start, start + step.wall_seconds * 1e9, marker)
    found: dict[str, float] = defaultdict(float)
    for span_start, span_end in spans:
        for a, b, name in _segments(named, span_start, span_end, None):
            found[name or UNTRACED] += (b - a) / 1e9
    return dict(sorted(found.items(), key=lambda item: -item[1]))


def _host_thread(host: list[TraceEvent], marked: dict[int, list[TraceEvent]]) -> tuple[str, str] | None:
    """The thread that runs the user's program: the step markers' (with most of them), else the one that
    dispatches jax calls (most `PjitFunction` events)."""
    counts: Counter[tuple[str, str]] = Counter()
    for markers in marked.values():
        counts.update((e.plane, e.line) for e in markers)
    if not counts:
        counts.update((e.plane, e.line) for e in host if e.name.startswith(DISPATCH))
    return counts.most_common(1)[0][0] if counts else None


def summary(
    steps: list[StepTime], function_of: Callable[[list[StepTime]], str | None], marked: dict[int, list[TraceEvent]]
) -> StepSummary | None:
    """The median wall of the steps with no compile inside (of all, where every step compiled), and the
    step nearest it (the lower where two are as near), whose breakdown stands for the typical step."""
    if not steps:
        return None
    clean = [s for s in steps if s.compiles == 0] or steps
    wall = median(s.wall_seconds for s in clean)
    middle = min(clean, key=lambda s: (abs(s.wall_seconds - wall), s.wall_seconds))
    marker = next((m[0].name for m in marked.values() if m), None)
    return StepSummary(
        function_of(clean),
        marker,
        wall,
        _typical(clean, middle.number),
        middle.number,
        len(clean),
        len(steps) - len(clean),
    )


def _typical(steps: list[StepTime], number: int) -> StepTime:
    """A step whose every figure is the median of that figure over `steps` (a name the host did not run
    in a step counts 0 there), numbered as the step nearest the median wall."""
    breakdown = {category: median(s.breakdown.get(category, 0.0) for s in steps) for category in CATEGORIES}
    names = {name for s in steps for name in s.host}
    host = {name: median(s.host.get(name, 0.0) for s in steps) for name in names}
    return StepTime(
        number,
        median(s.start_seconds for s in steps),
        median(s.wall_seconds for s in steps),
        median(s.busy_seconds for s in steps),
        median(s.idle_seconds for s in steps),
        breakdown,
        dict(sorted(((n, v) for n, v in host.items() if v > 0), key=lambda item: -item[1])),
        bound_of(breakdown),
        0,
        round(median(s.kernels for s in steps)),
    )
