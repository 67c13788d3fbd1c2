"""Byte sizes as XLA's cost analysis takes them: XLA's CPU size function (a tuple is a table of 8-byte
pointers), logical and with the layout's tile padding, and the bytes an instruction reads and writes."""

from __future__ import annotations

from xlainspect.analysis.cost.model import Cost
from xlainspect.hlo.shape import Shape

POINTER_BYTES = 8
"""A tuple's size under XLA's CPU size function (`ShapeUtil::ByteSizeOf(shape, sizeof(void*))`)."""

Size = tuple[int, int]
"""(logical, padded) bytes."""

_SIZES: dict[int, tuple[Shape, Size, Size]] = {}


def _sizes(shape: Shape) -> tuple[Size, Size]:
    """(as an operand, as an output) of a shape, memoised by identity: a module repeats a few hundred
    shapes and the parser shares their objects (hashing a Shape costs more than a look-up by id)."""
    entry = _SIZES.get(id(shape))
    if entry is None or entry[0] is not shape:
        if len(_SIZES) > 65536:
            _SIZES.clear()
        entry = _SIZES[id(shape)] = (shape, _operand_size(shape), _output_size(shape))
    return entry[1], entry[2]


def size(shape: Shape) -> Size:
    """(logical, padded) bytes under XLA's CPU size function: a tuple is its pointer table."""
    return _sizes(shape)[0]


def leaves_size(shape: Shape) -> Size:
    """(logical, padded) bytes of every array in the shape: what an instruction writes."""
    return _sizes(shape)[1]


def _operand_size(shape: Shape) -> Size:
    if shape.is_tuple:
        table = POINTER_BYTES * len(shape.tuple_shapes)
        return table, table
    if shape.dtype == "opaque":
        return POINTER_BYTES, POINTER_BYTES
    return shape.logical_bytes, shape.padded_bytes


def _output_size(shape: Shape) -> Size:
    if not shape.is_tuple:
        return _operand_size(shape)
    sizes = [_operand_size(leaf) for leaf in shape.leaves()]
    return sum(s[0] for s in sizes), sum(s[1] for s in sizes)


def accessed(read: list[Size], written: Size) -> Cost:
    """The Cost of reading `read` and writing `written` (no FLOPs)."""
    logical = sum(r[0] for r in read) + written[0]
    padded = sum(r[1] for r in read) + written[1]
    return Cost(bytes=logical, written=written[0], padded_bytes=padded, padded_written=written[1])


def total(sizes: list[Size]) -> Size:
    """The sum of (logical, padded) sizes."""
    return sum(s[0] for s in sizes), sum(s[1] for s in sizes)
