"""What an op event names: its module's label (as the dump's), its op, and the dump's modules it ran;
which events of a thread no other encloses."""

from __future__ import annotations

import numpy as np

from xlainspect.dump.directory import Dump
from xlainspect.dump.events import Floats, Ints, TraceEvent
from xlainspect.dump.module import DumpModule


def event_label(event: TraceEvent) -> str:
    program = event.stats.get("program_id")
    name = str(event.stats["hlo_module"])
    return module_label(program, name) if isinstance(program, int) else name


def module_label(program_id: int, name: str) -> str:
    """The trace's program_id is the dump's module id: label as `DumpModule.label` does, without the host."""
    return f"module_{program_id:04d}.{name}"


def op_name(event: TraceEvent) -> str:
    """The op an annotation names: the last `::` segment of `hlo_op`."""
    return str(event.stats["hlo_op"]).rpartition("::")[2]


def outermost(events: list[TraceEvent]) -> list[TraceEvent]:
    """The events no other of `events` encloses (`events` by start, the enclosing first)."""
    found: list[TraceEvent] = []
    for event in events:
        if not found or event.start_ns >= found[-1].end_ns:
            found.append(event)
    return found


def outermost_positions(starts: Floats, ends: Floats) -> Ints:
    """The positions of the events no earlier one encloses (`outermost`, as columns), for one thread's
    events by start, whose events nest as TraceMe's scopes do: an event is outermost where it starts at or
    after every earlier one's end."""
    if not len(starts):
        return np.zeros(0, np.int64)
    reach = np.maximum.accumulate(ends)
    return np.flatnonzero(np.concatenate([[True], starts[1:] >= reach[:-1]]))


def traced_modules(dump: Dump, labels: set[str]) -> list[DumpModule]:
    return [m for m in dump.modules if dump_label(m) in labels]


def dump_label(module: DumpModule) -> str:
    """The label `_label` gives an op event of this module (the host prefix is not in the trace)."""
    return module.label.rpartition("/")[2]
