"""Reader for XLA's `HloLiveRange` dump (`*-live-range.txt`; older XLA appended it to the buffer
assignment, reference section 3.6): the flattened instruction sequence, `name{index}:start-end` per
value, and the peak XLA printed (`Live ranges at N (peak):` with cumulative logical bytes)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from xlainspect.errors import error_at

_LIVE_HEADER = re.compile(r"^HloLiveRange \(max (\d+)\):", re.M)
_SEQUENCE = re.compile(r"^\s+(\d+):(\S+)\s*$")
_RANGE = re.compile(r"^\s+(?P<name>\S+?)\{(?P<index>[\d,]*)\}:(?P<start>\d+)-(?P<end>\d+)\s*$")
_PEAK = re.compile(r"^\s+Live ranges at (\d+) \(peak\):")
_CUMULATIVE = re.compile(r"\(cumulative: (\d+) bytes\)")


@dataclass(slots=True)
class LiveRange:
    """When one HloValue is live: program points `start` to `end`, both included."""

    instruction: str
    shape_index: tuple[int, ...]
    start: int
    end: int

    @property
    def key(self) -> tuple[str, tuple[int, ...]]:
        return self.instruction, self.shape_index


@dataclass(slots=True)
class LiveRanges:
    """An `HloLiveRange` dump: the flattened schedule, the range of each value, XLA's printed peak."""

    max_time: int
    sequence: tuple[str, ...]
    """Instruction at each program point; point `max_time` is the end of the program."""
    ranges: tuple[LiveRange, ...]
    reported_peak_time: int | None
    reported_peak_bytes: int | None
    """XLA's cumulative logical bytes at its peak (None for versions that print no peak)."""


def read_live_ranges(text: str, path: str | None = None) -> LiveRanges | None:
    """Decode the `HloLiveRange` dump in `text` (a live-range file, or an older buffer assignment).

    None when the text has no live ranges; HloParseError for a range line that does not decode.
    """
    header = _LIVE_HEADER.search(text)
    if header is None:
        return None
    sequence: dict[int, str] = {}
    ranges: list[LiveRange] = []
    peak_time = peak_bytes = None
    section = None
    first_line = text.count("\n", 0, header.start()) + 1
    for number, line in enumerate(text[header.start() :].splitlines(), first_line):
        stripped = line.strip()
        if stripped in ("InstructionSequence:", "BufferLiveRange:"):
            section = stripped
        elif stripped.startswith("Live ranges at") and (match := _PEAK.match(line)):
            section, peak_time = "peak", int(match[1])
        elif stripped.startswith("Stack trace breakdown"):
            break
        elif section == "InstructionSequence:" and (match := _SEQUENCE.match(line)):
            sequence[int(match[1])] = match[2]
        elif section == "BufferLiveRange:" and stripped:
            ranges.append(_live_range(line, text, number, path))
        elif section == "peak" and (match := _CUMULATIVE.search(line)):
            peak_bytes = int(match[1])
    ordered = tuple(sequence[i] for i in sorted(sequence))
    return LiveRanges(int(header[1]), ordered, tuple(ranges), peak_time, peak_bytes)


def _live_range(line: str, text: str, number: int, path: str | None) -> LiveRange:
    match = _RANGE.match(line)
    if match is None:
        offset = sum(len(before) + 1 for before in text.splitlines()[: number - 1])
        raise error_at(text, offset, "expected a live range like 'name{}:0-12'", path)
    index = tuple(int(i) for i in match["index"].split(",") if i)
    return LiveRange(match["name"], index, int(match["start"]), int(match["end"]))
