"""Look-ups over one module that the instruction-level analyses share: an instruction by name, the
shapes of its operands, its users, the computations control flow runs, and the label a table gives a
dumped module."""

from __future__ import annotations

import functools
from pathlib import PurePath

from xlainspect.dump.names import file_module_id
from xlainspect.graph import module_calls, reachable
from xlainspect.hlo.model import Computation, Instruction, Module
from xlainspect.hlo.shape import Shape

#: Call-graph edge kinds that run a computation as control flow (not as a fusion body or reducer).
CONTROL_FLOW_CALLERS = frozenset({"while", "conditional", "call", "async-start", "async-update", "async-done"})


def module_label(module: Module) -> str:
    """`module_0029.jit_layouts` for a dump file (recompiles share a name), else the module name."""
    return file_label(module.path, module.name)


@functools.lru_cache(maxsize=4096)
def file_label(path: str | None, name: str) -> str:
    """`module_0029.jit_layouts` when `path` is a dump file, else `name`. Memoised: every row an
    analysis finds is labelled with its module."""
    number = file_module_id(PurePath(path).name) if path else None
    return name if number is None else f"module_{number:04d}.{name}"


def control_flow_computations(module: Module) -> list[str]:
    """The entry and the computations it runs through while/conditional/call/async (not reducers), in
    printed order: what is ranked or counted from them (cost's slowest ops, unfused ops) must come out
    the same in every run, whatever the process's string hashing."""
    reached = set(reachable(module_calls(module), [module.entry.name], lambda opcode: opcode in CONTROL_FLOW_CALLERS))
    return [c.name for c in module.computations if c.name in reached]


def instruction_index(computation: Computation) -> dict[str, Instruction]:
    """Instructions by name, to resolve operands (long text prints operand names without shapes)."""
    return {i.name: i for i in computation.instructions}


def operand_shape(instruction: Instruction, k: int, index: dict[str, Instruction]) -> Shape | None:
    """The shape of operand `k`, read from its defining instruction in the same computation; a compact
    get-tuple-element operand (`%p0#1#0`) gets the element's shape. None when it cannot be known."""
    producer = index.get(instruction.operands[k])
    if producer is None or producer.shape is None:
        return None
    return producer.shape.subshape(instruction.operand_shape_index(k))


def operand_shapes(instruction: Instruction, index: dict[str, Instruction]) -> list[Shape | None]:
    """`operand_shape` of every operand (none for `parameter` and `constant`, whose operands are text)."""
    if instruction.opcode in ("parameter", "constant"):
        return []
    return [operand_shape(instruction, k, index) for k in range(len(instruction.operands))]


def users(computation: Computation) -> dict[str, list[Instruction]]:
    """Operand name -> the instructions of the computation that use it, in printed order."""
    result: dict[str, list[Instruction]] = {}
    for instruction in computation.instructions:
        if instruction.opcode not in ("parameter", "constant"):
            for operand in dict.fromkeys(instruction.operands):
                result.setdefault(operand, []).append(instruction)
    return result
