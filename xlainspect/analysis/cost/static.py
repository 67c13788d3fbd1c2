"""XLA's static count (xla/service/hlo_cost_analysis.cc, `HloCostAnalysis`) over one module: each
instruction by its opcode's handler (`handlers.HANDLERS`), the elementwise ops and every operand read
whole by default (`Preprocess`), computations summed and memoised."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TypeAlias

from xlainspect.analysis.cost.model import NO_COST, Cost
from xlainspect.analysis.cost.operands import MALFORMED, Uncountable, operand, result
from xlainspect.analysis.cost.sizes import leaves_size, size
from xlainspect.analysis.lookup import control_flow_computations, instruction_index, users
from xlainspect.errors import HloParseError
from xlainspect.hlo.attributes import decode_int_list
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

Handler: TypeAlias = Callable[["Analysis", Instruction, dict[str, Instruction]], Cost]
"""XLA's `Handle<Opcode>`: the cost of one instruction, given the instructions of its computation."""


class Analysis:
    """HloCostAnalysis over one module: per-instruction costs by `handlers` (opcode -> handler; the
    opcodes without one are elementwise or move bytes only), computations' sums cached by name."""

    def __init__(self, module: Module, handlers: Mapping[str, Handler]) -> None:
        self.module = module
        self.handlers = handlers
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
        computation = self.module.computations_by_name.get(name.strip().lstrip("%"))
        if computation is None:
            raise Uncountable(f"no computation named {name!r} in the module")
        return computation

    def called(self, instruction: Instruction, position: int = 0) -> Computation:
        names = instruction.called_computations
        if position >= len(names):
            raise Uncountable("it names no computation to call")
        return self.named(names[position])

    def computation(self, computation: Computation, flops_only: bool = False) -> Cost:
        """The sum over every instruction of the computation (XLA's `ProcessSubcomputation`).

        `flops_only`: for fused computations and reducers, whose bytes XLA never uses, the
        elementwise ops skip their bytes (most of the work on a big module)."""
        key = (computation.name, flops_only)
        if key not in self._sums:
            index = self.index(computation)
            total = NO_COST
            for instruction in computation.instructions:
                total += self.instruction(instruction, index, flops_only)
            self._sums[key] = total
        return self._sums[key]

    def applied(self, instruction: Instruction, position: int = 0) -> Cost:
        """The cost of one application of a called computation (a reducer, a comparator...)."""
        return self.computation(self.called(instruction, position), flops_only=True)

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
                raise Uncountable("its shape is not printed")
            return self._count(instruction, instruction.shape, index, flops_only)
        except (*MALFORMED, Uncountable) as error:
            # Text XLA's parser infers from (a shape left out) or attributes it would reject: name the place.
            raise HloParseError(
                f"cannot count {instruction.name} ({instruction.opcode}) as XLA's cost analysis "
                f"does: {error} (a shape, attribute or computation it needs is missing or malformed)",
                self.module.path,
                instruction.line,
            ) from None

    def _count(self, instruction: Instruction, shape: Shape, index: dict[str, Instruction], flops_only: bool) -> Cost:
        opcode = instruction.opcode
        handler = self.handlers.get(opcode)
        if handler is None and opcode.endswith("-start"):
            handler = self.handlers.get(opcode.removesuffix("-start"))  # async sugar: `reduce-scatter-start`
        if handler is not None:
            return handler(self, instruction, index)
        flops, transcendentals = _compute(opcode, shape)
        if flops_only:
            return Cost(flops, transcendentals)
        return self._default(instruction, shape, index, flops, transcendentals)

    def default_bytes(self, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
        """Every operand read whole, the output written whole (XLA's `Preprocess`)."""
        return self._default(instruction, result(instruction), index, 0, 0)

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
            logical, padded = size(operand(instruction, position, index))
            read += logical
            padded_read += padded
        written, padded_written = leaves_size(shape)
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
    source, shape = operand(instruction, 0, index), result(instruction)
    permutation = decode_int_list(instruction.attributes.get("dimensions"))
    if source.layout is None or shape.layout is None or len(permutation) != shape.rank:
        return False
    return [permutation[d] for d in shape.layout.minor_to_major] == list(source.layout.minor_to_major)
