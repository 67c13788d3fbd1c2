"""The protobuf wire format, decoded with numpy: many small messages of one type at once.

A jax.profiler trace holds millions of `XEvent`s, each a few fields and stats. Decoding them one
message at a time (the protobuf runtime's classes, then a Python object per event and per stat) costs
microseconds an event and hundreds of bytes of memory each. Here the messages' byte ranges are decoded
field by field for all of them at once: each round reads the next field of every message not yet
finished (its tag, then a varint, eight fixed bytes or a length), so a round costs a few numpy
operations over the messages and the rounds are as many as the longest message has fields.

The format (protobuf's `encoding` page, `wire_format_lite.h`): a field is a varint key
`number << 3 | wire type`, then a varint (type 0), 8 little-endian bytes (1), a varint length and that
many bytes (2) or 4 bytes (5). A varint is 7 bits a byte, least significant first, the high bit set on
every byte but the last; negative int64s take 10 bytes (two's complement).
"""

from __future__ import annotations

import mmap
from array import array
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from xlainspect.errors import XlaInspectError

Bytes = npt.NDArray[np.uint8]
Buffer = bytes | memoryview | mmap.mmap
"""A message's bytes: in memory, or a file's memory map."""
Ints = npt.NDArray[np.int64]

_MAX_VARINT = 10


class WireError(XlaInspectError):
    """The bytes are not a protobuf message of the expected shape (a damaged or foreign file)."""


def varint(data: Buffer, at: int) -> tuple[int, int]:
    """One varint at `at`: (value, the position after it)."""
    value, shift = 0, 0
    while True:
        if at >= len(data) or shift >= 7 * _MAX_VARINT:
            raise WireError("a varint runs past the end of the message")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if byte < 0x80:
            return value, at


def fields(data: Buffer, start: int, end: int) -> list[tuple[int, int, int, int]]:
    """The top-level fields of one message in `data[start:end]`: (number, wire type, value or payload
    start, payload end) each; a varint's value and its end, a fixed field's start and end. For messages
    of few fields (a space's planes, a plane's lines and metadata)."""
    found: list[tuple[int, int, int, int]] = []
    at = start
    while at < end:
        key, at = varint(data, at)
        number, kind = key >> 3, key & 7
        if kind == 0:
            value, at = varint(data, at)
            found.append((number, kind, value, at))
        elif kind == 2:
            length, at = varint(data, at)
            found.append((number, kind, at, at + length))
            at += length
        elif kind in (1, 5):
            size = 8 if kind == 1 else 4
            found.append((number, kind, at, at + size))
            at += size
        else:
            raise WireError(f"wire type {kind} (groups or a damaged message) at byte {at}")
    if at != end:
        raise WireError("a field runs past the end of its message")
    return found


def repeated(
    data: Buffer, start: int, end: int, number: int, passed: Callable[[int, int], object] | None = None
) -> tuple[Ints, Ints, list[tuple[int, int]]]:
    """The payload ranges (starts, ends) of every length-delimited field `number` of the message in
    `data[start:end]` (an `XLine`'s events), and the byte ranges of its other fields, keys included (to
    parse them as a message of their own). One pass in Python over the fields, the least a sequence of
    length-prefixed messages allows: each one's place follows from the one before. `passed(a, b)` is
    told of each `PASSED_BYTES` walked (a caller can let a file's pages go)."""
    wanted = (number << 3) | 2
    starts, ends = array("q"), array("q")  # machine ints: a list would hold an int object each
    start_at, end_at = starts.append, ends.append
    others: list[tuple[int, int]] = []
    if end > len(data):
        raise WireError("a message runs past the end of the file")
    at = start
    while at < end:
        told, stop = at, min(end, at + PASSED_BYTES)
        while at < stop:
            if data[at] == wanted and at + 1 < end:  # the usual case, inlined: a one-byte key, then the length
                length = data[at + 1]
                at += 2
                if length >= 0x80:
                    length, at = varint(data, at - 1)
                start_at(at)
                at += length
                end_at(at)
                continue
            after = _field_end(data, at)
            others.append((at, after))
            at = after
        if passed is not None and at < end:
            passed(told, at)
    if at != end:
        raise WireError("a field runs past the end of its message")
    return np.frombuffer(starts, np.int64), np.frombuffer(ends, np.int64), others


PASSED_BYTES = 32 << 20
"""Bytes `repeated` walks between two calls of its `passed`."""


def _field_end(data: Buffer, at: int) -> int:
    key, after = varint(data, at)
    kind = key & 7
    if kind == 0:
        return varint(data, after)[1]
    if kind == 2:
        length, after = varint(data, after)
        return after + length
    if kind in (1, 5):
        return after + (8 if kind == 1 else 4)
    raise WireError(f"wire type {kind} (groups or a damaged message) at byte {at}")


def _varints(buffer: Bytes, at: Ints) -> tuple[Ints, Ints]:
    """The varints at positions `at` of `buffer`: (values as int64, two's complement for negatives;
    positions after them). Byte by byte over the varints still going (most are one or two bytes), those
    kept apart as compact arrays: a trace's offsets take 5 to 7 bytes. A varint past the buffer's end
    (numpy's IndexError) or longer than 10 bytes is a WireError."""
    try:
        byte = buffer[at]
        value = (byte & 0x7F).astype(np.uint64)
        after = at + 1
        going = np.flatnonzero(byte >= 0x80)
        if not len(going):
            return value.view(np.int64), after
        position, part = after[going], np.zeros(len(going), np.uint64)
        for shift in range(7, 7 * _MAX_VARINT, 7):
            byte = buffer[position]
            part |= (byte & 0x7F).astype(np.uint64) << np.uint64(shift)
            position += 1
            last = byte < 0x80
            if last.all():
                value[going] |= part
                after[going] = position
                return value.view(np.int64), after
            if last.any():
                value[going[last]] |= part[last]
                after[going[last]] = position[last]
                going, position, part = going[~last], position[~last], part[~last]
    except IndexError:
        pass
    raise WireError("a varint runs past the end of the message")


@dataclass
class Decoded:
    """Fields of many messages: for each field number met, its occurrences: the index of the message
    each belongs to, its value (a varint as int64, a fixed64's 8 bytes as int64, a length-delimited
    field's payload start) and its end. Occurrences come round by round: one message's occurrences of
    a repeated field in their order, but not sorted by message."""

    owner: dict[int, Ints]
    value: dict[int, Ints]
    end: dict[int, Ints]
    stop: Ints
    """Where each message's decoding stopped: its end, or after its first `rounds` fields."""


def decode(buffer: Bytes, starts: Ints, ends: Ints, rounds: int | None = None) -> Decoded:
    """Every field of the messages `buffer[starts[i]:ends[i]]`, all messages at once (see the module's
    docstring), or their first `rounds` fields. Wire types 0, 1 and 2 (what XPlane's messages hold); any
    other is a WireError."""
    found: dict[int, list[tuple[Ints, Ints, Ints]]] = {}
    at = starts.copy()
    live = np.flatnonzero(at < ends)
    done = 0
    while len(live) and (rounds is None or done < rounds):
        here = at[live]
        numbers, value, end = _next_fields(buffer, here)
        low, high = int(numbers.min()), int(numbers.max())
        if low == high:  # the usual round: every message's next field is the same one
            found.setdefault(low, []).append((live, value, end))
        else:
            for number in np.unique(numbers).tolist():  # not a bincount: a damaged key's number is huge
                mine = numbers == number
                found.setdefault(number, []).append((live[mine], value[mine], end[mine]))
        at[live] = end
        if np.any(end > ends[live]) or np.any(end <= here):  # a length past the end, or negative
            raise WireError("a field runs past the end of its message")
        live = live[end < ends[live]]
        done += 1
    return Decoded(
        {n: _joined([r[0] for r in parts]) for n, parts in found.items()},
        {n: _joined([r[1] for r in parts]) for n, parts in found.items()},
        {n: _joined([r[2] for r in parts]) for n, parts in found.items()},
        at,
    )


def _next_fields(buffer: Bytes, at: Ints) -> tuple[Ints, Ints, Ints]:
    """The field at each of `at`: (its number; its value: a varint, a fixed64's 8 bytes as int64, a
    length-delimited field's payload start; its end)."""
    keys, after = _varints(buffer, at)
    numbers, kinds = keys >> 3, keys & 7
    kind = int(kinds[0])
    if kind in (0, 2) and np.all(kinds == kind):  # one wire type (the usual round): no masks
        value, end = _varints(buffer, after)
        return (numbers, end, end + value) if kind == 2 else (numbers, value, end)
    value = np.zeros(len(at), np.int64)
    end = after.copy()
    scalar = kinds == 0
    value[scalar], end[scalar] = _varints(buffer, after[scalar])
    nested = kinds == 2
    length, begin = _varints(buffer, after[nested])
    value[nested], end[nested] = begin, begin + length
    fixed = kinds == 1
    if fixed.any():
        value[fixed], end[fixed] = _fixed64(buffer, after[fixed]), after[fixed] + 8
    if not np.all(scalar | nested | fixed):
        raise WireError("a wire type XPlane has none of (a damaged or foreign file)")
    return numbers, value, end


def _fixed64(buffer: Bytes, at: Ints) -> Ints:
    if len(at) and at.max() + 8 > len(buffer):
        raise WireError("a fixed64 field runs past the end of the message")
    return buffer[at[:, None] + np.arange(8)].copy().view(np.int64)[:, 0]


def _joined(rounds: list[Ints]) -> Ints:
    return rounds[0] if len(rounds) == 1 else np.concatenate(rounds)
