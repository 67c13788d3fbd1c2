"""Where the time goes: the one place the report reads `cost`, `profile` and the jax log by field name.

The report's time sections (step time per function, ops by time lost, roofline points, compiles on a
time axis) are built from the rows below, never from `ModuleCost`/`OpCost`/`ProfileReport` fields
directly, so a change of those results (per-execution counts, CUDA-graph attribution) is followed here.

* Step time of a function: measured, the profile's mean device time of the function a step over the
  steps without a compile it ran in (`FunctionTime.seconds_per_step`, its whole time where the trace has
  no steps), split by its ops' kinds (each op's time in steps over those steps), the rest "other" (kernels not placed on
  an op). Else the roofline estimate of its module compiled last (`ModuleCost.roofline_seconds`: every
  op at the chip's peak FLOP/s or HBM bandwidth, whichever is slower, as XLA's HloCostAnalysis counts
  FLOPs and bytes).
* Time lost by an op: measured, its time over its roofline time (`OpTime.lost_seconds`) per step;
  else, from the roofline alone, the time a fix removes: a copy's whole time, an unfused op's HBM
  round trip (its memory time), the padded share of a memory-bound op's bytes, a collective's time
  (lost where nothing overlaps it).
* Compiles: from the profile (start and seconds on the trace's clock), else the jax log (each ends at
  its line's time; laid back to back in log order where the log's format prints no time), else the
  dump (order only).
Stdlib only.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, NamedTuple

from xlainspect.analysis.chips import Chip
from xlainspect.analysis.collectives import KINDS as COLLECTIVE_KINDS
from xlainspect.analysis.fusions import NOT_COMPUTE
from xlainspect.analysis.profile.compiles import dumped_compiles
from xlainspect.analysis.profile.model import ProfileNote, StepSummary, StepTime
from xlainspect.hlo.opcodes import ASYNC_SUFFIXES, is_known_opcode

if TYPE_CHECKING:  # the analyses' results, read by field name below
    from xlainspect.analysis.cost import ModuleCost, OpCost
    from xlainspect.analysis.profile import ProfileReport
    from xlainspect.dump.jaxlog import JaxLog
    from xlainspect.dump.module import DumpModule

NOT_COSTED = "not costed"
"""The kind of a profiled op with no cost row (its module or op is not in the dump)."""
COPY_KINDS = frozenset({"copy", "transpose"})
OWN_KERNEL_KINDS = frozenset(
    {"dot", "convolution", "fft", "triangular-solve", "cholesky", "sort", "rng-bit-generator", "custom-call"}
)
"""Ops XLA runs as a library call or a kernel of their own, fused or not (cuBLAS/cuDNN/Eigen, sort and
FFT libraries: xla/service/gpu/ir_emitter_unnested.cc, xla/service/cpu/ir_emitter.cc): left outside a
fusion, they are not a fusion missed."""


@dataclass(slots=True)
class OpTiming:
    """One op as the report draws it: roofline (and measured) seconds per execution, FLOPs and bytes."""

    module: str
    function: str
    computation: str | None
    name: str
    kind: str
    flops: float
    bytes: int
    """Bytes moved, tile padding included (what the roofline divides by)."""
    logical_bytes: int | None
    """Without padding; None where only the padded figure is known (a profile op)."""
    roofline_seconds: float | None
    memory_seconds: float | None
    collective_seconds: float | None
    bound: str | None
    measured_seconds: float | None = None
    """Measured seconds per execution (`OpTime.seconds_per_execution`; a cuDNN call of several kernels is
    one execution); per kernel where the dump gives no executions; None without a profile."""
    per_step_seconds: float | None = None
    """Measured seconds a step, over the steps its module ran in (the trace's whole time where it
    found no steps)."""
    lost_seconds: float | None = None
    """Measured minus roofline, seconds a step (over the steps its module ran in)."""
    op_name: str | None = None
    source: str | None = None
    efficiency: float | None = None
    """`OpTime.efficiency`: roofline / measured seconds per execution, the one figure of how far an op is
    from its roofline ("N x its roofline" is its inverse)."""
    run_seconds: float | None = None
    """Measured seconds in the whole trace, one device's (`OpTime.total_seconds` over its devices): seconds
    a run."""
    lost_run_seconds: float | None = None
    """Measured minus roofline over the whole trace, one device's (`OpTime.lost_seconds` over its
    devices): seconds a run."""
    wait_seconds: float | None = None
    """A collective's wait for its last peer, seconds a step (`OpTime.wait_seconds_per_step`): time it
    loses to what it waits for, not to moving data."""
    wait_run_seconds: float | None = None
    """The same over the whole trace, one device's: seconds a run."""

    @property
    def intensity(self) -> float | None:
        return self.flops / self.bytes if self.flops > 0 and self.bytes > 0 else None

    @property
    def flops_per_second(self) -> float | None:
        """Achieved (measured) FLOP/s, else FLOP/s at the roofline."""
        seconds = self.measured_seconds or self.roofline_seconds
        return self.flops / seconds if self.flops > 0 and seconds else None

    @property
    def category(self) -> str | None:
        """What is to fix: "collective", "layout copy", "fusion missed", "padding", or None."""
        kind = _synchronous(self.kind)
        if kind in COLLECTIVE_KINDS or self.bound == "collective":
            return "collective"
        if kind in COPY_KINDS:
            return "layout copy"
        if is_known_opcode(self.kind) and self.kind not in NOT_COMPUTE and self.kind not in OWN_KERNEL_KINDS:
            return "fusion missed"
        if self.padding_share >= PADDING_SHARE and self.bound == "memory":
            return "padding"
        return None

    @property
    def padding_share(self) -> float:
        """The share of the op's bytes that is tile padding."""
        if self.logical_bytes is None or self.bytes <= 0:
            return 0.0
        return max(self.bytes - self.logical_bytes, 0) / self.bytes

    def roofline_loss(self) -> float:
        """Seconds per execution a fix removes, from the roofline alone (module docstring)."""
        category = self.category
        if category == "layout copy":
            return self.roofline_seconds or 0.0
        if category == "fusion missed":
            return self.memory_seconds or 0.0
        if category == "padding":
            return (self.memory_seconds or 0.0) * self.padding_share
        if category == "collective":
            return self.collective_seconds or self.roofline_seconds or 0.0
        return 0.0


def _synchronous(kind: str) -> str:
    """`collective-permute` for `collective-permute-done`: the op an async pair's half belongs to."""
    return next((kind.removesuffix(s) for s in ASYNC_SUFFIXES if kind.endswith(s)), kind)


PADDING_SHARE = 0.25
"""A memory-bound op whose bytes are at least this much tile padding is a padding finding."""


@dataclass(slots=True)
class FunctionTiming:
    """One function's step time: measured (profile) or the roofline estimate of its last module."""

    function: str
    seconds: float | None
    measured: bool
    module: str | None
    """The module the roofline estimate is of (the one compiled last)."""
    by_kind: dict[str, float] = field(default_factory=dict[str, float])
    """Seconds per op kind (fusion kind, collective, opcode), largest first."""
    bound: str | None = None


@dataclass(slots=True)
class CompileMark:
    """One compile of one function on the compile timeline."""

    function: str
    start_seconds: float
    seconds: float | None
    """None where only the order is known (the dump alone)."""
    recompile: bool


CompileSource = Literal["profile", "log_clock", "log_order", "dump"]
"""Where compile times come from: the profile, the jax log's lines' times (`log_clock`), the log's
durations back to back in its order (`log_order`: its lines carry no time), or the dump's order."""


@dataclass
class Timing:
    """What the time sections draw: per function, per op, per compile; `measured` says whether the times
    are the profile's (else the roofline's)."""

    functions: list[FunctionTiming]
    ops: list[OpTiming]
    compiles: list[CompileMark]
    compile_source: CompileSource
    """Where the compiles' times come from (`CompileSource`)."""
    measured: bool
    steps: int | None = None
    """Steps the profile found (None: no profile, or none found)."""
    chip: Chip | None = None
    """The chip the roofline is drawn for (None: no chip known)."""
    compile_seconds: dict[str, float] = field(default_factory=dict[str, float])
    """Per function, its compile seconds (all compiles); empty where none is known."""
    recompile_seconds: dict[str, float] = field(default_factory=dict[str, float])
    notes: list[ProfileNote] = field(default_factory=list[ProfileNote])
    step_times: list[StepTime] = field(default_factory=list[StepTime])
    """The profile's steps, each its wall, busy time and breakdown (`ProfileReport.steps`)."""
    step_summary: StepSummary | None = None
    """The step the user waits for (`ProfileReport.step_summary`); None without steps."""
    step_source: str | None = None
    """How the profile found its steps (`ProfileReport.step_source`)."""


# ---- the roofline estimate, from `module_cost` (run per module by the report's workers)


@dataclass(slots=True)
class ModuleTime:
    """What the report keeps of a module's `ModuleCost`: its roofline, seconds per op kind, top ops."""

    module: str
    function: str
    roofline_seconds: float | None
    bound: str | None
    by_kind: dict[str, float]
    ops: tuple[OpTiming, ...]
    chip: Chip | None


TOP_OPS = 40
"""Ops kept per module (the slowest at the roofline, and the largest losses)."""


def module_time(cost: ModuleCost) -> ModuleTime:
    """A `ModuleCost` (all ops) as the report keeps it."""
    by_kind: dict[str, float] = {}
    for op in cost.ops:
        if op.roofline_seconds:
            by_kind[op.kind] = by_kind.get(op.kind, 0.0) + op.roofline_seconds
    rows = [_op_of_cost(op, cost.function) for op in cost.ops]
    kept = {id(r): r for r in sorted(rows, key=lambda r: -(r.roofline_seconds or 0))[:TOP_OPS]}
    kept.update({id(r): r for r in sorted(rows, key=lambda r: -r.roofline_loss())[:TOP_OPS] if r.roofline_loss()})
    return ModuleTime(
        cost.module,
        cost.function,
        cost.roofline_seconds,
        cost.bound,
        dict(sorted(by_kind.items(), key=lambda kv: -kv[1])),
        tuple(kept.values()),
        cost.chip_figures,
    )


def _op_of_cost(op: OpCost, function: str) -> OpTiming:
    return OpTiming(
        op.module,
        function,
        op.computation,
        op.name,
        op.kind,
        op.flops,
        op.padded_bytes_read + op.padded_bytes_written,
        op.bytes_read + op.bytes_written,
        op.roofline_seconds,
        op.memory_seconds,
        op.collective_seconds,
        op.bound,
        op_name=op.op_name,
        source=op.source,
    )


def estimated(modules: list[ModuleTime], order: dict[str, int]) -> tuple[list[FunctionTiming], list[OpTiming]]:
    """Per function the roofline of its module compiled last (highest `order`), and the ops of those modules."""
    last: dict[str, ModuleTime] = {}
    for module in modules:
        kept = last.get(module.function)
        if kept is None or order.get(module.module, 0) >= order.get(kept.module, 0):
            last[module.function] = module
    functions = [
        FunctionTiming(m.function, m.roofline_seconds, False, m.module, m.by_kind, m.bound)
        for m in last.values()
        if m.roofline_seconds is not None
    ]
    ops = [op for m in last.values() for op in m.ops]
    return sorted(functions, key=lambda f: -(f.seconds or 0)), ops


# ---- measured, from `profile`


def measured(
    report: ProfileReport, known: dict[tuple[str, str], OpTiming]
) -> tuple[list[FunctionTiming], list[OpTiming]]:
    """Per function its measured time a step, split by its ops' kinds, and the bound that holds the most
    of it; an op `known` from the dump's cost (by module and name) brings its logical bytes and times."""
    functions: dict[str, FunctionTiming] = {}
    bounds: dict[str, dict[str, float]] = {}
    ops: list[OpTiming] = []
    ran = {f.function: sum(1 for seconds in f.seconds_by_step if seconds > 0) for f in report.functions}
    for op in report.ops:
        per_step = op.seconds_per_step if op.seconds_per_step is not None else op.total_seconds
        # its share of its function's step: over the steps the function ran in, not only its module's
        share = (
            per_step * op.steps / ran[op.function]
            if op.seconds_per_step is not None and ran.get(op.function)
            else per_step
        )
        per_run = op.seconds_per_execution or (op.total_seconds / op.kernels if op.kernels else None)
        lost = op.lost_seconds_per_step if op.lost_seconds_per_step is not None else op.lost_seconds
        cost = known.get((op.module, op.name))
        row = OpTiming(
            op.module,
            op.function,
            cost.computation if cost else None,
            op.name,
            op.kind or NOT_COSTED,
            op.flops or 0.0,
            op.bytes_accessed or 0,
            cost.logical_bytes if cost else None,
            op.roofline_seconds,
            cost.memory_seconds if cost else None,
            cost.collective_seconds if cost else None,
            op.bound,
            per_run,
            per_step,
            lost,
            op.op_name,
            op.source,
            op.efficiency,
            op.total_seconds / op.devices,
            op.lost_seconds / op.devices if op.lost_seconds is not None else None,
            op.wait_seconds_per_step,
            op.wait_seconds / op.devices if op.wait_seconds is not None else None,
        )
        ops.append(row)
        timing = functions.setdefault(op.function, FunctionTiming(op.function, 0.0, True, None))
        timing.seconds = (timing.seconds or 0.0) + share
        timing.by_kind[row.kind] = timing.by_kind.get(row.kind, 0.0) + share
        if op.bound is not None:
            bounds.setdefault(op.function, {}).setdefault(op.bound, 0.0)
            bounds[op.function][op.bound] += share
    for name, seconds in _device_time(report).items():  # the profile's own figure: every kernel of it
        functions.setdefault(name, FunctionTiming(name, 0.0, True, None)).seconds = seconds
    for timing in functions.values():
        timing.by_kind = dict(sorted(timing.by_kind.items(), key=lambda kv: -kv[1]))
        by_bound = bounds.get(timing.function)
        timing.bound = max(by_bound, key=by_bound.__getitem__) if by_bound else None
    return sorted(functions.values(), key=lambda f: -(f.seconds or 0)), ops


def _device_time(report: ProfileReport) -> dict[str, float]:
    """Per function, the profile's mean device time a step over the steps without a compile it ran in
    (`ProfileReport.functions`: every kernel of the function, those not placed on an op included), its
    whole time without steps."""
    found: dict[str, float] = {}
    for function in report.functions:
        per_step = function.seconds_per_step
        found[function.function] = per_step if per_step is not None else function.seconds
    return found


def profile_compiles(report: ProfileReport, dumped: dict[str, list[int | None]]) -> list[CompileMark]:
    """The profile's compiles, on the trace's clock; a recompile where the module it made is not its
    function's first in the dump (`dumped`: module ids per function, in compile order; paired by
    `dumped_compiles`), or, paired with none, where the trace compiled the function before."""
    at, _ = dumped_compiles(report.compiles, dumped)
    seen: set[str] = set()
    marks: list[CompileMark] = []
    for event, index in sorted(zip(report.compiles, at), key=lambda pair: pair[0].start_seconds):
        function = event.function or event.name
        again = index > 0 if index is not None else function in seen
        marks.append(CompileMark(function, event.start_seconds, event.seconds, again))
        seen.add(function)
    return marks


def log_compiles(log: JaxLog) -> tuple[list[CompileMark], CompileSource]:
    """The jax log's compiles on its own clock (each ends at its line's time: start = end - seconds,
    from the first start), or back to back in log order where a line has no time; a hit is a compile
    too. The second value says which."""
    seen: set[str] = set()
    logged = log.compiles
    starts = [c.finished_at - c.seconds for c in logged if c.finished_at is not None and c.seconds is not None]
    clocked = len(starts) == len(logged)  # every line has its time
    marks: list[CompileMark] = []
    start = 0.0
    for index, compile_ in enumerate(logged):
        begins = starts[index] - min(starts) if clocked else start
        marks.append(CompileMark(compile_.module, begins, compile_.seconds, compile_.module in seen))
        seen.add(compile_.module)
        start += compile_.seconds or 0.0
    return marks, "log_clock" if clocked else "log_order"


def dump_compiles(modules: list[DumpModule]) -> list[CompileMark]:
    """The dump's modules in module-id order: one compile each, without seconds."""
    seen: set[str] = set()
    marks: list[CompileMark] = []
    ordered = sorted(modules, key=lambda m: (m.module_id is None, m.module_id or 0))
    for index, module in enumerate(ordered):
        function = module.name or module.label
        marks.append(CompileMark(function, float(index), None, function in seen))
        seen.add(function)
    return marks


def compile_totals(marks: list[CompileMark]) -> tuple[dict[str, float], dict[str, float]]:
    """Per function: seconds of all its compiles, and of its recompiles (every compile after the first)."""
    total: dict[str, float] = {}
    again: dict[str, float] = {}
    for mark in marks:
        if mark.seconds is None:
            continue
        total[mark.function] = total.get(mark.function, 0.0) + mark.seconds
        if mark.recompile:
            again[mark.function] = again.get(mark.function, 0.0) + mark.seconds
    return total, again


class OpLoss(NamedTuple):
    """An op and the seconds it loses a step and, measured, in the whole trace (a run)."""

    op: OpTiming
    seconds: float
    run_seconds: float | None = None


def losses(ops: list[OpTiming], measured_times: bool) -> list[OpLoss]:
    """Ops with the seconds they lose a step and a run, largest first (by a run's where measured: an op of
    a module that ran in some steps only loses its seconds a step in those): measured loss with a profile
    (an op with no roofline that a fix removes whole: its time; a collective's less its wait for the last
    peer), else the roofline's a step (only ops a fix applies to)."""
    found: list[OpLoss] = []
    for op in ops:
        run = None
        if measured_times:
            lost, run = op.lost_seconds, op.lost_run_seconds
            if lost is None and op.category is not None:
                lost, run = op.per_step_seconds, op.run_seconds
            lost, run = _less_wait(op, lost, run)
        else:
            lost = op.roofline_loss()
        if lost and lost > 0:
            found.append(OpLoss(op, lost, run))
    return sorted(found, key=lambda found_loss: -(found_loss.run_seconds or found_loss.seconds))


def _less_wait(op: OpTiming, lost: float | None, run: float | None) -> tuple[float | None, float | None]:
    """A collective's loss without its wait for the last peer: that time is what it waits for (a
    straggler's), which moving less data or overlapping would not remove."""
    if lost is None or op.wait_seconds is None:
        return lost, run
    less_run = run - (op.wait_run_seconds or 0.0) if run is not None else None
    return max(0.0, lost - op.wait_seconds), max(0.0, less_run) if less_run is not None else None


def timing(
    modules: list[ModuleTime],
    dump_modules: list[DumpModule],
    profiled: ProfileReport | None = None,
    log: JaxLog | None = None,
) -> Timing:
    """The time sections' rows: measured with a profile (`ProfileReport`), else the roofline estimate;
    compiles from the profile, else the jax log (`JaxLog`), else the dump's module order (`dump_modules`,
    whose count per function also says which of a trace's compiles are recompiles)."""
    chip = next((m.chip for m in modules if m.chip is not None), None)
    if profiled is not None:
        known = {(op.module, op.name): op for m in modules for op in m.ops}
        functions, ops = measured(profiled, known)
        chip = profiled.chip or chip
    else:
        order = {m.label: m.module_id or 0 for m in dump_modules}
        functions, ops = estimated(modules, order)
    if profiled is not None and profiled.compiles:
        dumped: dict[str, list[int | None]] = defaultdict(list)
        for module in sorted(dump_modules, key=lambda m: (m.module_id is None, m.module_id or 0)):
            dumped[module.name or module.label].append(module.module_id)
        marks, where = profile_compiles(profiled, dumped), "profile"
    elif log is not None:
        marks, where = log_compiles(log)
    else:
        marks, where = dump_compiles(dump_modules), "dump"
    total, again = compile_totals(marks)
    steps = len(profiled.steps) if profiled is not None and profiled.steps else None
    notes = list(profiled.notes) if profiled is not None else []
    found = Timing(functions, ops, marks, where, profiled is not None, steps, chip, total, again, notes)
    if profiled is not None:
        found.step_times, found.step_summary = profiled.steps, profiled.step_summary
        found.step_source = profiled.step_source
    return found


def run_seconds(steps: list[StepTime]) -> dict[str, float]:
    """Per category of a step's breakdown, its seconds over every step: what the traced run paid."""
    total: dict[str, float] = defaultdict(float)
    for step in steps:
        for category, seconds in step.breakdown.items():
            total[category] += seconds
    return dict(total)
