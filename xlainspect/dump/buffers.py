"""Reader for XLA's `*buffer-assignment.txt`: allocations and the values placed in them.

The format is `BufferAllocation::ToString` (reference section 3.6): an `allocation <i>: size <n>[, ...]:`
header, then ` value: <id name{index} [(phi)] @color> (size=N,offset=N): <shape with layout>` lines.
XLA prints every allocation with its values and ends every line with a newline; older XLA ends the
allocations with `Total bytes used: N` (`BufferAssignment::ToString`, xla/service/buffer_assignment.cc),
newer XLA moves that line to `-buffer-assignment-values.txt`. A file that breaks either rule was cut.
The sizes are the backend's own (its size function, tile padding included), which is what makes
this file the ground truth for layout tooling and memory tooling alike. The live-range dump that
follows the allocations is ignored. Stdlib only; the shape text is decoded lazily.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from xlainspect.dump.usage_report import read_total_bytes_used
from xlainspect.errors import HloParseError, error_at
from xlainspect.hlo.parser import decode_shape
from xlainspect.hlo.shape import Shape

_ALLOCATION = re.compile(r"allocation (?P<index>\d+): size (?P<size>\d+)(?P<rest>.*):\s*$")
_VALUE = re.compile(
    r"\s+value: <(?P<id>\d+) (?P<instruction>\S+?)(?P<index>\{[\d,]*\})?(?P<phi> \(phi\))?"
    r"(?: @(?P<color>\d+))?> \(size=(?P<size>\d+),offset=(?P<offset>\d+)\): (?P<shape>.+?)\s*$"
)
_COLOR = re.compile(r", color (\d+)")
_PARAMETER = re.compile(r", parameter (\d+)")
_PRINTED_SHAPE = re.compile(r"\|[^|]*\|")
_NOT_A_FLAG = re.compile(r"(color|parameter|output shape|shape)\b")


@dataclass(slots=True)
class BufferValue:
    """One HloValue in an allocation: the instruction that defines it, its bytes and its shape."""

    value_id: int
    instruction: str
    shape_index: tuple[int, ...]
    """Index into a tuple-shaped instruction output; () for the whole output."""
    is_phi: bool
    color: int | None
    """Memory space printed as `@n` by newer XLA; None where the version prints none."""
    size: int
    offset: int
    shape_text: str
    line: int

    @property
    def shape(self) -> Shape:
        """The value's shape, decoded with the HLO grammar (tuples included)."""
        return decode_shape(self.shape_text)


@dataclass(slots=True)
class Allocation:
    """A `BufferAllocation`: one contiguous block and the flags XLA printed for it."""

    index: int
    size: int
    color: int
    parameter: int | None
    flags: tuple[str, ...]
    """The header's words such as `thread-local`, `maybe-live-out`, `constant`, `preallocated-temp`."""
    values: tuple[BufferValue, ...] = field(default=())


@dataclass(slots=True)
class BufferAssignment:
    """A module's buffer assignment: its allocations and the values in each."""

    path: str | None
    allocations: tuple[Allocation, ...]

    def values(self) -> tuple[BufferValue, ...]:
        return tuple(v for a in self.allocations for v in a.values)


def read_buffer_assignment(text: str, path: str | None = None) -> BufferAssignment:
    """Decode the allocations of a buffer-assignment file; stops at the live-range section.

    Raises HloParseError (path, line, column) when the text is not a buffer assignment at all, or is
    cut: a line without its newline, a value line cut short, an allocation without its values, or a
    `Total bytes used` that its allocations do not sum to (a truncated file would otherwise count its
    first allocations only). A cut between two allocations of a newer file reads whole here:
    `check_total` against the values file or memory-usage report finds it.
    """
    if text and not text.endswith("\n"):
        raise _error(text, text.count("\n") + 1, path, "the file ends mid-line (it is truncated)")
    assignment = BufferAssignment(path, tuple(_allocations(text, path)))
    if (total := read_total_bytes_used(text)) is not None:
        check_total(assignment, total, text[: text.find("Total bytes used")].count("\n") + 1, text)
    return assignment


def _allocations(text: str, path: str | None) -> list[Allocation]:
    """The allocations with their values, up to the first line that is neither."""
    allocations: list[Allocation] = []
    values: list[BufferValue] = []
    header: re.Match[str] | None = None
    header_line = 0
    for number, line in enumerate(text.splitlines(), 1):
        if match := _ALLOCATION.match(line):
            if header is not None:
                allocations.append(_allocation(header, values, header_line, text, path))
            header, values, header_line = match, [], number
        elif line.lstrip().startswith("value:"):
            if header is None:
                raise _error(text, number, path, "a value line before any allocation")
            values.append(_value(line, number, text, path))
        elif header is None:
            if line.strip() and not line.startswith("BufferAssignment"):
                raise _error(text, number, path, "not an XLA buffer assignment (expected 'allocation N: size N')")
        elif line.strip() and not line.startswith(" "):
            break  # `Total bytes used`, then the used values and live ranges of older XLA
    if header is not None:
        allocations.append(_allocation(header, values, header_line, text, path))
    return allocations


def check_total(assignment: BufferAssignment, total: int, line: int = 1, text: str = "") -> None:
    """Raise HloParseError where the allocations do not sum to XLA's `Total bytes used` (from this file,
    its values file or its memory-usage report): the file lost its last allocations."""
    found = sum(a.size for a in assignment.allocations)
    if found != total:
        message = f"the allocations sum to {found} bytes, XLA's total is {total} (the file is truncated)"
        raise _error(text, line, assignment.path, message)


def _allocation(header: re.Match[str], values: list[BufferValue], line: int, text: str, path: str | None) -> Allocation:
    """One allocation. XLA prints each with the values assigned to it; only the preallocated temp
    buffer (`AssignPreallocatedTempBuffer`, made by `NewEmptyAllocation`) holds none, so any other
    allocation without values was cut."""
    if not values and "preallocated-temp" not in header["rest"].split(", "):
        raise _error(text, line, path, f"allocation {header['index']} has no values (the file is truncated)")
    rest = header["rest"]
    color = _COLOR.search(rest)
    parameter = _PARAMETER.search(rest)
    words = _PRINTED_SHAPE.sub("", rest)  # drop the printed shapes before splitting on commas
    flags = tuple(w for w in map(str.strip, words.split(",")) if w and not _NOT_A_FLAG.match(w))
    return Allocation(
        int(header["index"]),
        int(header["size"]),
        int(color[1]) if color else 0,
        int(parameter[1]) if parameter else None,
        flags,
        tuple(values),
    )


def _value(line: str, number: int, text: str, path: str | None) -> BufferValue:
    """One ` value: <...>` line; XLA prints each whole, so one that does not read is a truncated file."""
    match = _VALUE.match(line)
    if match is None:
        raise _error(text, number, path, "damaged value line (the file is truncated or corrupt)")
    index = match["index"]
    return BufferValue(
        value_id=int(match["id"]),
        instruction=match["instruction"],
        shape_index=tuple(int(i) for i in index[1:-1].split(",") if i) if index else (),
        is_phi=bool(match["phi"]),
        color=int(match["color"]) if match["color"] else None,
        size=int(match["size"]),
        offset=int(match["offset"]),
        shape_text=match["shape"],
        line=number,
    )


def _error(text: str, line: int, path: str | None, message: str) -> HloParseError:
    offset = sum(len(before) + 1 for before in text.splitlines()[: line - 1])
    return error_at(text, offset, message, path)
