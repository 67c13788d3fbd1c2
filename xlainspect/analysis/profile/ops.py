"""The op events of compiled functions as columns: which module, function and op ran, on which device,
when, for how long, in which execution and step. A host's trace holds hundreds of thousands of them;
every figure per op, per step and per function is a group-by over these arrays."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace

import numpy as np

from xlainspect.analysis.profile.events import module_label
from xlainspect.dump.events import Codes, Events, Floats, Ints, Mask


@dataclass
class OpEvents:
    """Op events (events with `hlo_op`) of compiled functions, by start. Strings are codes of `strings`
    (the trace's: `Events.strings`)."""

    rows: Ints
    """Their rows in the trace's `Events`."""
    start_ns: Floats
    duration_ns: Floats
    label: Codes
    """The module's label: `module_0029.jit_train_step` (as the dump's) where the event names its
    program_id, else the module's name."""
    function: Codes
    """The `hlo_module`: the compiled function (`jit_train_step`)."""
    annotated: Codes
    """The op the annotation names: the last `::` segment of `hlo_op`."""
    op: Codes
    """The op it ran for: the annotation's, or where a command buffer ran it, the one `placement.place`
    found (-1: not placed)."""
    name: Codes
    """The event's (kernel's) own name."""
    device: Codes
    """The device: its `/device:*` plane less `/device:`; on CPU `device N` (XLA's `device_ordinal`)."""
    line: Codes
    """The line (thread or stream) it ran on."""
    hlo_op: Codes
    """The `hlo_op` annotation whole."""
    copies: Mask
    """A memcpy or memset (`memcpy_details`, `Memset_details`: CUPTI's activities)."""
    program: Mask
    """It names its program_id (the dump's module id)."""
    run: Ints
    """PjRt's `run_id` (`NONE` where absent)."""
    strings: list[str]
    launched: Floats
    """When the host launched it (NaN: unknown)."""
    step: Ints
    """The index of its step (-1: none)."""
    steady: Ints
    """The index of its step where figures a step count it (-1: not counted): a step without a compile,
    as the summary's step is (`steady_steps`); where its module ran in none, any step it ran in."""

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def end_ns(self) -> Floats:
        return self.start_ns + self.duration_ns

    def only(self, keep: Mask) -> OpEvents:
        """The events where `keep`."""
        return replace(self, **{f.name: getattr(self, f.name)[keep] for f in fields(self) if f.name != "strings"})

    def text(self, code: int) -> str:
        return self.strings[code]

    def code(self, text: str) -> int:
        """The code of `text` among these events' strings (-1: none has it)."""
        try:
            return self.strings.index(text)
        except ValueError:
            return -1

    def labels(self) -> set[str]:
        codes: list[int] = np.unique(self.label).tolist()
        return {self.strings[c] for c in codes}


def op_events(events: Events, rows: Ints) -> OpEvents:
    """The events of `rows` (those with `hlo_op` of compiled functions) as columns."""
    function = events.codes("hlo_module")[rows]
    program, has_program = events.ints_at("program_id", rows)
    hlo_op = events.codes("hlo_op")[rows]
    annotated = _recoded(events, hlo_op, _op_of)
    return OpEvents(
        rows,
        events.start_ns[rows],
        events.duration_ns[rows],
        _labels(events, function, program, has_program),
        function,
        annotated,
        annotated.copy(),
        events.name[rows],
        _devices(events, rows),
        events.line_codes()[events.thread[rows]],
        hlo_op,
        (events.has("memcpy_details") | events.has("Memset_details"))[rows],
        has_program,
        or_none(events, "run_id", rows),
        events.strings,
        np.full(len(rows), np.nan),
        np.full(len(rows), -1, np.int64),
        np.full(len(rows), -1, np.int64),
    )


def grouped(keys: list[Ints | Codes | Mask]) -> tuple[Ints, Ints, Ints]:
    """Rows grouped by `keys` (arrays of one length): (order: the rows group by group, each group's rows in
    their order; the groups' bounds in it; each row's group), groups ordered by their first row."""
    if not len(keys[0]):
        empty = np.zeros(0, np.int64)
        return empty, np.zeros(1, np.int64), empty
    first, group = _firsts(_combined(keys))
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    group = rank[group]
    order = np.argsort(group, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(group, minlength=len(first)))])
    return order, bounds, group


NONE = np.iinfo(np.int64).min
"""An integer stat's value where an event has none."""


def distinct_rows(keys: list[Ints | Codes | Mask]) -> tuple[list[list[int]], Ints]:
    """The distinct rows of the columns `keys` (as lists of ints), and each row's index among them."""
    if not len(keys[0]):
        return [], np.zeros(0, np.int64)
    first, back = _firsts(_combined(keys))
    return np.stack([np.asarray(k, np.int64)[first] for k in keys], axis=1).tolist(), back


def _combined(keys: list[Ints | Codes | Mask]) -> Ints:
    """One int64 per row that differs where the rows of `keys` differ: each column's dense rank, in mixed
    radix (a unique over one column of ints, not over rows of many)."""
    combined = np.zeros(len(keys[0]), np.int64)
    for key in keys:
        count, rank = _dense_rank(key)
        combined *= count
        combined += rank
    return combined


def _dense_rank(key: Ints | Codes | Mask) -> tuple[int, Ints]:
    """How many distinct values `key` holds, and each row's rank among them (ascending): what
    `np.unique(key, return_inverse=True)` gives. Codes (string codes, devices, flags) span few values: a
    table of them ranks the rows without sorting them (a sort of millions of op events, and its int64
    temporaries, were most of a large trace's peak memory)."""
    values = key.view(np.uint8) if key.dtype == np.bool_ else key
    low, high = int(values.min()), int(values.max())
    if high - low > 2 * len(values):
        distinct, rank = np.unique(values, return_inverse=True)
        return len(distinct), np.asarray(rank, np.int64).ravel()
    present = np.zeros(high - low + 1, np.bool_)
    present[values - low] = True
    ranks = np.cumsum(present) - 1
    return int(ranks[-1]) + 1, ranks[values - low]


def _firsts(combined: Ints) -> tuple[Ints, Ints]:
    """The distinct values of `combined` in ascending order, as (the first row of each, each row's index
    among them): `np.unique(combined, return_index=True, return_inverse=True)` without the values."""
    count, rank = _dense_rank(combined)
    first = np.full(count, len(combined), np.int64)
    np.minimum.at(first, rank, np.arange(len(combined)))
    return first, rank


def or_none(events: Events, stat: str, rows: Ints) -> Ints:
    """`stat` of the events `rows` where it is an integer, else `NONE`."""
    values, where = events.ints_at(stat, rows)
    return np.where(where, values, NONE)


def _labels(events: Events, function: Codes, program: Ints, has_program: Mask) -> Codes:
    """`module_label(program_id, hlo_module)` where the event has a program_id, else the module's name."""
    label = function.copy()
    if has_program.any():
        pairs, back = distinct_rows([program[has_program], function[has_program]])
        codes = [events.intern(module_label(p, events.strings[f])) for p, f in pairs]
        label[has_program] = np.array(codes, np.int32)[back]
    return label


def _op_of(hlo_op: str) -> str:
    """The op an annotation names: the last `::` segment of `hlo_op`."""
    return hlo_op.rpartition("::")[2]


def _recoded(events: Events, codes: Codes, change: Callable[[str], str]) -> Codes:
    """`codes` of the strings `change` makes of theirs, called once per distinct one."""
    if not len(codes):
        return codes
    distinct, back = np.unique(codes, return_inverse=True)
    texts: list[int] = distinct.tolist()
    new = np.array([events.intern(change(events.strings[c])) for c in texts], np.int32)
    return new[np.asarray(back).ravel()]


def _devices(events: Events, rows: Ints) -> Codes:
    """The device of each op event: its `/device:*` plane, else XLA:CPU's `device_ordinal`, else its plane."""
    if not len(rows):
        return np.zeros(0, np.int32)
    ordinal, has_ordinal = events.ints_at("device_ordinal", rows)
    distinct, back = distinct_rows([events.thread[rows], np.where(has_ordinal, ordinal, -1), has_ordinal])
    names: list[int] = []
    for thread, number, has in distinct:
        plane = events.threads[thread][0]
        device = plane.removeprefix("/device:") if plane.startswith("/device") else None
        names.append(events.intern(device or (f"device {number}" if has else plane)))
    return np.array(names, np.int32)[back]
