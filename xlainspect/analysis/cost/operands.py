"""What a count needs of an instruction (an operand's shape, its own shape, a computation's root), and
the error it raises when the text leaves that for XLA to infer."""

from __future__ import annotations

from xlainspect.analysis.lookup import operand_shape
from xlainspect.hlo.model import Computation, Instruction
from xlainspect.hlo.shape import Shape

#: What malformed numbers or indices in an attribute raise while counting (a shape left out or a
#: computation missing is checked where it is needed: any other exception is a bug and surfaces).
MALFORMED = (ValueError, IndexError, ZeroDivisionError, RecursionError)


class Uncountable(Exception):
    """A shape, attribute or computation the count needs is missing from the text."""


def operand(instruction: Instruction, k: int, index: dict[str, Instruction]) -> Shape:
    """`operand_shape`, or Uncountable when the text leaves it for XLA to infer."""
    shape = operand_shape(instruction, k, index)
    if shape is None:
        raise Uncountable(f"the shape of operand {k} ({instruction.operands[k]}) is not known")
    return shape


def result(instruction: Instruction) -> Shape:
    """The instruction's shape, or Uncountable when the text leaves it for XLA to infer."""
    if instruction.shape is None:
        raise Uncountable(f"the shape of {instruction.name} is not printed")
    return instruction.shape


def root(computation: Computation) -> Instruction:
    """The computation's root, or Uncountable for a computation without instructions."""
    computation_root = computation.root
    if computation_root is None:
        raise Uncountable(f"computation {computation.name} has no instructions")
    return computation_root


def first_array(shape: Shape) -> Shape:
    """The shape, or a tuple's first element (a variadic reduce's first output)."""
    return shape.tuple_shapes[0] if shape.is_tuple else shape


def arrays(shape: Shape) -> list[Shape]:
    """The shape's arrays: itself, or a tuple's array leaves."""
    return [leaf for leaf in shape.leaves() if leaf.is_array] if shape.is_tuple else [shape]
