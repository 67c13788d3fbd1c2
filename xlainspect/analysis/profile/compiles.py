"""Compiles in a jax.profiler trace: the function each compiled, its step, and its time by phase.

* A **compile** is the host event jax names `backend_compile_and_load` (jax 0.10-0.11,
  `jax/_src/compiler.py`) or `backend_compile` (older jax). jax's event carries no module name; XLA's
  pass pipelines nested in it on the same thread do: `HloPassPipeline::Run` opens `"<pipeline> (<module>)"`
  with a `module` stat (`xla/hlo/pass/hlo_pass_pipeline.cc`). The compiled function is the module they
  name most (the compile's own thread only: autotuning compiles each candidate fusion as a module of its
  own, `gemm_fusion_dot.4`, on the compile thread pool); else the enclosing `PjitFunction(f)` as `jit_f`.
  Never a kernel that ran during it.
* **Phases** (jax#29809, openxla/xla#44517), from the trace's own events:
  jax: from the enclosing `PjitFunction(f)` (jax's C++ dispatch) to the compile: tracing, lowering and
  the cache lookup; lowering is jax's own `lower_sharding_computation` event in that span
  (`jax/_src/interpreters/pxla.py`, under `@profiler.annotate_function`), tracing the rest;
  XLA passes: the passes of the module's pipelines (direct children of its `"<pipeline> (<module>)"`
  events), by pass name;
  autotuning: the passes during which XLA compiled and ran other modules (the fusions it tuned: device
  kernels whose `hlo_module` is a fusion, or nameless buffer checks) - removed from the passes - with the
  kernels run per fusion tuned;
  codegen and the rest: the compile less its passes and autotuning (scheduling, LLVM IR, PTX/cubin,
  loading, and the pipelines' own bookkeeping), so the three add up to the compile.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from xlainspect.analysis.profile.events import outermost
from xlainspect.analysis.profile.ops import OpEvents
from xlainspect.dump.events import TraceEvent
from xlainspect.dump.names import file_module_id

COMPILE_EVENTS = frozenset({"backend_compile_and_load", "backend_compile"})
TOP_PASSES = 10
LOWERING = "lower_sharding_computation"
"""jax's lowering to StableHLO, a profiler event of its own (`jax/_src/interpreters/pxla.py`)."""


@dataclass(slots=True)
class PassTime:
    """Seconds one XLA pass (by name) took in a compile, all its runs together."""

    name: str
    seconds: float
    runs: int


@dataclass(slots=True)
class TunedFusion:
    """Device work autotuning ran for one fusion while compiling."""

    fusion: str
    """The module the autotuner compiled for it (`gemm_fusion_dot.4`); `(unnamed)`: buffer checks and
    comparisons that carry no module."""
    kernels: int
    device_seconds: float


@dataclass(slots=True)
class CompilePhases:
    """One compile's time by phase (seconds)."""

    jax_seconds: float | None
    """Tracing, lowering and the cache lookup: from `PjitFunction(f)` to the compile (None: no caller)."""
    lowering_seconds: float | None
    passes_seconds: float
    autotuning_seconds: float
    codegen_seconds: float
    passes: list[PassTime] = field(default_factory=list[PassTime])
    """The slowest passes, autotuning passes left out."""
    tuned: list[TunedFusion] = field(default_factory=list[TunedFusion])


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
    phases: CompilePhases | None = None
    module: str | None = None
    """The module it made (`module_146159.jit_train_step`): the one of the function that ran first after it
    (jax runs what it just compiled), where the trace names module ids."""


def trace_compiles(
    events: list[TraceEvent], is_tuning: Callable[[TraceEvent], bool], step_at: Callable[[float], int | None]
) -> list[CompileEvent]:
    """Every compile event of `events` (sorted by start) with its function, phases and step.
    `is_tuning(event)`: whether a device event is autotuning's (no compiled function's); `step_at(seconds)`:
    the step at that time."""
    found: list[CompileEvent] = []
    compile_events = [e for e in events if e.name in COMPILE_EVENTS]
    if not compile_events:
        return found
    starts = [e.start_ns for e in events]
    threads = {(e.plane, e.line) for e in compile_events}
    by_thread: dict[tuple[str, str], list[TraceEvent]] = defaultdict(list)
    for event in events:
        if (event.plane, event.line) in threads:
            by_thread[(event.plane, event.line)].append(event)
    at = {key: [e.start_ns for e in thread] for key, thread in by_thread.items()}
    calls = {key: [e for e in thread if e.name.startswith("PjitFunction(")] for key, thread in by_thread.items()}
    lowerings = {key: [e for e in thread if e.name == LOWERING] for key, thread in by_thread.items()}
    for event in compile_events:
        key = (event.plane, event.line)
        thread, starts_here = by_thread[key], at[key]
        own = thread[bisect.bisect_left(starts_here, event.start_ns) : bisect.bisect_right(starts_here, event.end_ns)]
        own = [e for e in own if e is not event]
        callers = [e for e in calls[key] if e.start_ns <= event.start_ns and event.end_ns <= e.end_ns]
        during = events[bisect.bisect_left(starts, event.start_ns) : bisect.bisect_right(starts, event.end_ns)]
        function = _named_function(own) or (
            f"jit_{callers[-1].name.removeprefix('PjitFunction(').removesuffix(')')}" if callers else None
        )
        found.append(
            CompileEvent(
                event.name,
                function,
                event.start_ns / 1e9,
                event.duration_ns / 1e9,
                step_at(event.start_ns / 1e9),
                event.line,
                _phases(event, own, during, function, callers[0] if callers else None, lowerings[key], is_tuning),
            )
        )
    return found


def _named_function(own: list[TraceEvent]) -> str | None:
    named = Counter(str(e.stats["module"]) for e in own if "module" in e.stats)
    return next((name for name, _ in named.most_common() if _is_function(name)), None)


def _is_function(module: str) -> bool:
    """Not one of XLA:CPU's per-kernel codegen modules (`__compute_module_x`, `x_kernel_module`)."""
    return not module.startswith("__compute_module") and not module.endswith("_kernel_module")


def _phases(
    compile_event: TraceEvent,
    own: list[TraceEvent],
    during: list[TraceEvent],
    function: str | None,
    caller: TraceEvent | None,
    lowerings: list[TraceEvent],
    is_tuning: Callable[[TraceEvent], bool],
) -> CompilePhases:
    thread = _compiling_thread(own, during, function)
    outer = outermost([e for e in thread if e.stats.get("module") == function])
    passes = _children(thread, outer)
    tuning_work = [e for e in during if is_tuning(e)]
    work_starts = [w.start_ns for w in tuning_work]  # sorted, as `during` is
    tuning_passes: list[TraceEvent] = []
    by_name: dict[str, list[float]] = defaultdict(list)
    for p in passes:
        if bisect.bisect_right(work_starts, p.end_ns) > bisect.bisect_left(work_starts, p.start_ns):
            tuning_passes.append(p)
        else:
            by_name[p.name].append(p.duration_ns / 1e9)
    ranked = sorted((PassTime(n, sum(s), len(s)) for n, s in by_name.items()), key=lambda p: -p.seconds)
    tuned: dict[str, list[float]] = defaultdict(list)
    for work in tuning_work:
        tuned[str(work.stats.get("hlo_module") or "(unnamed)")].append(work.duration_ns / 1e9)
    passes_seconds = sum(sum(s) for s in by_name.values())
    tuning_seconds = sum(p.duration_ns for p in tuning_passes) / 1e9
    lowered = None
    if caller is not None:
        spans = [e for e in lowerings if caller.start_ns <= e.start_ns and e.end_ns <= compile_event.start_ns]
        lowered = sum(e.duration_ns for e in outermost(spans)) / 1e9
    return CompilePhases(
        (compile_event.start_ns - caller.start_ns) / 1e9 if caller is not None else None,
        lowered,
        passes_seconds,
        tuning_seconds,
        max(compile_event.duration_ns / 1e9 - passes_seconds - tuning_seconds, 0.0),
        ranked[:TOP_PASSES],
        sorted((TunedFusion(n, len(s), sum(s)) for n, s in tuned.items()), key=lambda t: -t.device_seconds),
    )


def _compiling_thread(own: list[TraceEvent], during: list[TraceEvent], function: str | None) -> list[TraceEvent]:
    """The events of the thread that ran the module's pass pipelines: the compile's own (XLA:GPU), else
    the one of `during` with the most of them (XLA:CPU compiles on `tf_PjRtCompilerThreadPool`)."""
    if function is None or any(e.stats.get("module") == function for e in own):
        return own
    named = Counter((e.plane, e.line) for e in during if e.stats.get("module") == function)
    if not named:
        return own
    plane, line = named.most_common(1)[0][0]
    return [e for e in during if e.line == line and e.plane == plane]


def _children(own: list[TraceEvent], parents: list[TraceEvent]) -> list[TraceEvent]:
    """The events directly nested in any of `parents` on their thread (`own` sorted by start)."""
    wanted = {id(p) for p in parents}
    found: list[TraceEvent] = []
    stack: list[TraceEvent] = []
    for event in own:
        while stack and event.start_ns >= stack[-1].end_ns:
            stack.pop()
        if stack and id(stack[-1]) in wanted:
            found.append(event)
        stack.append(event)
    return found


def with_modules(compiles: list[CompileEvent], ops: OpEvents) -> list[CompileEvent]:
    """Each compile with the module it made: its function's first module to run (be launched) after it."""
    at = np.where(np.isnan(ops.launched), ops.start_ns, ops.launched)
    for event in compiles:
        after = (
            ops.program
            & (ops.function == ops.code(event.function or ""))
            & (at >= (event.start_seconds + event.seconds) * 1e9)
        )
        first = at[after].min() if after.any() else None
        event.module = (
            min(ops.text(c) for c in np.unique(ops.label[after & (at == first)]).tolist())
            if first is not None
            else None
        )
    return compiles


def compiles_after(compiles: list[CompileEvent], step: int) -> list[CompileEvent]:
    """The compiles that fell in a step after `step`: the gate of `--max-compiles-after-step`."""
    return [c for c in compiles if c.step is not None and c.step > step]


def compile_seconds(compiles: list[CompileEvent]) -> dict[str, list[float]]:
    """Measured seconds of each function's compiles, in trace order."""
    seconds: dict[str, list[float]] = defaultdict(list)
    for event in compiles:
        seconds[event.function or "?"].append(event.seconds)
    return dict(seconds)


def dumped_compiles(
    compiles: list[CompileEvent], dumped: dict[str, list[int | None]]
) -> tuple[list[int | None], list[CompileEvent]]:
    """For each of the trace's `compiles`, the index of the module it made among its function's modules in
    the dump (`dumped`: module ids per function, in compile order), and the compiles that pair with none.
    A trace covers a window of the run, so the dump's modules outside it pair with nothing (that is no
    fault). The module a compile made is named by id (`CompileEvent.module`: the one that ran first after
    it); a compile whose module ran no kernel in the trace takes, in trace order, the next module of its
    function that no compile took, after the one its previous compile made."""
    at: list[int | None] = []
    unpaired: list[CompileEvent] = []
    taken: dict[str, set[int]] = defaultdict(set)
    for event in compiles:
        ids = dumped.get(event.function or "", [])
        made = file_module_id(event.module or "")
        at.append(ids.index(made) if made is not None and made in ids else None)
        if at[-1] is not None:
            taken[event.function or ""].add(at[-1])
    last: dict[str, int] = {}
    for position, event in enumerate(compiles):
        name = event.function or ""
        index = at[position]
        if index is None:
            index = _next_free(len(dumped.get(name, [])), last.get(name, -1), taken[name], event)
            if index is None:
                unpaired.append(event)
            else:
                taken[name].add(index)
            at[position] = index
        last[name] = index if index is not None else last.get(name, -1)
    return at, unpaired


def _next_free(count: int, after: int, taken: set[int], event: CompileEvent) -> int | None:
    """The first module index past `after` that no compile took, for a compile whose module is not named
    (one named by id that the dump does not have is another run's module: it pairs with none)."""
    if file_module_id(event.module or "") is not None:
        return None
    return next((i for i in range(after + 1, count) if i not in taken), None)


def paired_compile_seconds(
    dumped: dict[str, list[int | None]], compiles: list[CompileEvent]
) -> tuple[dict[str, tuple[float | None, ...]], list[CompileEvent]]:
    """Per function of a dump (`dumped`: its module ids in compile order), the measured seconds of the
    compile that made each module (None: compiled outside the trace), paired by `dumped_compiles`, and
    the trace's compiles that pair with no module of the dump."""
    at, unpaired = dumped_compiles(compiles, dumped)
    seconds: dict[str, list[float | None]] = {name: [None] * len(ids) for name, ids in dumped.items()}
    for event, index in zip(compiles, at):
        if index is not None:
            seconds[event.function or ""][index] = event.seconds
    return {name: tuple(found) for name, found in seconds.items()}, unpaired
