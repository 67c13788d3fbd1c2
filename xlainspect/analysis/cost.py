"""What one call of a module executes, op by op: FLOPs, transcendentals and bytes, with XLA's static
`HloCostAnalysis` figures beside (`xla_*`), and the roofline time of each op and module on a chip.

XLA's count (`_Analysis`) follows xla/service/hlo_cost_analysis.cc, so that a module's `xla_*` totals
equal what jaxlib's `hlo_module_cost_analysis` reports for the same text:

* elementwise ops count one per output element: as `transcendentals` for XLA's set (erf, exp,
  log, logistic, power, sqrt, cbrt, rsqrt, tanh, sin, cos, tan, expm1, log1p, atan2, and the newer
  acos, acosh, asin, asinh, atanh, cosh, sinh, as jaxlib 0.10.2 counts them), as `flops`
  for the rest (compare, select, clamp, convert, bitcast-convert, reduce-precision included);
  copy, reshape, broadcast, transpose, slices, pad, concatenate, gather, iota count none.
* dot: 2 x elements(result) x the product of the lhs contracting dims; convolution: 2 x
  (input features / feature groups) x output features x (batch / batch groups) x the valid
  (output position, kernel tap) pairs of each spatial dim.
* reduce: the reducer's cost x (elements(input) - elements(output)); reduce-window: x (window - 1)
  x output elements (XLA's reduce-then-broadcast window is special-cased); map: x output elements;
  select-and-scatter: select x source x (window - 1) + scatter x source; scatter: x update elements.
* sort: n x ceil(log2 n); fft: 8 x prod(floor(log2 length)) x elements; rng: transcendentals.
* all-reduce: one flop per output element; the other collectives none.
* fusion: the sum of its fused instructions; `call` and `async-start`: the called computation;
  `while`: body + condition once; `conditional`: the largest branch, per property.
* custom-call: -1 flops and -1 bytes each, XLA's "unknown".

Bytes: operand bytes + output bytes, zero for parameter, constant, get-tuple-element, bitcast, a
transpose that is a bitcast, after-all, add-dependency, domain; tuple its index table; slice and
dynamic-slice the output twice; dynamic-update-slice the update twice; a fusion its outputs plus
what it reads of each parameter (`FusionParameterReadBytes`: a parameter read only through
slices is charged the slices) plus large constants inside. Sizes are XLA's CPU size function (a
tuple is a table of 8-byte pointers), logical or (`padded_*`) with the layout's tile padding.

What one call executes (`_Executed`) is that count but for control flow and custom calls: a while
loop's body and condition times its trip count (`trip_count`: `known_trip_count`, else
while_loop_analysis.cc's induction-variable pattern; once where none is known), a conditional's most
expensive branch, and custom calls by target as xla/service/gpu/model/gpu_hlo_cost_analysis.cc counts
them (cuBLAS gemms, cuDNN convolutions and fused attention, Triton kernels; see `_executed_custom_call`);
a target without a rule counts 0 and is listed. Each op runs `executions` times per call, the product
of the trip counts along its call chain.

Rows are the instructions of the entry and of the computations it runs as control flow, fusions
as one op.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, TypeAlias, TypedDict, cast

from xlainspect.analysis.chips import Chip
from xlainspect.analysis.collectives import collectives
from xlainspect.analysis.lookup import control_flow_computations, instruction_index, module_label, operand_shape, users
from xlainspect.errors import HloParseError
from xlainspect.hlo.attributes import backend_config_kind, decode_json, known_trip_count
from xlainspect.hlo.model import Computation, Instruction, Module
from xlainspect.hlo.shape import Shape

TRANSCENDENTAL = frozenset(
    {
        "erf",
        "exponential",
        "log",
        "logistic",
        "power",
        "sqrt",
        "cbrt",
        "rsqrt",
        "tanh",
        "sine",
        "cosine",
        "tan",
        "exponential-minus-one",
        "log-plus-one",
        "atan2",
        "acos",
        "acosh",
        "asin",
        "asinh",
        "atanh",
        "cosh",
        "sinh",
    }
)
ELEMENTWISE = frozenset(
    {
        "abs",
        "add",
        "and",
        "bitcast-convert",
        "ceil",
        "clamp",
        "compare",
        "complex",
        "convert",
        "count-leading-zeros",
        "divide",
        "floor",
        "imag",
        "is-finite",
        "maximum",
        "minimum",
        "multiply",
        "negate",
        "not",
        "or",
        "popcnt",
        "real",
        "reduce-precision",
        "remainder",
        "round-nearest-afz",
        "round-nearest-even",
        "select",
        "shift-left",
        "shift-right-arithmetic",
        "shift-right-logical",
        "sign",
        "stochastic-convert",
        "subtract",
        "xor",
    }
)
#: Ops XLA charges no bytes: they forward pointers or emit no code.
NO_BYTES = frozenset({"parameter", "constant", "get-tuple-element", "bitcast", "after-all", "add-dependency", "domain"})
#: Ops whose cost is that of the computations they run; their insides are rows of their own.
CONTAINERS = frozenset({"while", "conditional", "call", "async-start", "async-update", "async-done"})
POINTER_BYTES = 8
"""A tuple's size under XLA's CPU size function (`ShapeUtil::ByteSizeOf(shape, sizeof(void*))`)."""


class Cost(NamedTuple):
    """XLA's properties of one instruction or computation: FLOPs, transcendentals and the bytes accessed
    (of which `written` are outputs), logical and with tile padding. A tuple: big modules make millions."""

    flops: float = 0
    transcendentals: float = 0
    bytes: int = 0
    written: int = 0
    padded_bytes: int = 0
    padded_written: int = 0

    def __add__(self, other: Cost) -> Cost:  # type: ignore[override]  (elementwise, not concatenation)
        return Cost(
            self[0] + other[0],
            self[1] + other[1],
            self[2] + other[2],
            self[3] + other[3],
            self[4] + other[4],
            self[5] + other[5],
        )

    def scaled(self, factor: float) -> Cost:
        """The flops and transcendentals of `factor` applications (bytes are the caller's own)."""
        return Cost(self.flops * factor, self.transcendentals * factor)

    def times(self, factor: int) -> Cost:
        """Every property of `factor` executions (a loop body's bytes are moved on each trip)."""
        return Cost(
            self.flops * factor,
            self.transcendentals * factor,
            self.bytes * factor,
            self.written * factor,
            self.padded_bytes * factor,
            self.padded_written * factor,
        )


@dataclass(slots=True)
class OpCost:
    """One op's cost per call of its module (what it executes: per execution times `executions`),
    XLA's static count beside it, and its roofline time per call on a chip."""

    module: str
    computation: str
    name: str
    opcode: str
    kind: str
    """Fusion kind (backend kind where printed), collective kind, custom-call target, or the opcode."""
    dtype: str
    """The output element type the chip's peak is chosen by."""
    executions: int
    """Runs per call: the product of trip counts along its call chain (0 in a conditional's branch
    that is not counted)."""
    trip_count: int | None
    """Trips of the innermost while loop it runs in (1 outside loops); None where a loop on its chain
    has no known count (it is counted once)."""
    flops: float
    transcendentals: float
    bytes_read: int
    bytes_written: int
    padded_bytes_read: int
    padded_bytes_written: int
    flops_per_execution: float
    bytes_per_execution: int
    """Bytes read and written by one execution (logical)."""
    xla_flops: float
    """XLA's HloCostAnalysis of the op (once; -1 for a custom call, XLA's "unknown")."""
    xla_transcendentals: float
    xla_bytes_accessed: int
    arithmetic_intensity: float | None
    """FLOPs per byte moved (padded bytes); None when no bytes move."""
    collective_bytes: int | None
    """`bytes_per_device` of a collective (from `collectives`), per execution."""
    compute_seconds: float | None
    memory_seconds: float | None
    collective_seconds: float | None
    roofline_seconds: float | None
    """Per call: the largest of the three, times `executions`; None without a chip."""
    bound: str | None
    """compute, memory or collective."""
    op_name: str | None
    source: str | None


@dataclass(slots=True)
class Loop:
    """A while loop of the module: its trip count (None: not known, counted once) and its runs per call."""

    name: str
    computation: str
    trip_count: int | None
    executions: int
    op_name: str | None


@dataclass(slots=True)
class ModuleCost:
    """A module's cost per call, XLA's static count beside it, its roofline time and bound, and its ops."""

    module: str
    function: str
    flops: float
    """FLOPs one call executes (loops times their trip counts, custom calls by target)."""
    transcendentals: float
    bytes_accessed: int
    padded_bytes_accessed: int
    xla_flops: float
    """XLA's `flops` for the module (HloCostAnalysis over the entry: loop bodies once, custom calls -1)."""
    xla_transcendentals: float
    xla_bytes_accessed: int
    roofline_seconds: float | None
    """Per call: the sum of the ops' roofline times, each times its executions."""
    bound: str | None
    """The bound that holds the most of that time."""
    chip: str | None
    """The chip's key (`h100`, `tpu-v5e`; `custom` for --peak-flops/--hbm-bandwidth alone)."""
    chip_figures: Chip | None = field(hash=False, repr=False)
    """The figures the times were computed with (overrides included)."""
    ops: list[OpCost] = field(hash=False, repr=False)
    """The counted ops, slowest first (the `top` asked for)."""
    loops: list[Loop] = field(default_factory=list[Loop], hash=False, repr=False)
    branches: dict[str, int] = field(default_factory=dict[str, int], hash=False, repr=False)
    """Conditional name -> the index of the branch counted (the most expensive)."""
    not_counted: dict[str, int] = field(default_factory=dict[str, int], hash=False, repr=False)
    """Custom-call target -> calls counted as 0 (no rule for the target)."""


def module_cost(module: Module, chip: Chip | None, top: int | None = None) -> ModuleCost:
    """Totals per call and the `top` slowest ops (all with None) of one module (definitions in the
    module docstring). Every op is timed for the module's roofline; rows are built for the top ones
    only, since a big module has hundreds of thousands of ops."""
    static = _Analysis(module)
    executed = _Executed(static)
    total, xla = executed.computation(module.entry), static.computation(module.entry)
    runs, trips = executed.executions(), _innermost_trip_counts(executed)
    sent = _collective_bytes(module)
    timed: list[_Timed] = []
    for name in control_flow_computations(module):
        computation = module.computations_by_name[name]
        index = static.index(computation)
        for instruction in computation.instructions:
            if instruction.opcode in CONTAINERS:
                continue
            cost = executed.instruction(instruction, index)
            if cost == _NO_COST and instruction.name not in sent and instruction.opcode != "custom-call":
                continue
            bytes_sent = sent.get(instruction.name)
            times = runs.get(name, 0)
            seconds = _times(cost, bytes_sent, _dtype(instruction.shape), chip, times)
            timed.append((seconds, computation, instruction, cost, bytes_sent, times, trips.get(name, 1), index))
    timed.sort(key=lambda t: (-(t[0][3] or 0), -t[3].flops * t[5], -t[3].padded_bytes * t[5]))
    seconds, bound = _module_time([t[0] for t in timed], chip)
    label = module_label(module)
    rows = [_row(module, static, label, *entry) for entry in (timed[:top] if top is not None else timed)]
    return ModuleCost(
        label,
        module.name,
        total.flops,
        total.transcendentals,
        total.bytes,
        total.padded_bytes,
        xla.flops,
        xla.transcendentals,
        xla.bytes,
        seconds,
        bound,
        chip.key if chip else None,
        chip,
        rows,
        _loops(executed, runs),
        dict(executed.branches),
        dict(executed.not_counted),
    )


def op_executions(module: Module) -> dict[str, tuple[int, Cost]]:
    """Instruction name -> (executions per call, the cost of one execution) of every op `cost` counts
    (outside fusion bodies): what a profile's kernel counts per step are checked against."""
    static = _Analysis(module)
    executed = _Executed(static)
    executed.computation(module.entry)
    runs = executed.executions()
    result: dict[str, tuple[int, Cost]] = {}
    for name in control_flow_computations(module):
        computation = module.computations_by_name[name]
        index = static.index(computation)
        for instruction in computation.instructions:
            if instruction.opcode not in CONTAINERS:
                result[instruction.name] = (runs.get(name, 0), executed.instruction(instruction, index))
    return result


def _innermost_trip_counts(executed: _Executed) -> dict[str, int | None]:
    """Computation -> the trip count of the innermost while loop it runs in (1 outside loops; None when a
    loop on its chain has no known count)."""
    trips: dict[str, int | None] = {}

    def visit(computation: Computation, trip: int | None, unknown: bool) -> None:
        if computation.name in trips:
            return
        trips[computation.name] = None if unknown else trip
        for instruction in computation.instructions:
            for callee in _run_callees(instruction):
                inner, lost = trip, unknown
                if instruction.opcode == "while":
                    inner = executed.trip_counts.get(instruction.name)
                    lost = unknown or inner is None
                visit(executed.static.named(callee), inner, lost)

    visit(executed.module.entry, 1, False)
    return trips


def _loops(executed: _Executed, runs: dict[str, int]) -> list[Loop]:
    loops: list[Loop] = []
    for name in control_flow_computations(executed.module):
        for instruction in executed.module.computations_by_name[name].instructions:
            if instruction.opcode == "while" and instruction.name in executed.trip_counts:
                trip = executed.trip_counts[instruction.name]
                loops.append(Loop(instruction.name, name, trip, runs.get(name, 0), instruction.op_name))
    return loops


_NO_COST = Cost()
Times: TypeAlias = tuple[float | None, float | None, float | None, float | None, str | None]
"""(compute, memory, collective, roofline, bound), each None without a chip."""
_UNTIMED: Times = (None, None, None, None, None)
_Timed: TypeAlias = tuple[Times, Computation, Instruction, Cost, int | None, int, int | None, dict[str, Instruction]]
"""An op timed for the module's roofline: (times, computation, instruction, cost of one execution, bytes
it sends, executions, trip count, the computation's instruction index): `_row`'s arguments after the module's."""


def control_flow_costs(
    module: Module, wanted: Callable[[Instruction], bool]
) -> Iterator[tuple[Computation, Instruction, Cost]]:
    """XLA's cost of each instruction `wanted` selects outside fusion bodies (the entry and the
    computations it runs as control flow): (computation, instruction, Cost), each counted once."""
    return _Analysis(module).control_flow_costs(wanted)


def _times(cost: Cost, sent: int | None, dtype: str, chip: Chip | None, executions: float = 1) -> Times:
    """Seconds per call at the chip's peak FLOP/s for the output dtype, its HBM and its interconnect
    bandwidth, for `executions` runs; the roofline is the largest and names the bound."""
    if chip is None or cost.flops < 0 or cost.bytes < 0:
        return _UNTIMED
    compute = cost.flops * executions / chip.peak_flops(dtype)
    memory = cost.padded_bytes * executions / chip.hbm_bandwidth
    collective = sent * executions / chip.ici_bandwidth if sent is not None else 0.0
    if compute >= memory and compute >= collective:
        return compute, memory, collective, compute, "compute"
    if memory >= collective:
        return compute, memory, collective, memory, "memory"
    return compute, memory, collective, collective, "collective"


def _module_time(times: list[Times], chip: Chip | None) -> tuple[float | None, str | None]:
    """The ops' roofline times summed, and the bound that holds the most of it."""
    if chip is None:
        return None, None
    by_bound: dict[str, float] = {}
    for _, _, _, seconds, bound in times:
        if bound is not None and seconds is not None:  # both or neither (`_times`)
            by_bound[bound] = by_bound.get(bound, 0.0) + seconds
    if not by_bound:
        return 0.0, None
    return sum(by_bound.values()), max(by_bound, key=by_bound.__getitem__)


def _collective_bytes(module: Module) -> dict[str, int]:
    """Instruction name -> bytes each device sends; an async wrapper's inner collective is named too."""
    sent: dict[str, int] = {}
    for row in collectives(module, count_executions=False):
        if row.bytes_per_device is None:
            continue
        sent[row.name] = row.bytes_per_device
        if row.opcode == "async-start":
            start = instruction_index(module.computations_by_name[row.computation])[row.name]
            root = module.called_root(start)
            if root is not None:
                sent[root.name] = row.bytes_per_device
    return sent


def _row(
    module: Module,
    static: _Analysis,
    label: str,
    times: Times,
    computation: Computation,
    instruction: Instruction,
    cost: Cost,
    sent: int | None,
    executions: int,
    trip: int | None,
    index: dict[str, Instruction],
) -> OpCost:
    compute, memory, collective, roofline, bound = times
    moved = cost.padded_bytes
    xla = static.instruction(instruction, index)
    return OpCost(
        module=label,
        computation=computation.name,
        name=instruction.name,
        opcode=instruction.opcode,
        kind=_kind(instruction),
        dtype=_dtype(instruction.shape),
        executions=executions,
        trip_count=trip,
        flops=cost.flops * executions,
        transcendentals=cost.transcendentals * executions,
        bytes_read=(cost.bytes - cost.written) * executions,
        bytes_written=cost.written * executions,
        padded_bytes_read=(cost.padded_bytes - cost.padded_written) * executions,
        padded_bytes_written=cost.padded_written * executions,
        flops_per_execution=cost.flops,
        bytes_per_execution=cost.bytes,
        xla_flops=xla.flops,
        xla_transcendentals=xla.transcendentals,
        xla_bytes_accessed=xla.bytes,
        arithmetic_intensity=cost.flops / moved if moved > 0 else None,
        collective_bytes=sent,
        compute_seconds=compute,
        memory_seconds=memory,
        collective_seconds=collective if sent is not None else None,
        roofline_seconds=roofline,
        bound=bound,
        op_name=instruction.op_name,
        source=module.source_of(instruction),
    )


def _kind(instruction: Instruction) -> str:
    if instruction.opcode == "fusion":
        attributes = instruction.attributes
        return backend_config_kind(attributes.get("backend_config")) or attributes.get("kind", "fusion")
    if instruction.opcode == "custom-call":
        return instruction.custom_call_target or "custom-call"
    return instruction.opcode.removesuffix("-start")


def _dtype(shape: Shape | None) -> str:
    if shape is not None and not shape.is_tuple:
        return shape.dtype
    leaf = next((s for s in shape.leaves() if s.is_array), None) if shape is not None else None
    return leaf.dtype if leaf is not None else ""


_SIZES: dict[int, tuple[Shape, tuple[int, int], tuple[int, int]]] = {}


def _sizes(shape: Shape) -> tuple[tuple[int, int], tuple[int, int]]:
    """(as an operand, as an output) of a shape, memoised by identity: a module repeats a few hundred
    shapes and the parser shares their objects (hashing a Shape costs more than a look-up by id)."""
    entry = _SIZES.get(id(shape))
    if entry is None or entry[0] is not shape:
        if len(_SIZES) > 65536:
            _SIZES.clear()
        entry = _SIZES[id(shape)] = (shape, _operand_size(shape), _output_size(shape))
    return entry[1], entry[2]


def _size(shape: Shape) -> tuple[int, int]:
    """(logical, padded) bytes under XLA's CPU size function: a tuple is its pointer table."""
    return _sizes(shape)[0]


def _leaves_size(shape: Shape) -> tuple[int, int]:
    """(logical, padded) bytes of every array in the shape: what an instruction writes."""
    return _sizes(shape)[1]


def _operand_size(shape: Shape) -> tuple[int, int]:
    if shape.is_tuple:
        table = POINTER_BYTES * len(shape.tuple_shapes)
        return table, table
    if shape.dtype == "opaque":
        return POINTER_BYTES, POINTER_BYTES
    return shape.logical_bytes, shape.padded_bytes


def _output_size(shape: Shape) -> tuple[int, int]:
    if not shape.is_tuple:
        return _operand_size(shape)
    sizes = [_operand_size(leaf) for leaf in shape.leaves()]
    return sum(s[0] for s in sizes), sum(s[1] for s in sizes)


def _bytes(read: list[tuple[int, int]], written: tuple[int, int]) -> Cost:
    logical = sum(r[0] for r in read) + written[0]
    padded = sum(r[1] for r in read) + written[1]
    return Cost(bytes=logical, written=written[0], padded_bytes=padded, padded_written=written[1])


#: What malformed numbers or indices in an attribute raise while counting (a shape left out or a
#: computation missing is checked where it is needed: any other exception is a bug and surfaces).
_MALFORMED = (ValueError, IndexError, ZeroDivisionError, RecursionError)


class _Uncountable(Exception):
    """A shape, attribute or computation the count needs is missing from the text."""


def _operand(instruction: Instruction, k: int, index: dict[str, Instruction]) -> Shape:
    """`operand_shape`, or _Uncountable when the text leaves it for XLA to infer."""
    shape = operand_shape(instruction, k, index)
    if shape is None:
        raise _Uncountable(f"the shape of operand {k} ({instruction.operands[k]}) is not known")
    return shape


def _shape(instruction: Instruction) -> Shape:
    """The instruction's shape, or _Uncountable when the text leaves it for XLA to infer."""
    if instruction.shape is None:
        raise _Uncountable(f"the shape of {instruction.name} is not printed")
    return instruction.shape


def _root(computation: Computation) -> Instruction:
    """The computation's root, or _Uncountable for a computation without instructions."""
    root = computation.root
    if root is None:
        raise _Uncountable(f"computation {computation.name} has no instructions")
    return root


class _Analysis:
    """HloCostAnalysis over one module: per-instruction costs, computations' sums cached by name."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self._indexes: dict[str, dict[str, Instruction]] = {}
        self._sums: dict[tuple[str, bool], Cost] = {}
        self._users: dict[str, dict[str, list[Instruction]]] = {}
        self._costs: dict[int, Cost] = {}

    def index(self, computation: Computation) -> dict[str, Instruction]:
        if computation.name not in self._indexes:
            self._indexes[computation.name] = instruction_index(computation)
        return self._indexes[computation.name]

    def control_flow_costs(
        self, wanted: Callable[[Instruction], bool]
    ) -> Iterator[tuple[Computation, Instruction, Cost]]:
        """(computation, instruction, cost) for each instruction `wanted` selects in the entry and the
        computations it runs as control flow."""
        for name in control_flow_computations(self.module):
            computation = self.module.computations_by_name[name]
            index = self.index(computation)
            for instruction in computation.instructions:
                if wanted(instruction):
                    yield computation, instruction, self.instruction(instruction, index)

    def named(self, name: str) -> Computation:
        computation = self.module.computations_by_name.get(_strip(name))
        if computation is None:
            raise _Uncountable(f"no computation named {name!r} in the module")
        return computation

    def called(self, instruction: Instruction, position: int = 0) -> Computation:
        names = instruction.called_computations
        if position >= len(names):
            raise _Uncountable("it names no computation to call")
        return self.named(names[position])

    def computation(self, computation: Computation, flops_only: bool = False) -> Cost:
        """The sum over every instruction of the computation (XLA's `ProcessSubcomputation`).

        `flops_only`: for fused computations and reducers, whose bytes XLA never uses, the
        elementwise ops skip their bytes (most of the work on a big module)."""
        key = (computation.name, flops_only)
        if key not in self._sums:
            index = self.index(computation)
            total = _NO_COST
            for instruction in computation.instructions:
                total += self.instruction(instruction, index, flops_only)
            self._sums[key] = total
        return self._sums[key]

    def instruction(self, instruction: Instruction, index: dict[str, Instruction], flops_only: bool = False) -> Cost:
        """XLA's cost of one instruction, once per instruction (the entry's are asked for twice)."""
        if flops_only:
            return self._evaluate(instruction, index, flops_only)
        cost = self._costs.get(id(instruction))
        if cost is None:
            cost = self._costs[id(instruction)] = self._evaluate(instruction, index, flops_only)
        return cost

    def _evaluate(self, instruction: Instruction, index: dict[str, Instruction], flops_only: bool) -> Cost:
        try:
            if instruction.shape is None:
                raise _Uncountable("its shape is not printed")
            return self._count(instruction, instruction.shape, index, flops_only)
        except _MALFORMED + (_Uncountable,) as error:
            # Text XLA's parser infers from (a shape left out) or attributes it would reject: name the place.
            raise HloParseError(
                f"cannot count {instruction.name} ({instruction.opcode}) as XLA's cost analysis "
                f"does: {error} (a shape, attribute or computation it needs is missing or malformed)",
                self.module.path,
                instruction.line,
            ) from None

    def _count(self, instruction: Instruction, shape: Shape, index: dict[str, Instruction], flops_only: bool) -> Cost:
        opcode = instruction.opcode
        handler = _HANDLERS.get(opcode)
        if handler is None and opcode.endswith("-start"):
            handler = _HANDLERS.get(opcode.removesuffix("-start"))  # async sugar: `reduce-scatter-start`
        if handler is not None:
            return handler(self, instruction, index)
        flops, transcendentals = _compute(opcode, shape)
        if flops_only:
            return Cost(flops, transcendentals)
        return self._default(instruction, shape, index, flops, transcendentals)

    def default_bytes(self, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
        """Every operand read whole, the output written whole (XLA's `Preprocess`)."""
        return self._default(instruction, _shape(instruction), index, 0, 0)

    def _default(
        self,
        instruction: Instruction,
        shape: Shape,
        index: dict[str, Instruction],
        flops: float,
        transcendentals: float,
    ) -> Cost:
        if instruction.opcode in NO_BYTES or _is_bitcast_transpose(instruction, index):
            return Cost(flops, transcendentals)
        read = padded_read = 0
        for position in range(len(instruction.operands)):
            logical, padded = _size(_operand(instruction, position, index))
            read += logical
            padded_read += padded
        written, padded_written = _leaves_size(shape)
        return Cost(flops, transcendentals, read + written, written, padded_read + padded_written, padded_written)

    def users(self, computation: Computation) -> dict[str, list[Instruction]]:
        """Operand name -> distinct users, in printed order (XLA's `users()`), per fused computation."""
        if computation.name not in self._users:
            self._users[computation.name] = users(computation)
        return self._users[computation.name]


def _compute(opcode: str, shape: Shape) -> tuple[int, int]:
    """(flops, transcendentals) of the elementwise ops: one per output element; none for the rest."""
    if opcode in ELEMENTWISE:
        return shape.num_elements, 0
    if opcode in TRANSCENDENTAL:
        return 0, shape.num_elements
    return 0, 0


def _is_bitcast_transpose(instruction: Instruction, index: dict[str, Instruction]) -> bool:
    """A transpose whose layouts make it a bitcast (`ShapeUtil::TransposeIsBitcast`)."""
    if instruction.opcode != "transpose":
        return False
    source, result = _operand(instruction, 0, index), _shape(instruction)
    permutation = _ints(instruction.attributes.get("dimensions"))
    if source.layout is None or result.layout is None or len(permutation) != result.rank:
        return False
    return [permutation[d] for d in result.layout.minor_to_major] == list(source.layout.minor_to_major)


_INTS = re.compile(r"-?\d+")


def _ints(text: str | None) -> tuple[int, ...]:
    return tuple(int(n) for n in _INTS.findall(text or ""))


# ---- handlers, one per opcode XLA handles specially


def _dot(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    lhs = _operand(instruction, 0, index)
    width = math.prod(lhs.dims[d] for d in _ints(instruction.attributes.get("lhs_contracting_dims")))
    dims = list(_shape(instruction).dims)
    if instruction.opcode == "ragged-dot":  # XLA deletes dimension i for each rhs group dim i
        for i in range(len(_ints(instruction.attributes.get("rhs_group_dims")))):
            del dims[i]
    return analysis.default_bytes(instruction, index) + Cost(flops=2 * math.prod(dims) * width)


def _convolution(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """XLA's `GetConvolutionFlops`: valid (output position, kernel tap) pairs per spatial dim."""
    shapes = [_operand(instruction, 0, index), _operand(instruction, 1, index), _shape(instruction)]
    return analysis.default_bytes(instruction, index) + Cost(flops=_convolution_flops(instruction, *shapes))


def _convolution_flops(instruction: Instruction, lhs: Shape, rhs: Shape, out: Shape) -> int:
    """2 x FMAs of a convolution of `lhs` (input) by `rhs` (kernel) into `out`, as its window,
    `dim_labels` and group counts say (xla/service/hlo_cost_analysis.cc `GetConvolutionFlops`)."""
    attributes = instruction.attributes
    labels = _dim_labels(attributes.get("dim_labels", "b01f_01io->b01f"))
    positions = 1  # no spatial dims: XLA's one-element window, one valid position
    window = _window(attributes.get("window"), len(labels["lhs_spatial"])) if labels["lhs_spatial"] else ()
    for k, dim in enumerate(window):
        positions *= _valid_positions(
            lhs.dims[labels["lhs_spatial"][k]],
            rhs.dims[labels["rhs_spatial"][k]],
            out.dims[labels["out_spatial"][k]],
            dim,
        )
    feature_groups = int(attributes.get("feature_group_count", "1"))
    batch_groups = int(attributes.get("batch_group_count", "1"))
    fmas = (
        (lhs.dims[labels["lhs_feature"]] // feature_groups)
        * out.dims[labels["out_feature"]]
        * (lhs.dims[labels["lhs_batch"]] // batch_groups)
        * positions
    )
    return 2 * fmas


@dataclass(slots=True)
class _WindowDim:
    """One dimension of a convolution's or reduce-window's window."""

    size: int = 1
    stride: int = 1
    pad_low: int = 0
    pad_high: int = 0
    base_dilation: int = 1
    window_dilation: int = 1


def _window(text: str | None, rank: int) -> list[_WindowDim]:
    """`{size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=1x1 rhs_dilate=1x1}` per dimension; no window is one
    dimension of size 1 (as XLA's convolution counting assumes)."""
    fields = dict(item.split("=", 1) for item in (text or "").strip("{} ").split() if "=" in item)
    sizes = _parts(fields.get("size"))
    rank = len(sizes) or max(rank, 1)
    pads = [p.split("_") for p in fields["pad"].split("x")] if "pad" in fields else [["0", "0"]] * rank

    def each(key: str) -> list[int]:
        values = _parts(fields.get(key))
        return values if values else [1] * rank

    return [
        _WindowDim(size, stride, int(low), int(high), base, dilation)
        for size, stride, (low, high), base, dilation in zip(
            sizes or [1] * rank, each("stride"), pads, each("lhs_dilate"), each("rhs_dilate")
        )
    ]


def _parts(text: str | None) -> list[int]:
    return [int(p) for p in text.split("x")] if text else []


class _DimLabels(TypedDict):
    """Positions of a convolution's dims in its operands and output, from `dim_labels`."""

    lhs_batch: int
    lhs_feature: int
    out_feature: int
    lhs_spatial: list[int]
    rhs_spatial: list[int]
    out_spatial: list[int]


def _dim_labels(text: str) -> _DimLabels:
    """Positions of batch, feature and spatial dims in `b01f_01io->b01f` (lhs_rhs->output)."""
    lhs, rest = text.split("_", 1)
    rhs, out = rest.split("->")
    digits = sorted(c for c in lhs if c.isdigit())
    return {
        "lhs_batch": lhs.index("b"),
        "lhs_feature": lhs.index("f"),
        "out_feature": out.index("f"),
        "lhs_spatial": [lhs.index(d) for d in digits],
        "rhs_spatial": [rhs.index(d) for d in digits],
        "out_spatial": [out.index(d) for d in digits],
    }


def _valid_positions(input_size: int, kernel: int, output: int, dim: _WindowDim) -> int:
    if (
        input_size == output
        and kernel == output
        and input_size == dim.base_dilation
        and dim.window_dilation == 1
        and max(1, input_size - 1) == dim.stride
        and dim.pad_low == 0
        and dim.pad_high == 0
    ):
        return input_size
    if (
        input_size == 1
        and kernel == output
        and dim.window_dilation == 1
        and dim.base_dilation == 1
        and dim.stride == 1
        and dim.pad_high == output - 1
        and dim.pad_low == output - 1
    ):
        return output
    count = 0
    for tap in range(kernel):
        offset = tap * dim.window_dilation - dim.pad_low
        if dim.base_dilation == 1:  # the outputs whose input index falls inside: one range per tap
            first, last = -(offset // dim.stride), (input_size - 1 - offset) // dim.stride
            count += max(0, min(output - 1, last) - max(0, first) + 1)
            continue
        for position in range(output):
            undilated = position * dim.stride + offset
            if undilated % dim.base_dilation == 0 and 0 <= undilated // dim.base_dilation < input_size:
                count += 1
    return count


def _applied(analysis: _Analysis, instruction: Instruction, position: int = 0) -> Cost:
    """The cost of one application of a called computation (a reducer, a comparator...)."""
    return analysis.computation(analysis.called(instruction, position), flops_only=True)


def _first_array(shape: Shape) -> Shape:
    return shape.tuple_shapes[0] if shape.is_tuple else shape


def _reduce(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    count = _operand(instruction, 0, index).num_elements - _first_array(_shape(instruction)).num_elements
    return analysis.default_bytes(instruction, index) + _applied(analysis, instruction).scaled(count)


def _reduce_window(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    shape = _shape(instruction)
    window = _window(instruction.attributes.get("window"), shape.rank)
    elements = _first_array(shape).num_elements
    count = (math.prod(d.size for d in window) - 1) * elements
    reduced = [d for d in window if d.size != 1]
    padded = [d for d in window if d.pad_low or d.pad_high]
    if len(reduced) == 1 and len(padded) == 1 and not shape.is_tuple:
        # XLA's special case: a reduce followed by a broadcast of one dimension.
        for position, d in enumerate(window):
            if d.size != 1 and d.pad_low and d.pad_high and d.pad_low == d.pad_high and d.size == 2 * d.pad_low + 1:
                span = shape.dims[position]
                if d.pad_low == span - 1:
                    count = elements // span + span - 1
                break
    return analysis.default_bytes(instruction, index) + _applied(analysis, instruction).scaled(count)


def _map(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    return analysis.default_bytes(instruction, index) + _applied(analysis, instruction).scaled(
        _shape(instruction).num_elements
    )


def _select_and_scatter(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    source = _operand(instruction, 1, index).num_elements
    window = math.prod(d.size for d in _window(instruction.attributes.get("window"), _shape(instruction).rank))
    select = analysis.named(instruction.attributes.get("select", ""))
    scatter = analysis.named(instruction.attributes.get("scatter", ""))
    return (
        analysis.default_bytes(instruction, index)
        + analysis.computation(select, flops_only=True).scaled(source * (window - 1))
        + analysis.computation(scatter, flops_only=True).scaled(source)
    )


def _strip(name: str) -> str:
    return name.strip().lstrip("%")


def _sort(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    n = _operand(instruction, 0, index).num_elements
    return analysis.default_bytes(instruction, index) + Cost(flops=n * max(n - 1, 0).bit_length())


def _fft(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    logs = math.prod(max(n, 1).bit_length() - 1 for n in _ints(instruction.attributes.get("fft_length")))
    elements = _first_array(_operand(instruction, 0, index)).num_elements
    return analysis.default_bytes(instruction, index) + Cost(flops=2 * 4 * logs * elements)


def _rng(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    elements = sum(s.num_elements for s in _shape(instruction).leaves() if s.is_array)
    return analysis.default_bytes(instruction, index) + Cost(transcendentals=elements)


def _all_reduce(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    read = [_size(_operand(instruction, i, index)) for i in range(len(instruction.operands))]
    shape = _shape(instruction)
    elements = sum(s.num_elements for s in shape.leaves() if s.is_array)
    return _bytes(read, _leaves_size(shape)) + Cost(flops=elements)


def _slice(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    out = _size(_shape(instruction))
    extra = [_size(_operand(instruction, 1, index))] if instruction.opcode == "dynamic-slice" else []
    return _bytes([out, *extra], out)


def _dynamic_update_slice(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    update = _size(_operand(instruction, 1, index))
    return _bytes([update, _size(_operand(instruction, 2, index))], update)


def _gather(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    out = _size(_shape(instruction))
    return _bytes([out, _size(_operand(instruction, 1, index))], out)


def _scatter(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    n = (len(instruction.operands) - 1) // 2
    updates = [_size(_operand(instruction, n + 1 + i, index)) for i in range(n)]
    total = (sum(u[0] for u in updates), sum(u[1] for u in updates))
    elements = _operand(instruction, n + 1, index).num_elements
    return _bytes([total, total, _size(_operand(instruction, n, index))], total) + _applied(
        analysis, instruction
    ).scaled(elements)


def _outfeed(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """Every array of every operand read, tuples by their elements (the token writes nothing)."""
    return _bytes([_leaves_size(_operand(instruction, i, index)) for i in range(len(instruction.operands))], (0, 0))


def _tuple(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    return _bytes([], _size(_shape(instruction)))


def _custom_call(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    return Cost(flops=-1, bytes=-1, written=-1, padded_bytes=-1, padded_written=-1)


def _triangular_solve(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    a, b = _operand(instruction, 0, index), _operand(instruction, 1, index)
    logical, padded = _size(a)
    half = (logical // 2, padded // 2)
    return _bytes([half, _size(b)], _size(_shape(instruction))) + Cost(flops=2 * a.dims[-1] * b.num_elements)


def _cholesky(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    a = _operand(instruction, 0, index)
    logical, padded = _size(a)
    half = (logical // 2, padded // 2)
    return _bytes([half], half) + Cost(flops=a.dims[-1] * a.num_elements // 3)


def _called_sum(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """Call and async-start: the called computation's properties; while: body + condition, once."""
    return sum(
        (analysis.computation(analysis.named(name)) for name in instruction.called_computations),
        Cost(),
    )


def _conditional(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """The largest branch, per property (XLA's `HandleConditional`)."""
    branches = [tuple(analysis.computation(analysis.named(name))) for name in instruction.called_computations]
    return Cost(*(max(values) for values in zip(*branches))) if branches else Cost()


def _fusion(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """The fused instructions' FLOPs; bytes: outputs, parameter reads and large constants."""
    body = analysis.called(instruction)
    if instruction.attributes.get("kind") == "kCustom":
        inner = next((i for i in body.instructions if i.opcode in ("gather", "scatter")), None)
        if inner is not None:
            return _HANDLERS[inner.opcode](analysis, inner, analysis.index(body))
    inside = analysis.computation(body, flops_only=True)
    read = [
        _parameter_read(analysis, body, parameter) for parameter in body.instructions if parameter.opcode == "parameter"
    ]
    read += [_size(_shape(i)) for i in body.instructions if i.opcode == "constant" and _shape(i).num_elements > 1]
    return _bytes(read, _fusion_written(analysis, instruction, body)) + Cost(inside.flops, inside.transcendentals)


def _fusion_written(analysis: _Analysis, fusion: Instruction, body: Computation) -> tuple[int, int]:
    """Each array output, except a dynamic-update-slice root writes only its update."""
    root, index = _root(body), analysis.index(body)
    shape = _shape(fusion)
    if not shape.is_tuple:
        return _size(_operand(root, 1, index)) if root.opcode == "dynamic-update-slice" else _size(shape)
    total = [0, 0]
    for i, element in enumerate(shape.tuple_shapes):
        if root.opcode == "tuple" and not element.is_tuple:
            output = index[root.operands[i]]
            size = _size(_operand(output, 1, index) if output.opcode == "dynamic-update-slice" else element)
        else:
            size = _leaves_size(element)
        total[0] += size[0]
        total[1] += size[1]
    return total[0], total[1]


def _parameter_read(analysis: _Analysis, body: Computation, parameter: Instruction) -> tuple[int, int]:
    """`FusionParameterReadBytes`, for a tuple parameter per leaf through its get-tuple-elements."""
    shape = _shape(parameter)
    if not shape.is_tuple:
        return _read_bytes(analysis, body, parameter)
    users = analysis.users(body)
    total = [0, 0]
    for leaf_index in _leaf_indices(shape):
        value = parameter
        for position in leaf_index:
            value = next(
                (
                    u
                    for u in users.get(value.name, ())
                    if u.opcode == "get-tuple-element" and int(u.attributes.get("index", -1)) == position
                ),
                value,
            )
        size = _read_bytes(analysis, body, value)
        total[0] += size[0]
        total[1] += size[1]
    return total[0], total[1]


def _leaf_indices(shape: Shape, prefix: tuple[int, ...] = ()) -> list[tuple[int, ...]]:
    if not shape.is_tuple:
        return [prefix]
    return [leaf for i, s in enumerate(shape.tuple_shapes) for leaf in _leaf_indices(s, (*prefix, i))]


def _read_bytes(analysis: _Analysis, body: Computation, value: Instruction) -> tuple[int, int]:
    """What a fused computation reads of one parameter: slices read their size, broadcasts and
    reshapes the whole, other users share one whole read (XLA's `FusionParameterReadBytes`)."""
    total, seen = [0, 0], False
    for user in analysis.users(body).get(value.name, ()):
        sliced = _sliced_read(user, value, seen)
        if user.opcode == "fusion":
            size = _nested_read(analysis, body, user, value)
        elif sliced is not None:
            size, seen = sliced
        elif user.opcode in ("broadcast", "reshape"):
            size = _size(_shape(value))
        else:
            size, seen = ((0, 0) if seen else _size(_shape(value))), True
        total[0] += size[0]
        total[1] += size[1]
    return total[0], total[1]


def _sliced_read(user: Instruction, value: Instruction, seen: bool) -> tuple[tuple[int, int], bool] | None:
    """(bytes charged, whole read seen) when `user` slices `value`: a slice or dynamic-slice of it reads
    the slice; its start indices and a dynamic-update-slice's update share the one whole read; the
    buffer a dynamic-update-slice updates in place is not read. None for other users."""
    if user.opcode == "slice":
        return _size(_shape(user)), seen
    if user.opcode == "dynamic-slice" and user.operands[0] == value.name:
        return _size(_shape(user)), seen
    if user.opcode == "dynamic-update-slice" and user.operands[0] == value.name:
        return (0, 0), seen
    if user.opcode in ("dynamic-slice", "dynamic-update-slice"):
        return ((0, 0) if seen else _size(_shape(value))), True
    return None


def _nested_read(analysis: _Analysis, body: Computation, nested: Instruction, value: Instruction) -> tuple[int, int]:
    """A parameter read by a nested fusion: XLA charges by how the nested fusion's users slice it when
    the parameter feeds the nested root directly, else by how the nested computation reads it, once."""
    inner = analysis.called(nested)
    parameters = {p.parameter_number: p for p in inner.instructions if p.opcode == "parameter"}
    total = [0, 0]
    for position, operand in enumerate(nested.operands):
        if operand != value.name:
            continue
        parameter, root = parameters[position], _root(inner)
        simple = not root.operands or root.opcode in ("parameter", "constant") or root.operands[0] == parameter.name
        seen = False
        for user in analysis.users(body).get(nested.name, ()):
            sliced = _sliced_read(user, nested, seen) if simple else None
            if sliced is not None:
                size, seen = sliced
            else:
                size, seen = ((0, 0) if seen else _read_bytes(analysis, inner, parameter)), True
            total[0] += size[0]
            total[1] += size[1]
    return total[0], total[1]


_HANDLERS: dict[str, Callable[[_Analysis, Instruction, dict[str, Instruction]], Cost]] = {
    "dot": _dot,
    "ragged-dot": _dot,
    "convolution": _convolution,
    "reduce": _reduce,
    "reduce-window": _reduce_window,
    "map": _map,
    "select-and-scatter": _select_and_scatter,
    "sort": _sort,
    "fft": _fft,
    "rng": _rng,
    "rng-bit-generator": _rng,
    "all-reduce": _all_reduce,
    "all-reduce-start": _all_reduce,
    "slice": _slice,
    "dynamic-slice": _slice,
    "dynamic-update-slice": _dynamic_update_slice,
    "gather": _gather,
    "scatter": _scatter,
    "tuple": _tuple,
    "custom-call": _custom_call,
    "triangular-solve": _triangular_solve,
    "cholesky": _cholesky,
    "call": _called_sum,
    "while": _called_sum,
    "async-start": _called_sum,
    "conditional": _conditional,
    "fusion": _fusion,
    "outfeed": _outfeed,
}


# ---- what one call executes: loops times their trip counts, custom calls by target


class _Executed:
    """The cost of one call as it executes: XLA's count (the static `_Analysis`, shared) with a while
    loop's body and condition times its trip count, a conditional's most expensive branch (its index
    kept), call and async-start their computations, and custom calls counted by target."""

    def __init__(self, static: _Analysis) -> None:
        self.static = static
        self.module = static.module
        self._costs: dict[int, Cost] = {}
        self._sums: dict[str, Cost] = {}
        self.trip_counts: dict[str, int | None] = {}
        """While name -> its trip count (None: not known, counted once)."""
        self.branches: dict[str, int] = {}
        """Conditional name -> the index of the branch counted."""
        self.not_counted: Counter[str] = Counter()
        """Custom-call target -> how many of its calls count as 0 (no rule for the target)."""

    def computation(self, computation: Computation) -> Cost:
        if computation.name not in self._sums:
            index = self.static.index(computation)
            self._sums[computation.name] = sum((self.instruction(i, index) for i in computation.instructions), _NO_COST)
        return self._sums[computation.name]

    def instruction(self, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
        """One execution of `instruction`: XLA's cost but for control flow and custom calls."""
        handler = _EXECUTED.get(instruction.opcode)
        if handler is None:
            return self.static.instruction(instruction, index)
        cost = self._costs.get(id(instruction))
        if cost is None:
            try:
                cost = self._costs[id(instruction)] = handler(self, instruction, index)
            except _MALFORMED + (_Uncountable,) as error:
                raise HloParseError(
                    f"cannot count {instruction.name} ({instruction.opcode}): {error}",
                    self.module.path,
                    instruction.line,
                ) from None
        return cost

    def executions(self) -> dict[str, int]:
        """Computation -> runs per call of the entry: the product of trip counts along each call
        chain, summed over the chains (a conditional's uncounted branches run 0 times here)."""
        runs: dict[str, int] = {}

        def visit(computation: Computation, times: int) -> None:
            runs[computation.name] = runs.get(computation.name, 0) + times
            for instruction in computation.instructions:
                for position, callee in enumerate(_run_callees(instruction)):
                    visit(self.static.named(callee), times * self._factor(instruction, position))

        visit(self.module.entry, 1)
        return runs

    def _factor(self, instruction: Instruction, position: int) -> int:
        if instruction.opcode == "while":
            trip = self.trip_counts.get(instruction.name)
            return 1 if trip is None else trip
        if instruction.opcode == "conditional":
            return 1 if self.branches.get(instruction.name) == position else 0
        return 1


def _run_callees(instruction: Instruction) -> tuple[str, ...]:
    """The computations an instruction runs as control flow (an async pair counts at its start)."""
    if instruction.opcode in ("while", "conditional", "call", "async-start"):
        return instruction.called_computations
    return ()


def _executed_while(executed: _Executed, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """Body and condition times the trip count (once where it is not known)."""
    trip = executed.trip_counts[instruction.name] = trip_count(executed.static, instruction, index)
    once = sum((executed.computation(executed.static.named(n)) for n in instruction.called_computations), _NO_COST)
    return once.times(trip if trip is not None else 1)


def _executed_call(executed: _Executed, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """Call and async-start: what their computation executes (an async-done adds only its bytes)."""
    return sum((executed.computation(executed.static.named(n)) for n in instruction.called_computations), _NO_COST)


def _executed_conditional(executed: _Executed, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """The most expensive branch (by FLOPs, then transcendentals, then bytes), its index kept."""
    branches = [executed.computation(executed.static.named(n)) for n in instruction.called_computations]
    if not branches:
        return _NO_COST
    chosen = max(range(len(branches)), key=lambda i: (branches[i][0], branches[i][1], branches[i][2]))
    executed.branches[instruction.name] = chosen
    return branches[chosen]


def _executed_custom_call(executed: _Executed, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """A custom call by its target (xla/service/gpu/model/gpu_hlo_cost_analysis.cc `HandleCustomCall`,
    target names from xla/service/gpu/cublas_cudnn.h); a target without a rule, or a call without what
    its rule reads (a backend_config, a called computation), counts 0 and is listed."""
    target = instruction.custom_call_target or ""
    rule = _CUSTOM_CALLS.get(target)
    if rule is None and target.startswith(_CUBLAS_LT):
        rule = _gemm
    if rule is None and target.startswith(_CUDNN_FMHA):
        rule = _fused_attention
    cost = rule(executed, instruction, index) if rule is not None else None
    if cost is None:
        executed.not_counted[target] += 1
        return _NO_COST
    return cost


_CUBLAS_LT = "__cublas$lt$matmul"
"""cuBLASLt matmuls: `__cublas$lt$matmul`, `...$f8` (XLA's `IsCublasLtMatmul`, `IsCublasLtMatmulF8`)."""
_CUDNN_FMHA = "__cudnn$fmha"
"""cuDNN fused attention: `__cudnn$fmhaSoftmax`, `...ScaleBiasSoftmax...`, `...Dropout`, `...Backward`, `...F8`."""


def _gemm(executed: _Executed, instruction: Instruction, index: dict[str, Instruction]) -> Cost | None:
    """cuBLAS: XLA's `GetDotFlops` of operand 0 and the result (the first tuple element) with the
    backend_config's dot dimension numbers: 2 x result elements (batch included) x the contracted
    size, as GpuHloCostAnalysis counts it; plus what XLA's HloCostAnalysis counts for the elementwise
    ops the call folds in (`_epilogue`). C is read as an operand; the workspace XLA appends to the
    result is scratch, not written."""
    config = _backend_config(instruction, "gemm_backend_config")
    if config is None:
        return None
    numbers: dict[str, Any] = config.get("dot_dimension_numbers") or {}
    lhs = _operand(instruction, 0, index)
    width = math.prod(lhs.dims[int(d)] for d in numbers.get("lhs_contracting_dimensions", ()))
    outputs = _results(_shape(instruction))
    if len(outputs) > 1 and outputs[-1].dtype in ("s8", "u8"):
        outputs = outputs[:-1]
    elements = outputs[0].num_elements
    flops, transcendentals = _epilogue(config)
    return _custom_call_bytes(instruction, index, outputs) + Cost(
        2 * elements * width + flops * elements, transcendentals * elements
    )


#: Per output element, (flops, transcendentals) of each part of a cuBLASLt epilogue
#: (xla/service/gpu/backend_configs.proto `GemmBackendConfig.Epilogue`) as XLA's HloCostAnalysis counts
#: the ops it replaces: the bias add, relu's maximum, tanh-approximated GELU (jax.nn.gelu: four
#: multiplies and x**3's two, two adds, tanh), SiLU (logistic and a multiply); AUX only adds an output.
_EPILOGUE_PARTS = {"BIAS": (1, 0), "RELU": (1, 0), "GELU": (8, 1), "SILU": (1, 1), "AUX": (0, 0), "DEFAULT": (0, 0)}


def _epilogue(config: dict[str, Any]) -> tuple[int, int]:
    """(flops, transcendentals) per output element of a gemm's alpha, beta and epilogue: alpha != 1 a
    multiply, beta != 0 an add of C (and a multiply unless beta is 1), then the epilogue's parts."""
    flops = int(config.get("alpha_real", 1) != 1 or config.get("alpha_imag", 0) != 0)
    beta = config.get("beta", 0)
    flops += (beta != 0) + (beta not in (0, 1))
    transcendentals = 0
    for part in str(config.get("epilogue", "DEFAULT")).split("_"):
        part_flops, part_transcendentals = _EPILOGUE_PARTS.get(part, (0, 0))
        flops += part_flops
        transcendentals += part_transcendentals
    return flops, transcendentals


def _dnn_convolution(executed: _Executed, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """CuDNN convolutions: the FLOPs of the forward convolution each computes (its input, kernel and
    output taken from operands and result by the kind, as xla/service/gpu/gpu_conv_runner.cc binds
    them: backward-input reads the output gradient and kernel and writes the input gradient,
    backward-filter reads the input and output gradient and writes the kernel gradient), from its
    window, `dim_labels` and feature groups. GpuHloCostAnalysis passes operand 0, operand 1 and the
    result as printed to `GetConvolutionFlops` whatever the kind, which for a backward convolution
    counts another convolution (on gpu_loop_twins' CNN 0.99 instead of 4.7 MFLOP for backward-input,
    half for backward-filter); we follow its rule for the forward kind and bind the backward kinds'
    roles. Bytes: operands and the result, not the scratch buffer (`GpuHloCostAnalysis` counts
    `tuple_shapes(0)` only)."""
    result = _results(_shape(instruction))[0]
    first, second = _operand(instruction, 0, index), _operand(instruction, 1, index)
    roles = {
        "__cudnn$convBackwardInput": (result, second, first),
        "__cudnn$convBackwardFilter": (first, result, second),
    }.get(instruction.custom_call_target or "", (first, second, result))
    return _custom_call_bytes(instruction, index, [result]) + Cost(flops=_convolution_flops(instruction, *roles))


def _fused_attention(executed: _Executed, instruction: Instruction, index: dict[str, Instruction]) -> Cost | None:
    """CuDNN fused (flash) attention: the two batched matmuls of the score matrix, whose [batch, heads,
    q length, kv length] shape the backend_config's `intermediate_tensor_shape` holds (as jax's
    fused_attention_stablehlo.py writes it), Q's head size D and V's Dv the last dims of operands 0 and 2:
    forward Q.K^T and P.V, 2 x scores x (D + Dv); backward recomputes Q.K^T and runs dQ, dK (D) and dP,
    dV (Dv): 2 x scores x (3D + 2Dv). Masked (causal) blocks are counted as the shapes say."""
    config = _backend_config(instruction, "cudnn_fmha_backend_config")
    scores_shape: dict[str, Any] = (config or {}).get("intermediate_tensor_shape") or {}
    dims = scores_shape.get("dimensions")
    if not dims:
        return None
    scores = math.prod(int(d) for d in dims)
    head, value_head = _operand(instruction, 0, index).dims[-1], _operand(instruction, 2, index).dims[-1]
    matmuls = 3 * head + 2 * value_head if "Backward" in (instruction.custom_call_target or "") else head + value_head
    outputs = _results(_shape(instruction))
    if len(outputs) > 1 and outputs[-1].dtype in ("s8", "u8"):
        outputs = outputs[:-1]
    return _custom_call_bytes(instruction, index, outputs) + Cost(flops=2 * scores * matmuls)


def _triton(executed: _Executed, instruction: Instruction, index: dict[str, Instruction]) -> Cost | None:
    """A Triton kernel: the FLOPs of the computation it was emitted from; bytes its operands and results.
    A kernel given only as Triton IR in its backend_config (jax's Pallas calls) names no computation."""
    if not instruction.called_computations:
        return None
    inside = executed.static.computation(executed.static.called(instruction), flops_only=True)
    return _custom_call_bytes(instruction, index, _results(_shape(instruction))) + Cost(
        inside.flops, inside.transcendentals
    )


def _results(shape: Shape) -> list[Shape]:
    return [leaf for leaf in shape.leaves() if leaf.is_array] if shape.is_tuple else [shape]


def _custom_call_bytes(instruction: Instruction, index: dict[str, Instruction], written: list[Shape]) -> Cost:
    read = [_size(_operand(instruction, k, index)) for k in range(len(instruction.operands))]
    sizes = [_size(shape) for shape in written]
    return _bytes(read, (sum(s[0] for s in sizes), sum(s[1] for s in sizes)))


def _backend_config(instruction: Instruction, key: str) -> dict[str, Any] | None:
    config = (decode_json(instruction.attributes.get("backend_config")) or {}).get(key)
    return cast("dict[str, Any]", config) if isinstance(config, dict) else None  # a JSON object: str keys


_CUSTOM_CALLS: dict[str, Callable[[_Executed, Instruction, dict[str, Instruction]], Cost | None]] = {
    "__cublas$gemm": _gemm,
    "__cudnn$convForward": _dnn_convolution,
    "__cudnn$convBackwardInput": _dnn_convolution,
    "__cudnn$convBackwardFilter": _dnn_convolution,
    "__cudnn$convBiasActivationForward": _dnn_convolution,
    "__cudnn$convForwardGraph": _dnn_convolution,
    "__gpu$xla.gpu.triton": _triton,
}
_EXECUTED: dict[str, Callable[[_Executed, Instruction, dict[str, Instruction]], Cost]] = {
    "while": _executed_while,
    "call": _executed_call,
    "async-start": _executed_call,
    "conditional": _executed_conditional,
    "custom-call": _executed_custom_call,
}


# ---- trip counts


def trip_count(analysis: _Analysis, instruction: Instruction, index: dict[str, Instruction]) -> int | None:
    """How many times a while loop runs its body: `known_trip_count` from its backend_config, else the
    pattern xla/service/while_loop_analysis.cc `MatchTrivialLoopTripCount` recognises: a tuple element
    starting at a constant, compared against a constant by the condition's root, and increased by a
    constant in the body's root tuple (through fusions, whose parameters stand for their operands).
    None when neither says."""
    known = known_trip_count(instruction.attributes.get("backend_config"))
    if known is not None:
        return known
    condition = analysis.named(instruction.attributes.get("condition", ""))
    body = analysis.named(instruction.attributes.get("body", ""))
    compare = _term(analysis, analysis.index(condition), _root(condition).name, (), _loop_state)
    if compare is None or compare[0] != "compare":
        return None
    _, direction, lhs, rhs = compare
    if lhs is not None and lhs[0] == "const" and rhs is not None and rhs[0] == "element":
        lhs, rhs, direction = rhs, lhs, _FLIPPED.get(direction, direction)
    if lhs is None or rhs is None or lhs[0] != "element" or rhs[0] != "const":
        return None
    element = lhs[1]
    init = _operand_term(analysis, index, instruction, 0, (element,), _unbound)
    step = _term(analysis, analysis.index(body), _root(body).name, (element,), _loop_state)
    if init is None or init[0] != "const" or step is None or step[0] != "add":
        return None
    increments = [t[1] for t in step[1:] if t is not None and t[0] == "const"]
    if len(increments) != 1 or ("element", element) not in step[1:]:
        return None
    return _iterations(init[1], rhs[1], increments[0], direction)


Term: TypeAlias = (
    tuple[Literal["const"], int]
    | tuple[Literal["element"], int]
    | tuple[Literal["add"], "Term | None", "Term | None"]
    | tuple[Literal["compare"], str | None, "Term | None", "Term | None"]
)
"""A value of the loop pattern: ("const", n), ("element", k) (element k of the loop state), ("add", a, b),
("compare", direction, a, b); None for anything else."""
_Bind: TypeAlias = Callable[[int | None, tuple[int, ...]], "Term | None"]
"""The term of a computation's parameter (by number; None: not a parameter) at a shape index."""
_FLIPPED: dict[str | None, str | None] = {"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE"}
"""A compare's direction with its operands swapped (keyed by `str | None`: a compare may print none)."""


def _loop_state(parameter: int | None, shape_index: tuple[int, ...]) -> Term | None:
    """In a while body or condition, element k of parameter 0 is the loop state's element k."""
    return ("element", shape_index[0]) if parameter == 0 and len(shape_index) == 1 else None


def _unbound(parameter: int | None, shape_index: tuple[int, ...]) -> Term | None:
    return None


def _term(
    analysis: _Analysis, index: dict[str, Instruction], name: str, shape_index: tuple[int, ...], bind: _Bind
) -> Term | None:
    """The pattern term of value `name` (at `shape_index` into its tuple); a fusion is looked through,
    its parameters bound to its operands; `bind` gives the computation's own parameters."""
    instruction = index.get(name)
    if instruction is None:
        return None
    opcode = instruction.opcode
    if opcode == "parameter":
        return bind(instruction.parameter_number, shape_index)
    if opcode == "get-tuple-element":
        position = int(instruction.attributes.get("index", "-1"))
        return _operand_term(analysis, index, instruction, 0, (position, *shape_index), bind)
    if opcode == "tuple":
        if not shape_index or shape_index[0] >= len(instruction.operands):
            return None
        return _operand_term(analysis, index, instruction, shape_index[0], shape_index[1:], bind)
    if shape_index:
        return None
    if opcode == "fusion":
        return _fused_term(analysis, index, instruction, bind)
    return _scalar_term(analysis, index, instruction, bind)


def _scalar_term(
    analysis: _Analysis, index: dict[str, Instruction], instruction: Instruction, bind: _Bind
) -> Term | None:
    """An integer constant, or a copy, add or compare of terms."""
    opcode = instruction.opcode
    if opcode == "constant":
        literal = instruction.operands[0] if instruction.operands else ""
        return ("const", int(literal)) if re.fullmatch(r"-?\d+", literal) else None
    if opcode == "copy":
        return _operand_term(analysis, index, instruction, 0, (), bind)
    if opcode == "add":
        first = _operand_term(analysis, index, instruction, 0, (), bind)
        return ("add", first, _operand_term(analysis, index, instruction, 1, (), bind))
    if opcode == "compare":
        direction = instruction.attributes.get("direction")
        first = _operand_term(analysis, index, instruction, 0, (), bind)
        return ("compare", direction, first, _operand_term(analysis, index, instruction, 1, (), bind))
    return None


def _fused_term(analysis: _Analysis, index: dict[str, Instruction], fusion: Instruction, bind: _Bind) -> Term | None:
    """The fused root's term, its parameters standing for the fusion's operands."""
    fused = analysis.called(fusion)

    def through(parameter: int | None, inner_index: tuple[int, ...]) -> Term | None:
        if parameter is None or parameter >= len(fusion.operands):
            return None
        return _operand_term(analysis, index, fusion, parameter, inner_index, bind)

    return _term(analysis, analysis.index(fused), _root(fused).name, (), through)


def _operand_term(
    analysis: _Analysis,
    index: dict[str, Instruction],
    instruction: Instruction,
    k: int,
    shape_index: tuple[int, ...],
    bind: _Bind,
) -> Term | None:
    """Operand k's term; a compact get-tuple-element operand (`%p#1`) adds its own index in front."""
    return _term(analysis, index, instruction.operands[k], (*instruction.operand_shape_index(k), *shape_index), bind)


def _iterations(start: int, bound: int, step: int, direction: str | None) -> int | None:
    """Trips of `for (i = start; i <direction> bound; i += step)`; None where it would not end."""
    if direction == "LT" and step > 0:
        return max(0, -((start - bound) // step))
    if direction == "LE" and step > 0:
        return max(0, (bound - start) // step + 1)
    if direction == "GT" and step < 0:
        return max(0, -((bound - start) // -step))
    if direction == "GE" and step < 0:
        return max(0, (start - bound) // -step + 1)
    if direction == "NE" and step and (bound - start) % step == 0 and (bound - start) // step >= 0:
        return (bound - start) // step
    return None
