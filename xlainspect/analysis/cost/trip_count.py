"""How many times a while loop runs its body: `known_trip_count` from its backend_config, else the
pattern xla/service/while_loop_analysis.cc `MatchTrivialLoopTripCount` recognises."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeAlias

from xlainspect.analysis.cost.operands import root
from xlainspect.analysis.cost.static import Analysis
from xlainspect.hlo.attributes import decode_integer_literal, known_trip_count
from xlainspect.hlo.model import Instruction


def trip_count(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> int | None:
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
    compare = _term(analysis, analysis.index(condition), root(condition).name, (), _loop_state)
    if compare is None or compare[0] != "compare":
        return None
    _, direction, lhs, rhs = compare
    if lhs is not None and lhs[0] == "const" and rhs is not None and rhs[0] == "element":
        lhs, rhs, direction = rhs, lhs, _FLIPPED.get(direction, direction)
    if lhs is None or rhs is None or lhs[0] != "element" or rhs[0] != "const":
        return None
    element = lhs[1]
    init = _operand_term(analysis, index, instruction, 0, (element,), _unbound)
    step = _term(analysis, analysis.index(body), root(body).name, (element,), _loop_state)
    if init is None or init[0] != "const" or step is None or step[0] != "add":
        return None
    increments = [t[1] for t in step[1:] if t is not None and t[0] == "const"]
    if len(increments) != 1 or ("element", element) not in step[1:]:
        return None
    return iterations(init[1], rhs[1], increments[0], direction)


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
    analysis: Analysis, index: dict[str, Instruction], name: str, shape_index: tuple[int, ...], bind: _Bind
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
        position = instruction.tuple_index
        if position is None:
            return None
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
    analysis: Analysis, index: dict[str, Instruction], instruction: Instruction, bind: _Bind
) -> Term | None:
    """An integer constant, or a copy, add or compare of terms."""
    opcode = instruction.opcode
    if opcode == "constant":
        literal = instruction.operands[0] if instruction.operands else ""
        value = decode_integer_literal(literal)
        return ("const", value) if value is not None else None
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


def _fused_term(analysis: Analysis, index: dict[str, Instruction], fusion: Instruction, bind: _Bind) -> Term | None:
    """The fused root's term, its parameters standing for the fusion's operands."""
    fused = analysis.called(fusion)

    def through(parameter: int | None, inner_index: tuple[int, ...]) -> Term | None:
        if parameter is None or parameter >= len(fusion.operands):
            return None
        return _operand_term(analysis, index, fusion, parameter, inner_index, bind)

    return _term(analysis, analysis.index(fused), root(fused).name, (), through)


def _operand_term(
    analysis: Analysis,
    index: dict[str, Instruction],
    instruction: Instruction,
    k: int,
    shape_index: tuple[int, ...],
    bind: _Bind,
) -> Term | None:
    """Operand k's term; a compact get-tuple-element operand (`%p#1`) adds its own index in front."""
    return _term(analysis, index, instruction.operands[k], (*instruction.operand_shape_index(k), *shape_index), bind)


def iterations(start: int, bound: int, step: int, direction: str | None) -> int | None:
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
