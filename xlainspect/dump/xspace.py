"""Decoding an XSpace (`<host>.xplane.pb`) into columns: `SpaceReader`.

The schema is XLA's `xla/tsl/profiler/protobuf/xplane.proto` (package `tensorflow.profiler`: XSpace,
XPlane, XLine, XEvent, XStat, XEventMetadata, XStatMetadata), declared below field by field and built
into message classes by the `protobuf` runtime (the `xlainspect[profile]` extra). No package on the
index ships a generated `xplane_pb2` short of tensorflow: jaxlib 0.10.2 reads XSpace in C++ only
(`jax.profiler.ProfileData`) and xprof 2.24.2 has no `xplane_pb2` either. Declaring the fields, not
shipping generated code, keeps the reader working with every protobuf from 4.21 on; the maps are
read as their wire form (repeated key/value entries). `tests/test_profile.py` compares every event
with jaxlib's reader.

The runtime's classes read what is small: each plane's metadata (event names and the stats XLA puts on
them), each line's name and time base, the HLO the profiler embeds. The events, millions of them, are
never made into messages: each plane and each line is a length-delimited field of the file, so a
line's events are found by walking its fields (`wire.repeated`) and decoded all at once, in chunks, by
`wire.decode`, in the processes `workers.map_shared` lends; their stats likewise. A plain file is
memory-mapped and its pages given back after each line, so memory holds the columns, not the file.

Kept of the events: those that take time (duration > 0: instant events are the thread pool's hand-off
markers, `ThreadpoolListener::Record/StartRegion/StopRegion`, half of a GPU trace's events, which only
link a task to the thread that ran it), and apart from them the allocators' instant events
(`ALLOCATION_EVENTS`, `SpaceReader.allocations`: what XProf's memory_profile reads). Kept of the
stats: all but TraceMe's own (`_r` root, `_p`/`_c` producer and consumer, `_pt`/`_ct` their types,
`_src`: names starting with `_`, tsl's `xplane_schema.h` internal stats), which link events into flows
and name nothing a profile reports.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import mmap
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from xlainspect.dump import wire
from xlainspect.dump.events import (
    BLOB,
    EMPTY,
    FLOAT,
    INT,
    TEXT,
    UINT,
    Codes,
    Events,
    Ints,
    StatColumn,
    StatValue,
)
from xlainspect.dump.files import read_bytes
from xlainspect.errors import XlaInspectError
from xlainspect.settings import trim_freed_memory
from xlainspect.workers import map_shared

INSTALL_HINT = "reading profiles needs protobuf: pip install 'xlainspect[profile]' (or pip install protobuf)"
ALLOCATION_EVENTS = frozenset({"MemoryAllocation", "MemoryDeallocation"})
"""The allocators' instant events (tsl's `xplane_schema.h` HostEventType kMemoryAllocation and
kMemoryDeallocation: what a BFC allocator records when the profiler traces memory, with its
`allocator_name`, `bytes_allocated`, `peak_bytes_in_use`, `fragmentation`...), kept though they take no time."""
CHUNK_EVENTS = 1 << 17
"""Events decoded at once: enough to keep numpy busy, few enough to bound the temporaries."""
WALKED_ALONE_BYTES = 8 << 20
"""A plane's lines of fewer bytes are walked in this process alone: a fork costs more than their walk."""
CHUNKS_AT_ONCE = 8
"""Chunks handed to the workers at once, after which the file's pages they read are given back."""
TRIMMED_BYTES = 64 << 20
"""Temporaries freed after which the heap's free pages are given back (`settings.trim_freed_memory`): a
large read's, not a small host's (each trim costs the next allocations their pages again)."""
_EVENT_BYTES = 64
"""About what an event's decode allocates (its columns, stats and the decode's temporaries)."""


class ProfileDependencyError(XlaInspectError):
    """The `profile` extra (protobuf) is not installed."""


# (field, number, type, repeated): type is a scalar name or another message of this schema.
_SCHEMA = {
    "XSpace": [
        ("planes", 1, "XPlane", True),
        ("errors", 2, "string", True),
        ("warnings", 3, "string", True),
        ("hostnames", 4, "string", True),
    ],
    "XPlane": [
        ("id", 1, "int64", False),
        ("name", 2, "string", False),
        ("lines", 3, "XLine", True),
        ("event_metadata", 4, "EventMetadataEntry", True),
        ("stat_metadata", 5, "StatMetadataEntry", True),
        ("stats", 6, "XStat", True),
    ],
    "EventMetadataEntry": [("key", 1, "int64", False), ("value", 2, "XEventMetadata", False)],
    "StatMetadataEntry": [("key", 1, "int64", False), ("value", 2, "XStatMetadata", False)],
    "XLine": [
        ("id", 1, "int64", False),
        ("display_id", 10, "int64", False),
        ("name", 2, "string", False),
        ("display_name", 11, "string", False),
        ("timestamp_ns", 3, "int64", False),
        ("duration_ps", 9, "int64", False),
        ("events", 4, "XEvent", True),
    ],
    "XEvent": [
        ("metadata_id", 1, "int64", False),
        ("offset_ps", 2, "int64", False),
        ("num_occurrences", 5, "int64", False),
        ("duration_ps", 3, "int64", False),
        ("stats", 4, "XStat", True),
    ],
    "XStat": [
        ("metadata_id", 1, "int64", False),
        ("double_value", 2, "double", False),
        ("uint64_value", 3, "uint64", False),
        ("int64_value", 4, "int64", False),
        ("str_value", 5, "string", False),
        ("bytes_value", 6, "bytes", False),
        ("ref_value", 7, "uint64", False),
    ],
    "XEventMetadata": [
        ("id", 1, "int64", False),
        ("name", 2, "string", False),
        ("metadata", 3, "bytes", False),
        ("display_name", 4, "string", False),
        ("stats", 5, "XStat", True),
    ],
    "XStatMetadata": [("id", 1, "int64", False), ("name", 2, "string", False), ("description", 3, "string", False)],
    # xla/service/hlo.proto: HloProto's HloModuleProto, kept as bytes for jaxlib to print (`embedded_hlo_text`)
    "HloProto": [("hlo_module", 1, "bytes", False)],
}


Message = Any
"""A message of `_SCHEMA` (XSpace, XPlane, ...): its class is built at run time, so it has no static type."""


@functools.cache
def message_class(name: str) -> Any:
    """A message class of `_SCHEMA` (XSpace, HloProto), built in a private descriptor pool."""
    try:  # as modules: the classes made from them are as dynamic as their typing allows
        descriptor_pb2 = importlib.import_module("google.protobuf.descriptor_pb2")
        descriptor_pool = importlib.import_module("google.protobuf.descriptor_pool")
        message_factory = importlib.import_module("google.protobuf.message_factory")
    except ImportError:
        raise ProfileDependencyError(INSTALL_HINT) from None
    proto = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(
        name="xlainspect/xplane.proto", package="tensorflow.profiler", syntax="proto2"
    )  # proto2: HasField tells which stat value is set
    for message_name, fields in _SCHEMA.items():
        message = file.message_type.add(name=message_name)
        for field_name, number, kind, repeated in fields:
            declared = message.field.add(
                name=field_name, number=number, label=proto.LABEL_REPEATED if repeated else proto.LABEL_OPTIONAL
            )
            if kind in _SCHEMA:
                declared.type, declared.type_name = proto.TYPE_MESSAGE, f".tensorflow.profiler.{kind}"
            else:
                declared.type = getattr(proto, f"TYPE_{kind.upper()}")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    descriptor = pool.FindMessageTypeByName(f"tensorflow.profiler.{name}")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)  # protobuf before 4.22


@functools.cache
def _ref_field() -> Any:
    """The descriptor of XStat.ref_value in XSpace's pool (`ListFields` hands back these very objects)."""
    stat = message_class("XSpace").DESCRIPTOR.fields_by_name["planes"].message_type.fields_by_name["stats"]
    return stat.message_type.fields_by_name["ref_value"]


def _stats(stats: Iterable[Message], names: dict[int, str]) -> dict[str, StatValue]:
    """Stats by name; a reference value is the name of the stat metadata it points at. `ListFields` gives
    the set fields by number: metadata_id (1), then the one value. One comprehension for the usual stat
    (both set); `_each_stat` for the rest (metadata_id 0 is not written, a stat may hold no value)."""
    ref = _ref_field()
    try:
        return {
            names[key]: names.get(value, "") if field is ref else value
            for (_, key), (field, value) in map(_list_fields(), stats)
        }
    except (ValueError, KeyError):
        return _each_stat(stats, names)


def _each_stat(stats: Iterable[Message], names: dict[int, str]) -> dict[str, StatValue]:
    values: dict[str, StatValue] = {}
    for stat in stats:
        fields = [(f, v) for f, v in stat.ListFields() if f.name != "metadata_id"]
        value: StatValue = fields[0][1] if fields else None
        if fields and fields[0][0] is _ref_field():
            value = names.get(fields[0][1], "")
        values[names.get(stat.metadata_id, str(stat.metadata_id))] = value
    return values


@functools.cache
def _list_fields() -> Any:
    """XStat's `ListFields`, unbound, to map over a repeated field in C. The class comes from the public
    `GetMessageClass`: the descriptor's private `_concrete_class` (upb) raised `SystemError: error return
    without exception set` in some processes (tests/test_dump.py then tests/test_profile.py under
    `pytest -n 2`)."""
    message_factory = importlib.import_module("google.protobuf.message_factory")
    stat = _ref_field().containing_type
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(stat).ListFields
    return message_factory.MessageFactory(stat.file.pool).GetPrototype(stat).ListFields  # protobuf before 4.22


@dataclass
class _Chunk:
    """One chunk of a line's events, decoded: the timed events' fields and their stats (by event)."""

    metadata_id: Ints
    offset_ps: Ints
    duration_ps: Ints
    stat_event: Ints
    stat_id: Ints
    stat_kind: npt.NDArray[np.int8]
    stat_payload: Ints
    texts: list[tuple[int, bytes]]
    """(stat, bytes) of string and bytes values: decoded to str or kept as bytes by the reader."""

    def take(self, events: npt.NDArray[np.bool_]) -> _Chunk:
        """The chunk's `events` and their stats, renumbered."""
        stats = events[self.stat_event]
        position = np.cumsum(stats) - 1
        return _Chunk(
            self.metadata_id[events],
            self.offset_ps[events],
            self.duration_ps[events],
            (np.cumsum(events) - 1)[self.stat_event[stats]],
            self.stat_id[stats],
            self.stat_kind[stats],
            self.stat_payload[stats],
            [(int(position[stat]), raw) for stat, raw in self.texts if stats[stat]],
        )


def _decode_chunk(buffer: wire.Bytes, starts: Ints, ends: Ints, instants: Ints, dropped: Ints) -> _Chunk:
    """A chunk of XEvents: metadata_id (1), offset_ps (2), duration_ps (3), stats (4); the events that
    take no time are dropped with their stats, but for those of the metadata ids `instants`; so are the
    stats of the metadata ids `dropped` (`_kept_stats`). XStat: metadata_id (1), then one value: double
    (2), uint64 (3), int64 (4), string (5), bytes (6), a reference to a stat metadata's name (7)."""
    events = wire.decode(buffer, starts, ends)
    count = len(starts)
    metadata_id, offset, duration = (_dense(events, n, count) for n in (1, 2, 3))
    timed = (duration != 0) | np.isin(metadata_id, instants)
    kept = np.cumsum(timed) - 1
    owner = events.owner.get(4, np.zeros(0, np.int64))
    stat_start, stat_end = events.value.get(4, owner), events.end.get(4, owner)
    live = timed[owner]
    owner, stat_start, stat_end = owner[live], stat_start[live], stat_end[live]
    order = np.argsort(owner, kind="stable")  # an event's stats in their order
    owner, stat_start, stat_end = owner[order], stat_start[order], stat_end[order]
    kept_stats, stat_id, stats = _kept_stats(buffer, stat_start, stat_end, dropped)
    owner = owner[kept_stats]
    kind = np.full(len(owner), EMPTY, np.int8)
    payload = np.zeros(len(owner), np.int64)
    texts: list[tuple[int, bytes]] = []
    for number, value_kind in ((2, FLOAT), (3, UINT), (4, INT), (7, TEXT)):
        if number in stats.owner:
            kind[stats.owner[number]], payload[stats.owner[number]] = value_kind, stats.value[number]
    for number, value_kind in ((5, TEXT), (6, BLOB)):
        for stat, begin, end in zip(*(d.get(number, []) for d in (stats.owner, stats.value, stats.end))):
            kind[stat] = -value_kind  # resolved by the reader: decoded, interned
            texts.append((int(stat), bytes(buffer[begin:end])))
    return _Chunk(
        metadata_id[timed],
        offset[timed],
        duration[timed],
        kept[owner],
        stat_id,
        kind,
        payload,
        texts,
    )


def _kept_stats(buffer: wire.Bytes, starts: Ints, ends: Ints, dropped: Ints) -> tuple[Ints, Ints, wire.Decoded]:
    """The XStats in `buffer[starts:ends]` but those of the metadata ids `dropped` (TraceMe's own `_`
    stats: as many as all the others on a CPU trace's XLA ops), their values not decoded: first each one's
    first field (its metadata_id, as protobuf writes fields by number), then the rest of the others. A stat
    whose first field is another is decoded whole. (Which of all were kept; their metadata ids; their
    fields, numbered as the kept ones.)"""
    first = wire.decode(buffer, starts, ends, rounds=1)
    leading = np.zeros(len(starts), np.bool_)
    leading[first.owner.get(1, np.zeros(0, np.int64))] = True
    stat_id = _dense(first, 1, len(starts))
    kept = np.flatnonzero(~(leading & np.isin(stat_id, dropped)))
    rest = wire.decode(buffer, np.where(leading, first.stop, starts)[kept], ends[kept])
    stat_id = stat_id[kept]
    if 1 in rest.owner:  # stats whose metadata_id came later: those kept decoded whole again
        stat_id[rest.owner[1]] = rest.value[1]
        kept = kept[~np.isin(stat_id, dropped)]
        rest = wire.decode(buffer, starts[kept], ends[kept])
        stat_id = _dense(rest, 1, len(kept))
    return kept, stat_id, rest


def _dense(decoded: wire.Decoded, number: int, count: int) -> Ints:
    """A field that occurs at most once a message, for every message (0 where absent, as proto3 omits it)."""
    found = np.zeros(count, np.int64)
    if number in decoded.owner:
        found[decoded.owner[number]] = decoded.value[number]
    return found


@dataclass
class _Plane:
    """What a plane's metadata says, as lookups for its events' codes."""

    name: str
    metadata_ids: Ints
    """Sorted event metadata ids, and beside them each one's name code and metadata index."""
    metadata_names: Codes
    metadata_index: Codes
    stat_ids: Ints
    """Sorted stat metadata ids, and each one's name code."""
    stat_names: Codes
    instants: Ints
    """The ids of the instant events kept (`ALLOCATION_EVENTS`)."""
    dropped: Ints
    """The ids of the stats not kept: TraceMe's own (`_`-named: flows, source lines, contexts)."""


@dataclass
class SpaceReader:
    """XSpace files decoded into one `Events` table (several files: one host's several XSpaces)."""

    strings: list[str] = field(default_factory=list[str])
    threads: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    metadata_stats: list[dict[str, StatValue]] = field(default_factory=list[dict[str, StatValue]])
    hostnames: list[str] = field(default_factory=list[str])
    hlo_protos: dict[int, tuple[str, bytes]] = field(default_factory=dict[int, tuple[str, bytes]])
    plane_stats: dict[str, dict[str, StatValue]] = field(default_factory=dict[str, dict[str, StatValue]])
    """Each plane's own stats by its name (a GPU's `core_count`, `compute_cap_major`...)."""
    blobs: list[bytes] = field(default_factory=list[bytes])
    _codes: dict[str, int] = field(default_factory=dict[str, int])
    _columns: list[list[npt.NDArray[Any]]] = field(default_factory=lambda: [[] for _ in range(5)])
    """Each column's chunks: start, duration, name, thread, metadata."""
    _stats: dict[int, list[tuple[Ints, npt.NDArray[np.int8], Ints]]] = field(
        default_factory=dict[int, list[tuple[Ints, npt.NDArray[np.int8], Ints]]]
    )
    """Each stat's chunks, by name code: rows (in read order), kinds, payloads."""
    _count: int = 0
    _instants: SpaceReader | None = None

    def code(self, text: str) -> int:
        found = self._codes.get(text)
        if found is None:
            found = self._codes[text] = len(self.strings)
            self.strings.append(text)
        return found

    def read(self, path: Path) -> None:
        """Every timed event of one XSpace file; a damaged or foreign file is an input error naming it."""
        try:
            with _mapped(path) as data:
                self._space(path, data)
        except (wire.WireError, _DecodeError) as error:
            raise XlaInspectError(f"{path}: not an XPlane profile (the protobuf does not decode: {error})") from None

    def _space(self, path: Path, data: bytes | mmap.mmap) -> None:
        planes: list[tuple[int, int]] = []
        for number, kind, start, end in wire.fields(data, 0, len(data)):
            if number == 1 and kind == 2:
                planes.append((start, end))
            elif number == 4 and kind == 2:
                self.hostnames.append(bytes(data[start:end]).decode("utf-8", "replace"))
        buffer = np.frombuffer(data, np.uint8)
        named = False
        for start, end in planes:
            line_starts, line_ends, others = wire.repeated(data, start, end, 3)
            plane = self._plane(_parse("XPlane", data, others))
            named = named or bool(plane.name)
            self._lines(data, buffer, plane, list(zip(line_starts.tolist(), line_ends.tolist())))
        del buffer
        if not named:
            raise XlaInspectError(f"{path}: not an XPlane profile (no named planes)")

    def _plane(self, plane: Message) -> _Plane:
        names = {entry.key: entry.value.name for entry in plane.stat_metadata}
        self.plane_stats[plane.name] = _stats(plane.stats, names)
        metadata = sorted((entry.key, entry.value) for entry in plane.event_metadata)
        first = len(self.metadata_stats)
        for _, value in metadata:
            stats = _stats(value.stats, names)
            self.metadata_stats.append(stats)
            proto, program_id = stats.get("Hlo Proto"), stats.get("program_id")
            if isinstance(proto, bytes) and isinstance(program_id, int):
                self.hlo_protos[program_id] = (value.name.rpartition("(")[0] or value.name, proto)
        stat_ids = sorted(names)
        return _Plane(
            plane.name,
            np.array([key for key, _ in metadata], np.int64),
            np.array([self.code(value.name) for _, value in metadata], np.int32),
            np.arange(first, first + len(metadata), dtype=np.int32),
            np.array(stat_ids, np.int64),
            np.array([self.code(names[k]) for k in stat_ids], np.int32),
            np.array([key for key, value in metadata if value.name in ALLOCATION_EVENTS], np.int64),
            np.array([k for k in stat_ids if names[k].startswith("_")], np.int64),
        )

    def _lines(self, data: bytes | mmap.mmap, buffer: wire.Bytes, plane: _Plane, lines: list[tuple[int, int]]) -> None:
        """A plane's lines: each walked (`_walk`, Python's work, the lines shared among the processes), then
        their events decoded `CHUNK_EVENTS` at a time by all processes, `CHUNKS_AT_ONCE` chunks before the
        pages they read are given back."""
        walked = map_shared(
            functools.partial(_walk, data),
            lines,
            1,
            size=lambda line: line[1] - line[0],
            serial_below=len(lines) + 1,
            serial_below_size=WALKED_ALONE_BYTES,  # a fork costs more than a small plane's walk
        )
        chunks: list[tuple[int, float, Ints, Ints]] = []
        for starts, ends, others in walked:
            line = _parse("XLine", data, others)
            thread, base = len(self.threads), float(line.timestamp_ns)
            self.threads.append((plane.name, line.display_name or line.name))
            chunks += [
                (thread, base, starts[k : k + CHUNK_EVENTS], ends[k : k + CHUNK_EVENTS])
                for k in range(0, len(starts), CHUNK_EVENTS)
            ]
        del walked
        for first in range(0, len(chunks), CHUNKS_AT_ONCE):
            group = chunks[first : first + CHUNKS_AT_ONCE]
            for (thread, base, *_), chunk in zip(
                group,
                map_shared(
                    lambda c: _decode_chunk(buffer, c[2], c[3], plane.instants, plane.dropped),
                    group,
                    1,
                    size=lambda c: len(c[2]),
                    serial_below=len(group) + 1,
                    serial_below_size=CHUNK_EVENTS,  # small lines' chunks: a fork costs more than their decode
                ),
            ):
                self._add(plane, thread, base, chunk)
            for _, _, starts, ends in group:
                _give_back(data, int(starts[0]), int(ends[-1]))
            if sum(len(starts) for _, _, starts, _ in group) * _EVENT_BYTES >= TRIMMED_BYTES:
                trim_freed_memory()  # a large read: its temporaries not left beside the next group's

    def _add(self, plane: _Plane, thread: int, base: float, chunk: _Chunk) -> None:
        instant = chunk.duration_ps == 0
        if instant.any():
            self._instant_reader()._append(plane, thread, base, chunk.take(instant))
            chunk = chunk.take(~instant)
        self._append(plane, thread, base, chunk)

    def _append(self, plane: _Plane, thread: int, base: float, chunk: _Chunk) -> None:
        count = len(chunk.metadata_id)
        at = np.searchsorted(plane.metadata_ids, chunk.metadata_id)
        at = np.minimum(at, max(len(plane.metadata_ids) - 1, 0))
        known = plane.metadata_ids[at] == chunk.metadata_id if len(plane.metadata_ids) else np.zeros(count, np.bool_)
        name = np.where(known, plane.metadata_names[at] if len(at) and len(plane.metadata_ids) else 0, self.code(""))
        metadata = np.where(known, plane.metadata_index[at] if len(plane.metadata_ids) else -1, -1)
        columns = (
            base + chunk.offset_ps / 1000,
            chunk.duration_ps / 1000,
            name.astype(np.int32),
            np.full(count, thread, np.int32),
            metadata.astype(np.int32),
        )
        for chunks, column in zip(self._columns, columns):
            chunks.append(column)
        self._add_stats(plane, chunk)
        self._count += count

    def _add_stats(self, plane: _Plane, chunk: _Chunk) -> None:
        kind, payload = chunk.stat_kind.copy(), chunk.stat_payload.copy()
        for stat, raw in chunk.texts:
            if kind[stat] == -TEXT:
                kind[stat], payload[stat] = TEXT, self.code(raw.decode("utf-8", "replace"))
            else:
                kind[stat], payload[stat] = BLOB, len(self.blobs)
                self.blobs.append(raw)
        refs = np.flatnonzero(kind == TEXT)
        refs = refs[~np.isin(refs, [stat for stat, _ in chunk.texts])]
        payload[refs] = self._stat_names(plane, payload[refs], "")
        names = self._stat_names(plane, chunk.stat_id, None)
        rows = chunk.stat_event + self._count
        order = np.argsort(names, kind="stable")  # an event's stats of one name keep their order
        bounds = np.flatnonzero(np.diff(names[order])) + 1
        for mine in np.split(order, bounds) if len(order) else []:
            self._stats.setdefault(int(names[mine[0]]), []).append((rows[mine], kind[mine], payload[mine]))

    def _stat_names(self, plane: _Plane, ids: Ints, missing: str | None) -> Codes:
        """The codes of the stat metadata names `ids` point at; an unknown id: `missing`, else its number."""
        at = np.minimum(np.searchsorted(plane.stat_ids, ids), max(len(plane.stat_ids) - 1, 0))
        known = plane.stat_ids[at] == ids if len(plane.stat_ids) else np.zeros(len(ids), np.bool_)
        found = np.where(known, plane.stat_names[at] if len(plane.stat_ids) else 0, -1).astype(np.int32)
        for k in np.flatnonzero(~known).tolist():
            found[k] = self.code(missing if missing is not None else str(int(ids[k])))
        return found

    def _instant_reader(self) -> SpaceReader:
        """Where the instant events kept go: rows of their own, this reader's strings, threads and metadata."""
        if self._instants is None:
            self._instants = SpaceReader(self.strings, self.threads, self.metadata_stats, blobs=self.blobs)
            self._instants._codes = self._codes
        return self._instants

    def allocations(self, origin: float) -> Events:
        """The allocators' instant events read (`ALLOCATION_EVENTS`), by time from `origin` (`events`')."""
        return self._instant_reader().events(origin)[0]

    def events(self, origin: float | None = None) -> tuple[Events, float]:
        """The events read, by start (the longer first, then file order), from the first one's start (or
        `origin`); and that start on the host's clock (ns since the epoch). The chunks are let go column
        by column as the table is made, so that memory holds about one copy of it."""
        start = self._column(0, np.float64)
        duration = self._column(1, np.float64)
        if origin is None:
            origin = float(start.min()) if len(start) else 0.0
        order = _by_start(start, duration)
        start = start[order]
        start -= origin
        duration = duration[order]
        name, thread, metadata = (self._column(k, np.int32)[order] for k in (2, 3, 4))
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order))
        del order
        own = {self.strings[code]: self._own(rank, code) for code in sorted(self._stats)}
        events = Events(
            start,
            duration,
            name,
            thread,
            metadata,
            self.strings,
            self.threads,
            self.metadata_stats,
            own,
            self.blobs,
            self._codes,  # the strings' codes, for the table to go on interning
        )
        return events, origin

    def _column(self, k: int, dtype: type[np.float64] | type[np.int32]) -> npt.NDArray[Any]:
        chunks = self._columns[k]
        found: npt.NDArray[Any] = np.concatenate(chunks) if chunks else np.zeros(0)
        large = sum(chunk.nbytes for chunk in chunks) >= TRIMMED_BYTES
        chunks.clear()
        if large:  # its chunks were the heap's: not held beside the next column
            trim_freed_memory()
        return found.astype(dtype, copy=False)

    def _own(self, rank: Ints, code: int) -> StatColumn:
        """One stat's column (its chunks let go): its events' new rows, ascending; where an event has the
        stat twice, the last."""
        chunks = self._stats.pop(code)
        rows = rank[np.concatenate([c[0] for c in chunks])]
        order = np.argsort(rows, kind="stable")
        rows = rows[order]
        last = np.ones(len(rows), np.bool_)
        last[:-1] = rows[:-1] != rows[1:]
        order = order[last]
        kinds = np.concatenate([c[1] for c in chunks])[order]
        payloads = np.concatenate([c[2] for c in chunks])[order]
        return StatColumn(rows[last].astype(np.int32), kinds, payloads)


def _by_start(start: npt.NDArray[np.float64], duration: npt.NDArray[np.float64]) -> Ints:
    """The events' order by start, the longer first where starts are equal, then the files' order:
    `np.lexsort((-duration, start))`, as a stable sort by start (a line's events come by start: runs a
    merge sort joins, where lexsort sorts twice over) and the few that share a start sorted again."""
    order = np.argsort(start, kind="stable")
    ordered = start[order]
    tied = np.flatnonzero(ordered[1:] == ordered[:-1])
    if len(tied):
        spots = np.union1d(tied, tied + 1)  # every position in a run of equal starts
        members = order[spots]  # by start, then in the files' order
        order[spots] = members[np.lexsort((-duration[members], start[members]))]
    return order


def _walk(data: bytes | mmap.mmap, line: tuple[int, int]) -> tuple[Ints, Ints, list[tuple[int, int]]]:
    """A line's events found (`wire.repeated`: their byte ranges, and those of the line's own fields), the
    pages walked given back as it goes (the decode reads them again from the system's cache): a line of GBs
    is not held whole."""
    return wire.repeated(data, *line, 4, functools.partial(_give_back, data))


def _give_back(data: bytes | mmap.mmap, start: int, end: int) -> None:
    """The pages of a mapped file's [start, end) given back to the system (decoded; the file keeps them):
    memory holds the columns, not the file."""
    if isinstance(data, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        first = start - start % mmap.PAGESIZE
        data.madvise(mmap.MADV_DONTNEED, first, end - first)


class _mapped:
    """A file's bytes: memory-mapped where it is a plain file (its pages given back as lines are read),
    else read whole (gzip, decompressed)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.map: mmap.mmap | None = None

    def __enter__(self) -> bytes | mmap.mmap:
        data = read_bytes(self.path) if _gzip(self.path) or self.path.stat().st_size == 0 else None
        if data is not None:
            return data
        with open(self.path, "rb") as file:
            self.map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        return self.map

    def __exit__(self, *exc: object) -> None:
        if self.map is not None:
            with contextlib.suppress(BufferError):  # leaving on an error, its frames still hold a view:
                self.map.close()  # the map closes when they go


def _gzip(path: Path) -> bool:
    with open(path, "rb") as file:
        return file.read(2) == b"\x1f\x8b"


def _parse(name: str, data: bytes | mmap.mmap, ranges: list[tuple[int, int]]) -> Message:
    """A message made of these byte ranges of `data` (a plane or line without its lines or events)."""
    message = message_class(name)  # ProfileDependencyError without protobuf
    try:
        return message.FromString(b"".join(data[a:b] for a, b in ranges))
    except Exception as error:  # noqa: BLE001 (protobuf's DecodeError differs between its backends)
        raise _DecodeError(str(error)) from None


class _DecodeError(Exception):
    """The protobuf runtime could not decode a plane's or line's own fields."""
