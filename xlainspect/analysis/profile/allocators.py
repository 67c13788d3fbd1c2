"""Memory over a trace by allocator, from the allocators' own events (XProf's memory_profile).

A BFC allocator traced by the profiler records each allocation and deallocation as an instant event,
`MemoryAllocation` / `MemoryDeallocation` (tsl's `xplane_schema.h`), with its state after it:
`bytes_allocated`, `bytes_reserved`, `bytes_available`, `peak_bytes_in_use`, `fragmentation`, and the
block's `addr`, `allocation_bytes`, `requested_bytes`, `tf_op`, `region_type`
(xla/tsl/framework/bfc_allocator.cc, `AddTraceMe`). XProf's memory_profile reads the same events
(xprof's xplane_to_memory_profile.cc): bytes in use are reserved + allocated, the peak in the trace is
the last event at the most in use, the allocator's lifetime peak is its `peak_bytes_in_use` stat.
"""

from __future__ import annotations

import numpy as np

from xlainspect.analysis.profile.model import AllocatorMemory, LiveAllocation, StepTime
from xlainspect.dump.events import Events, Ints, Mask


def allocators(allocations: Events | None, steps: list[StepTime]) -> list[AllocatorMemory]:
    """Each allocator's peak, the allocations live there and its bytes in use over time, by name;
    none where the trace records no allocation events."""
    if allocations is None or not len(allocations):
        return []
    names = allocations.codes("allocator_name")
    codes: list[int] = np.unique(names[names >= 0]).tolist()
    codes.sort(key=lambda code: allocations.strings[code])
    return [_allocator(allocations, np.flatnonzero(names == code), steps) for code in codes]


def _allocator(events: Events, rows: Ints, steps: list[StepTime]) -> AllocatorMemory:
    stat = {name: events.ints(name)[0][rows] for name in ("bytes_allocated", "bytes_reserved", "bytes_available")}
    in_use = stat["bytes_allocated"] + stat["bytes_reserved"]
    peak = int(np.flatnonzero(in_use == in_use.max())[-1])
    seconds = events.start_ns[rows] / 1e9
    live = _live(events, rows[: peak + 1])
    fragmentation = events.value("fragmentation", int(rows[peak]))
    return AllocatorMemory(
        name=events.strings[int(events.codes("allocator_name")[rows[0]])],
        peak_bytes_in_use=int(events.ints("peak_bytes_in_use")[0][rows].max()),
        peak_bytes_in_trace=int(in_use[peak]),
        peak_time_seconds=float(seconds[peak]),
        peak_step=_step_at(steps, float(seconds[peak])),
        bytes_allocated=int(stat["bytes_allocated"][peak]),
        bytes_reserved=int(stat["bytes_reserved"][peak]),
        fragmentation=float(fragmentation) if isinstance(fragmentation, (int, float)) else 0.0,
        capacity_bytes=int(in_use[peak] + stat["bytes_available"][peak]),
        events=len(rows),
        live=live,
        made_before_trace_bytes=max(int(stat["bytes_allocated"][peak]) - sum(a.bytes for a in live), 0),
        timeline=list(zip(seconds.tolist(), in_use.tolist())),
    )


def _live(events: Events, rows: Ints) -> list[LiveAllocation]:
    """The allocations among `rows` (in time order) whose address's last event is an allocation."""
    address = events.ints("addr")[0][rows]
    allocated: Mask = events.named({"MemoryAllocation"})[rows]
    _, last_reversed = np.unique(address[::-1], return_index=True)
    last = len(rows) - 1 - last_reversed
    kept = np.sort(last[allocated[last]])
    sizes, requested = (events.ints(name)[0][rows[kept]] for name in ("allocation_bytes", "requested_bytes"))
    ops, regions = (events.codes(name)[rows[kept]] for name in ("tf_op", "region_type"))
    columns: list[list[int]] = [rows[kept].tolist(), sizes.tolist(), requested.tolist(), ops.tolist(), regions.tolist()]
    found = [
        LiveAllocation(size, asked, float(events.start_ns[row]) / 1e9, _text(events, op), _text(events, region))
        for row, size, asked, op, region in zip(*columns)
    ]
    return sorted(found, key=lambda a: -a.bytes)


def _text(events: Events, code: int) -> str | None:
    """A string stat's text, None where absent or empty."""
    return events.strings[code] or None if code >= 0 else None


def _step_at(steps: list[StepTime], seconds: float) -> int | None:
    """The number of the step whose wall holds `seconds` (None: none)."""
    return next((s.number for s in steps if s.start_seconds <= seconds < s.start_seconds + s.wall_seconds), None)
