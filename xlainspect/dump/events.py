"""A trace's events as columns: one numpy array per field, strings as codes, stats as sparse columns.

A host's trace holds millions of events. Held as one Python object each (with a dict of stats) they
take about a kilobyte apiece and every pass over them is Python's; as columns they take some 30 bytes
and the analyses select, group and sum them with numpy. Where an analysis needs a few events as
objects (the step markers, the compiles, the host thread inside one step) `select` makes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
Codes = npt.NDArray[np.int32]
Mask = npt.NDArray[np.bool_]

StatValue = int | float | str | bytes | None
"""An XStat's value: a number, string or bytes, a referenced stat's name (str), None where it holds none."""

INT, UINT, FLOAT, TEXT, BLOB, EMPTY = 0, 1, 2, 3, 4, 5
"""The kinds of a stat value in a column: an int64, a uint64 (both as int64 bits), a double (its bits),
a string (its code), bytes (an index into `Events.blobs`), none."""


@dataclass(slots=True)
class TraceEvent:
    """One event of a jax.profiler trace, as an object (`Events.select`)."""

    plane: str
    line: str
    """The thread (host) or stream (device) the event ran on."""
    name: str
    start_ns: float
    """Nanoseconds since the trace's first event."""
    duration_ns: float
    stats: dict[str, StatValue] = field(hash=False, compare=False)
    """The event's and its metadata's stats by name (`hlo_op`, `hlo_module`, `program_id`, `step_num`...)."""
    row: int = field(default=-1, compare=False)
    """Its row in the trace's `Events`."""

    @property
    def end_ns(self) -> float:
        return self.start_ns + self.duration_ns


@dataclass
class StatColumn:
    """One stat's values over the events that carry it themselves: `rows` ascending (int32: 4 bytes of
    the 21 a stat takes, and a trace of 2^31 events would be a 60 GB file)."""

    rows: Codes
    """(Searched with int32 keys: a key of another type makes numpy convert the whole column first.)"""
    kinds: npt.NDArray[np.int8]
    payloads: Ints
    """An INT's value, a UINT's or FLOAT's bits, a TEXT's code, a BLOB's index."""


@dataclass
class Events:
    """Every timed event of a trace, by start (the longer, enclosing one first where two start together)."""

    start_ns: Floats
    """Nanoseconds since the trace's first event."""
    duration_ns: Floats
    name: Codes
    """The event's name (its metadata's), a code of `strings`."""
    thread: Codes
    """An index of `threads`."""
    metadata: Codes
    """An index of `metadata_stats` (-1: no metadata)."""
    strings: list[str]
    threads: list[tuple[str, str]]
    """(plane, line) of each thread: the line is its display name, else its name."""
    metadata_stats: list[dict[str, StatValue]]
    """The stats an event's metadata carries (XLA puts most of a GPU kernel's there)."""
    own: dict[str, StatColumn]
    """The stats events carry themselves, by name."""
    blobs: list[bytes] = field(default_factory=list[bytes])
    _codes: dict[str, int] = field(default_factory=dict[str, int], repr=False)

    def __len__(self) -> int:
        return len(self.start_ns)

    def __iter__(self) -> Iterator[TraceEvent]:
        """Every event as an object: for small traces and tests; the analyses select what they need."""
        return iter(self.select(np.arange(len(self))))

    @property
    def end_ns(self) -> Floats:
        return self.start_ns + self.duration_ns

    def code(self, text: str) -> int:
        """The code of a string (-1 where no event or stat has it)."""
        if not self._codes:
            self._codes.update((s, k) for k, s in enumerate(self.strings))
        return self._codes.get(text, -1)

    def on_device(self) -> Mask:
        """Events on a `/device:*` plane (a GPU stream, a TPU core)."""
        device = np.array([plane.startswith("/device") for plane, _ in self.threads] + [False], np.bool_)
        return device[self.thread]

    def line_codes(self) -> Codes:
        """Each thread's line (its display name, else its name) as a code of `strings`, by thread."""
        return np.array([self.intern(line) for _, line in self.threads], np.int32)

    def named(self, names: set[str] | frozenset[str]) -> Mask:
        """Events whose name is one of `names`."""
        codes = [self.code(n) for n in names]
        return np.isin(self.name, np.array([c for c in codes if c >= 0], np.int32))

    def has(self, stat: str) -> Mask:
        """Events that carry `stat`, themselves or through their metadata."""
        found = np.array(self._per_metadata(stat, lambda value: True, False), np.bool_)[self.metadata]
        column = self.own.get(stat)
        if column is not None:
            found[column.rows] = True
        return found

    def ints(self, stat: str) -> tuple[Ints, Mask]:
        """`stat` where it is an integer: (values, where), the event's own value over its metadata's."""
        return self.ints_at(stat, np.arange(len(self)))

    def ints_at(self, stat: str, rows: Ints) -> tuple[Ints, Mask]:
        """`ints` of the events `rows` only (memory for them, not the trace)."""
        values = np.array(self._per_metadata(stat, lambda v: _int64(v) if _is_int(v) else None, 0), np.int64)
        where = np.array(self._per_metadata(stat, _is_int, False), np.bool_)
        values, where = values[self.metadata[rows]], where[self.metadata[rows]]
        column = self.own.get(stat)
        if column is not None and len(column.rows):
            at = np.minimum(np.searchsorted(column.rows, rows.astype(np.int32)), len(column.rows) - 1)
            hit = column.rows[at] == rows
            values[hit] = column.payloads[at[hit]]
            where[hit] = (column.kinds[at[hit]] == INT) | (column.kinds[at[hit]] == UINT)
        return values, where

    def carriers(self, stat: str) -> Ints:
        """The rows of the events that carry `stat`, themselves or through their metadata."""
        column = self.own.get(stat)
        own = column.rows.astype(np.int64) if column is not None else np.zeros(0, np.int64)
        metadata = [k for k, stats in enumerate(self.metadata_stats) if stat in stats]
        if not metadata:
            return own
        return np.union1d(own, np.flatnonzero(np.isin(self.metadata, metadata)))

    def codes(self, stat: str) -> Codes:
        """`stat` where it is a string, as a code of `strings` (-1 elsewhere)."""
        found = np.array(self._per_metadata(stat, self._text_code, -1), np.int32)[self.metadata]
        column = self.own.get(stat)
        if column is not None:
            found[column.rows] = np.where(column.kinds == TEXT, column.payloads, -1)
        return found

    def value(self, stat: str, row: int) -> StatValue:
        """One event's `stat` as the object it is (None: absent)."""
        column = self.own.get(stat)
        if column is not None:
            at = int(np.searchsorted(column.rows, np.int32(row)))
            if at < len(column.rows) and column.rows[at] == row:
                return self._object(int(column.kinds[at]), int(column.payloads[at]))
        metadata = int(self.metadata[row])
        return self.metadata_stats[metadata].get(stat) if metadata >= 0 else None

    def select(self, rows: Ints | list[int]) -> list[TraceEvent]:
        """The events of `rows` as objects, each with its stats."""
        rows = np.asarray(rows, np.int64)
        own = self._own_stats(rows)
        found: list[TraceEvent] = []
        at: list[int] = rows.tolist()
        threads: list[int] = self.thread[rows].tolist()
        names: list[int] = self.name[rows].tolist()
        metadatas: list[int] = self.metadata[rows].tolist()
        starts: list[float] = self.start_ns[rows].tolist()
        durations: list[float] = self.duration_ns[rows].tolist()
        for k, row in enumerate(at):
            plane, line = self.threads[threads[k]]
            stats = self.metadata_stats[metadatas[k]] if metadatas[k] >= 0 else {}
            if own[k]:
                stats = {**stats, **own[k]}
            found.append(TraceEvent(plane, line, self.strings[names[k]], starts[k], durations[k], stats, row))
        return found

    def _own_stats(self, rows: Ints) -> list[dict[str, StatValue]]:
        """The own stats of each of `rows`: each column searched for them at once."""
        found: list[dict[str, StatValue]] = [{} for _ in range(len(rows))]
        for name, column in self.own.items():
            if not len(column.rows):
                continue
            at = np.minimum(np.searchsorted(column.rows, rows.astype(np.int32)), len(column.rows) - 1)
            hit = np.flatnonzero(column.rows[at] == rows)
            for k, value in zip(hit.tolist(), self._objects(column.kinds[at[hit]], column.payloads[at[hit]])):
                found[k][name] = value
        return found

    def _objects(self, kinds: npt.NDArray[np.int8], payloads: Ints) -> list[StatValue]:
        """`_object` of each, a column at once where all are of one kind (a stat's values nearly always are)."""
        kind = int(kinds[0]) if len(kinds) else INT
        if not np.all(kinds == kind):
            return [self._object(k, p) for k, p in zip(kinds.tolist(), payloads.tolist())]
        if kind == INT:
            return payloads.tolist()
        if kind == UINT:
            return payloads.view(np.uint64).tolist()
        if kind == FLOAT:
            return payloads.view(np.float64).tolist()
        if kind == TEXT:
            return [self.strings[p] for p in payloads.tolist()]
        return [self._object(kind, p) for p in payloads.tolist()]

    def _object(self, kind: int, payload: int) -> StatValue:
        if kind == INT:
            return payload
        if kind == UINT:
            return payload & 0xFFFFFFFFFFFFFFFF
        if kind == FLOAT:
            return float(np.array(payload, np.int64).view(np.float64))
        if kind == TEXT:
            return self.strings[payload]
        if kind == BLOB:
            return self.blobs[payload]
        return None

    def intern(self, text: str) -> int:
        """The code of `text`, added to `strings` where new."""
        code = self.code(text)
        if code < 0:
            code = len(self.strings)
            self.strings.append(text)
            self._codes[text] = code
        return code

    def _per_metadata(
        self, stat: str, convert: Callable[[StatValue], int | bool | None], default: int | bool
    ) -> list[int | bool]:
        """Each metadata's `stat` through `convert` (None: absent), else `default`; and `default` last, for
        the events of no metadata (-1)."""
        per: list[int | bool] = [default] * (len(self.metadata_stats) + 1)
        for k, stats in enumerate(self.metadata_stats):
            if stat in stats:
                value = convert(stats[stat])
                per[k] = default if value is None else value
        return per

    def _text_code(self, value: StatValue) -> int:
        return self.intern(value) if isinstance(value, str) else -1


def _is_int(value: StatValue) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int64(value: StatValue) -> int:
    """A uint64 as the int64 of its bits (as own stats' columns hold it)."""
    assert isinstance(value, int)
    return value - (1 << 64) if value >= 1 << 63 else value
