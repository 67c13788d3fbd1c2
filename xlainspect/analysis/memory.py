"""Memory per compiled module: allocation totals by kind, the peak over the schedule, and what is live there.

Reads the three text files XLA writes next to an after-optimizations module (reference section 3.6),
through their readers in dump/: `*buffer-assignment.txt` (allocations and their values, `dump.buffers`),
`*-memory-usage-report.txt` (per-space totals, `dump.usage_report`) and `*-live-range.txt` (the
`HloLiveRange` schedule and ranges, `dump.live_ranges`; older XLA appended it to the buffer assignment).

The peak is recomputed from the live ranges with the bytes the buffer assignment gave each value (tile
padding included); values that share a slice of an allocation (in-place updates, aliases) count once.
XLA's own "Live ranges at N (peak)" sums *logical* bytes (`ShapeUtil::ByteSizeOf`, 8 bytes per tuple
element), so it understates tiled TPU buffers; `logical_curve` reproduces its numbers for checking. XLA's
printed point is not always the maximum of its own sums (clean_run: point 9, 1356 B, while at point 8,
where dot.2 is still an operand, the same ranges add up to 1452 B), so the peak point here is recomputed. Stdlib only.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from xlainspect.dump.buffers import Allocation, BufferAssignment, BufferValue, check_total, read_buffer_assignment
from xlainspect.dump.files import read_text
from xlainspect.dump.live_ranges import LiveRange, LiveRanges, read_live_ranges
from xlainspect.dump.module import DumpModule, SkippedFile
from xlainspect.dump.usage_report import UsageReport, read_total_bytes_used, read_usage_report
from xlainspect.errors import XlaInspectError
from xlainspect.hlo.model import Instruction, Module
from xlainspect.layout import memory_space_name

KINDS = ("parameter", "constant", "output", "thread-local", "preallocated-temp", "temporary")
"""Allocation kinds, in the order that decides an allocation with several flags (they sum to the total)."""

TUPLE_POINTER_BYTES = 8
"""Bytes per element of a tuple's index table, as XLA's live-range dump counts them."""


@dataclass(slots=True)
class PeakBuffer:
    """A buffer live at the peak: its allocation slice, shape with layout and where it comes from."""

    name: str
    """The value as XLA prints it in live ranges: `instruction{shape index}`."""
    instruction: str
    shape: str
    bytes: int
    """Bytes of its slice in the allocation (the backend's size, tile padding included)."""
    logical_bytes: int
    allocation: int
    offset: int
    kind: str
    live_from: int
    live_to: int
    op_name: str | None
    source: str | None


@dataclass(slots=True)
class Peak:
    """The program point where live memory is highest, the buffers live there, and the curve."""

    time: int
    instruction: str | None
    """Instruction scheduled at the peak point; None when the peak is at the end of the program."""
    bytes: int
    buffers: tuple[PeakBuffer, ...]
    """Every distinct slice live at the peak, biggest first."""
    curve: tuple[int, ...]
    """Live bytes at each program point 0..max_time."""


def allocation_kind(allocation: Allocation) -> str:
    """The first of KINDS whose flag the allocation header carries; `temporary` when none does.

    XLA's own summary counts maybe-live-out allocations as outputs (the result tuple's elements);
    the allocation printed with `output shape is` also carries `maybe-live-out`.
    """
    if allocation.parameter is not None:
        return "parameter"
    flags = set(allocation.flags)
    if "maybe-live-out" in flags:
        flags.add("output")
    return next((kind for kind in KINDS[1:-1] if kind in flags), "temporary")


def bytes_by_kind(assignment: BufferAssignment) -> dict[str, int]:
    """Allocation bytes per kind, every kind present (zeros included), summing to the total."""
    totals: dict[str, int] = dict.fromkeys(KINDS, 0)
    for allocation in assignment.allocations:
        totals[allocation_kind(allocation)] += allocation.size
    return totals


def bytes_by_color(assignment: BufferAssignment) -> dict[int, int]:
    """Allocation bytes per memory space (color), as the memory-usage report groups them."""
    totals: dict[int, int] = {}
    for allocation in assignment.allocations:
        totals[allocation.color] = totals.get(allocation.color, 0) + allocation.size
    return dict(sorted(totals.items()))


def live_curve(live: LiveRanges, slice_of: Callable[[LiveRange], tuple[Hashable, int] | None]) -> tuple[int, ...]:
    """Live bytes at each program point; `slice_of` gives a value's (memory key, bytes) or None to skip it.

    Values with the same key are one piece of memory: it counts once while any of them is live.
    A sweep over start/end events, so the cost is linear in points plus values.
    """
    starts: dict[int, list[tuple[Hashable, int]]] = {}
    ends: dict[int, list[tuple[Hashable, int]]] = {}
    for value in live.ranges:
        piece = slice_of(value)
        if piece is not None:
            starts.setdefault(value.start, []).append(piece)
            ends.setdefault(value.end + 1, []).append(piece)
    holders: dict[Hashable, int] = {}
    curve: list[int] = []
    current = 0
    for time in range(live.max_time + 1):
        for key, size in ends.get(time, ()):
            holders[key] -= 1
            current -= size if holders[key] == 0 else 0
        for key, size in starts.get(time, ()):
            holders[key] = holders.get(key, 0) + 1
            current += size if holders[key] == 1 else 0
        curve.append(current)
    return tuple(curve)


def value_index(assignment: BufferAssignment) -> dict[tuple[str, tuple[int, ...]], tuple[Allocation, BufferValue]]:
    """Each assigned value by (instruction, shape index), the key live ranges print."""
    return {(v.instruction, v.shape_index): (a, v) for a in assignment.allocations for v in a.values}


def logical_bytes(value: BufferValue) -> int:
    """Bytes as XLA's live-range peak counts them: data without padding, 8 per tuple element."""
    shape = value.shape
    return TUPLE_POINTER_BYTES * len(shape.tuple_shapes) if shape.is_tuple else shape.logical_bytes


def logical_curve(live: LiveRanges, assignment: BufferAssignment) -> tuple[int, ...]:
    """Live bytes per program point counted as XLA's "Live ranges at N (peak)" counts them (logical
    bytes, every memory space), to check this parse against the cumulative XLA printed."""
    values = value_index(assignment)

    def piece(value: LiveRange) -> tuple[Hashable, int] | None:
        found = values.get(value.key)
        return None if found is None else (value.key, logical_bytes(found[1]))

    return live_curve(live, piece)


def peak(live: LiveRanges, assignment: BufferAssignment, module: Module | None = None, color: int = 0) -> Peak:
    """The program point where the live allocation slices of memory space `color` add up to the most
    bytes, and those slices. Color 0 is the memory that runs out (HBM, GPU device memory, CPU RAM);
    the other spaces (VMEM, SMEM, sync flags) are small scratchpads with totals of their own.

    `module` is the after-optimizations Module the buffers are joined with (by instruction name) for
    op_name and source line; without it those columns are None.
    """
    values = value_index(assignment)
    instructions = {i.name: i for i in module.instructions()} if module is not None else {}

    def piece(value: LiveRange) -> tuple[Hashable, int] | None:
        found = values.get(value.key)
        if found is None or found[0].color != color:
            return None
        allocation, assigned = found
        return (allocation.index, assigned.offset, assigned.size), assigned.size

    curve = live_curve(live, piece)
    top = max(curve, default=0)
    time = curve.index(top) if curve else 0
    buffers: dict[tuple[int, int, int], PeakBuffer] = {}
    for value in live.ranges:
        if value.start <= time <= value.end and value.key in values and values[value.key][0].color == color:
            allocation, assigned = values[value.key]
            key = (allocation.index, assigned.offset, assigned.size)
            if key not in buffers:
                buffers[key] = _peak_buffer(value, allocation, assigned, instructions.get(value.instruction), module)
    ordered = tuple(sorted(buffers.values(), key=lambda b: (-b.bytes, b.name)))
    at = live.sequence[time] if time < len(live.sequence) else None
    return Peak(time, at, top, ordered, curve)


def _peak_buffer(
    value: LiveRange,
    allocation: Allocation,
    assigned: BufferValue,
    instruction: Instruction | None,
    module: Module | None,
) -> PeakBuffer:
    """`instruction` is found in `module` (both None without the module, or when it lacks the value's)."""
    metadata = instruction.metadata if instruction is not None else None
    index = ",".join(map(str, value.shape_index))
    return PeakBuffer(
        name=f"{value.instruction}{{{index}}}",
        instruction=value.instruction,
        shape=assigned.shape_text,
        bytes=assigned.size,
        logical_bytes=logical_bytes(assigned),
        allocation=allocation.index,
        offset=assigned.offset,
        kind=allocation_kind(allocation),
        live_from=value.start,
        live_to=value.end,
        op_name=metadata.op_name if metadata else None,
        source=module.source_of(instruction) if module is not None and instruction is not None else None,
    )


@dataclass(slots=True)
class SpaceUsage:
    """One memory space: the allocation bytes parsed here next to the total XLA's report printed."""

    color: int
    name: str
    bytes: int
    reported_bytes: int | None


@dataclass(slots=True)
class ModuleMemory:
    """Memory of one compiled module: totals by allocation kind and space, and its peak."""

    module: str
    function: str
    module_id: int | None
    platform: str | None
    total_bytes: int
    """Sum of the allocation sizes in the buffer assignment."""
    reported_total_bytes: int | None
    """What XLA printed: the memory-usage report's total (or `Total bytes used`)."""
    by_kind: dict[str, int]
    spaces: tuple[SpaceUsage, ...]
    peak_bytes: int | None
    """Largest sum of live allocation slices in memory space 0; None without live ranges."""
    peak_time: int | None
    peak_instruction: str | None
    reported_peak_bytes: int | None
    """XLA's own (logical-bytes) peak from the live-range file."""
    top: tuple[PeakBuffer, ...]
    curve: tuple[int, ...]
    sequence: tuple[str, ...]
    unparsed: SkippedFile | None = None
    """Its HLO text, where that does not parse: a skipped file (the buffers' op_names and sources are
    then unknown, the bytes stand)."""


def module_memory(dump_module: DumpModule, top: int | None = 10) -> ModuleMemory | None:
    """Memory of a `dump.DumpModule` from its side files; None when it has no buffer assignment.

    Raises HloParseError / DumpError for a side file that is truncated or not what its name says;
    the HLO module (for op_name and source) is optional: when it does not parse those stay None and
    the row names it (`unparsed`).
    """
    found = dump_module.file(kind="buffer-assignment")
    if found is None:
        return None
    assignment_text = read_text(found.path)
    return assigned_memory(dump_module, assignment_text, read_buffer_assignment(assignment_text, str(found.path)), top)


def assigned_memory(
    dump_module: DumpModule, assignment_text: str, assignment: BufferAssignment, top: int | None = 10
) -> ModuleMemory:
    """`module_memory` with the buffer assignment already read (its text holds older dumps' live
    ranges): the report reads each assignment once for memory and padding alike."""
    report = _side_file(dump_module, "memory-usage-report", lambda text, path: read_usage_report(text, path))
    reported_total = (
        report.total_bytes
        if report
        else _side_file(dump_module, "buffer-assignment-values", lambda text, path: read_total_bytes_used(text))
    )
    if reported_total is not None:  # a file cut between two allocations reads whole: XLA's total tells
        check_total(assignment, reported_total)
    live = _side_file(dump_module, "live-range", read_live_ranges) or read_live_ranges(assignment_text, assignment.path)
    module: Module | None
    unparsed = None
    try:
        module = dump_module.module()
    except XlaInspectError as error:
        module, unparsed = None, SkippedFile.of(dump_module.hlo_path(), error)
    at = peak(live, assignment, module) if live is not None else None
    name = dump_module.name or dump_module.label
    return ModuleMemory(
        module=dump_module.label,
        function=name,
        module_id=dump_module.module_id,
        platform=dump_module.platform,
        total_bytes=sum(a.size for a in assignment.allocations),
        reported_total_bytes=reported_total,
        by_kind=bytes_by_kind(assignment),
        spaces=_spaces(assignment, report, dump_module.platform),
        peak_bytes=at.bytes if at else None,
        peak_time=at.time if at else None,
        peak_instruction=at.instruction if at else None,
        reported_peak_bytes=live.reported_peak_bytes if live else None,
        top=at.buffers[:top] if at else (),
        curve=at.curve if at else (),
        sequence=live.sequence if live else (),
        unparsed=unparsed,
    )


#: The side files `module_memory` reads.
SIDE_KINDS = ("buffer-assignment", "memory-usage-report", "buffer-assignment-values", "live-range")


def memory_inputs(dump_module: DumpModule) -> list[Path]:
    """Every file `module_memory` reads (the side files, the HLO for op_names): what a kept row is keyed by."""
    found = [dump_module.hlo_file(), *(dump_module.file(kind=kind) for kind in SIDE_KINDS)]
    return [f.path for f in found if f is not None]


Read = TypeVar("Read")


def _side_file(dump_module: DumpModule, kind: str, read: Callable[[str, str], Read]) -> Read | None:
    """`read(text, path)` of the module's side file of `kind`; None when it has none."""
    found = dump_module.file(kind=kind)
    if found is None:
        return None
    path = found.path
    return read(read_text(path), str(path))


def _spaces(assignment: BufferAssignment, report: UsageReport | None, platform: str | None) -> tuple[SpaceUsage, ...]:
    reported = {s.color: s for s in report.spaces} if report else {}
    return tuple(
        SpaceUsage(
            color,
            reported[color].name if color in reported else memory_space_name(color, platform),
            size,
            reported[color].total_bytes if color in reported else None,
        )
        for color, size in bytes_by_color(assignment).items()
    )
