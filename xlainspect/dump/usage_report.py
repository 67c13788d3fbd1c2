"""Reader for XLA's `*-memory-usage-report.txt` (reference section 3.6): newer XLA prints one `Memory
Space: <name> (color=<c>)` block with `Total bytes: N` per memory space, older XLA `Total bytes used: N`
and `Allocations sorted by size` (which `BufferAssignment::ToString` also prints in the values file)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from xlainspect.errors import error_at

_SPACE = re.compile(r"^Memory Space: (?P<name>.*?) \(color=(?P<color>\d+)\)\s*\nTotal bytes: (?P<total>\d+)", re.M)
_TOTAL_USED = re.compile(r"^\s*Total bytes used: (\d+)", re.M)


@dataclass(slots=True)
class SpaceTotal:
    """Bytes XLA's memory-usage report printed for one memory space (color)."""

    color: int
    name: str
    total_bytes: int


@dataclass(slots=True)
class UsageReport:
    """`*-memory-usage-report.txt`: per-space totals (newer XLA) or one `Total bytes used` (older)."""

    spaces: tuple[SpaceTotal, ...]
    total_bytes: int


def read_usage_report(text: str, path: str | None = None) -> UsageReport:
    """Decode the totals of a memory-usage report (either format); HloParseError if it has none."""
    spaces = tuple(SpaceTotal(int(m["color"]), m["name"], int(m["total"])) for m in _SPACE.finditer(text))
    if spaces:
        return UsageReport(spaces, sum(s.total_bytes for s in spaces))
    if match := _TOTAL_USED.search(text):
        return UsageReport((), int(match[1]))
    raise error_at(text, 0, "not an XLA memory-usage report (no 'Memory Space:' or 'Total bytes used:')", path)


def read_total_bytes_used(text: str) -> int | None:
    """`Total bytes used: N` as `BufferAssignment::ToString` prints it (the values file, older dumps)."""
    match = _TOTAL_USED.search(text)
    return int(match[1]) if match else None
