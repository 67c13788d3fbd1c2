"""Reading what `jax.profiler.trace(log_dir)` writes: `plugins/profile/<run>/<host>.xplane.pb`, an XSpace.

The schema is XLA's `xla/tsl/profiler/protobuf/xplane.proto` (package `tensorflow.profiler`: XSpace,
XPlane, XLine, XEvent, XStat, XEventMetadata, XStatMetadata), declared below field by field and built
into message classes by the `protobuf` runtime (the `xlainspect[profile]` extra). No package on the
index ships a generated `xplane_pb2` short of tensorflow: jaxlib 0.10.2 reads XSpace in C++ only
(`jax.profiler.ProfileData`) and xprof 2.24.2 has no `xplane_pb2` either. Declaring the fields, not
shipping generated code, keeps the reader working with every protobuf from 4.21 on; the maps are
read as their wire form (repeated key/value entries). `tests/test_profile.py` compares every event
with jaxlib's reader.

The `<host>.trace.json.gz` and `perfetto_trace.json.gz` written beside it holds the same events as
JSON; it is found through
its folder, and the XSpace beside it is what is read.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlainspect.dump.files import read_bytes
from xlainspect.errors import XlaInspectError
from xlainspect.settings import kept_objects

INSTALL_HINT = "reading profiles needs protobuf: pip install 'xlainspect[profile]' (or pip install protobuf)"

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

StatValue = int | float | str | bytes | None
"""An XStat's value: a number, string or bytes, a referenced stat's name (str), None where it holds none."""


class ProfileDependencyError(XlaInspectError):
    """The `profile` extra (protobuf) is not installed."""


@dataclass(slots=True)
class TraceEvent:
    """One event of a jax.profiler trace."""

    plane: str
    line: str
    """The thread (host) or stream (device) the event ran on."""
    name: str
    start_ns: float
    """Nanoseconds since the trace's first event."""
    duration_ns: float
    stats: dict[str, StatValue] = field(hash=False, compare=False)
    """The event's and its metadata's stats by name (`hlo_op`, `hlo_module`, `program_id`, `step_num`...)."""

    @property
    def end_ns(self) -> float:
        return self.start_ns + self.duration_ns


@dataclass
class Trace:
    """Every event of a jax.profiler trace, its hosts and the HLO it embeds."""

    paths: list[Path]
    events: list[TraceEvent]
    """Every timed event (duration > 0) of every plane, by start time."""
    hostnames: list[str]
    hlo_protos: dict[int, tuple[str, bytes]] = field(default_factory=dict[int, tuple[str, bytes]])
    """program_id -> (HloModule name, serialized HloProto): the optimized HLO the profiler embeds
    (`Hlo Proto` stats of the `/host:metadata` plane)."""
    origin_ns: float = 0.0
    """The first event's time on the host's clock (ns since the epoch): what `start_ns` counts from."""


def find_trace_files(path: str | Path) -> list[Path]:
    """The XSpace files of one profiling run: `path` itself, those beside a perfetto trace, or those of
    the newest `plugins/profile/<run>` folder under a log dir (runs are named by their start time). A
    gzipped XSpace (`<host>.xplane.pb.gz`) is read too."""
    path = Path(path)
    if path.is_file():
        if path.name.endswith(_XSPACE_SUFFIXES):
            return [path]
        beside = _xspaces(path.parent.iterdir())
        if path.name.endswith("trace.json.gz") and beside:  # <host>.trace.json.gz, perfetto_trace.json.gz
            return beside
        raise XlaInspectError(
            f"{path}: not a jax.profiler trace (expected a *.xplane.pb file, or the log dir jax.profiler.trace wrote)"
        )
    if not path.is_dir():
        raise XlaInspectError(f"{path}: no such file or directory")
    found = _xspaces(path.rglob("*.xplane.pb*"))
    if not found:
        raise XlaInspectError(
            f"{path}: no *.xplane.pb file under it (jax.profiler.trace(log_dir) writes "
            f"log_dir/plugins/profile/<run>/<host>.xplane.pb)"
        )
    newest = max(p.parent for p in found)
    return [p for p in found if p.parent == newest]


_XSPACE_SUFFIXES = (".xplane.pb", ".xplane.pb.gz")


def host_traces(path: str | Path) -> dict[str, list[Path]]:
    """Each host's XSpace files of one profiling run, by host name. jax.profiler writes one
    `<host>.xplane.pb` per process into `plugins/profile/<run>/`: several files in the run folder are
    several hosts (named by their files). A log dir holding one log dir per host (`<dir>/<host>/plugins/
    profile/<run>/...`, a job whose hosts each traced to a folder of their own) is one host per folder,
    named by the folder, its newest run read."""
    path = Path(path)
    if path.is_dir():
        by_log_dir: dict[Path, list[Path]] = {}
        for found in _xspaces(path.rglob("*.xplane.pb*")):
            by_log_dir.setdefault(_log_dir(found, path), []).append(found)
        if len(by_log_dir) > 1:
            return {_host_name(log_dir, path): _newest_run(files) for log_dir, files in sorted(by_log_dir.items())}
    return {_host_name(f, None): [f] for f in find_trace_files(path)}


def _log_dir(xspace: Path, root: Path) -> Path:
    """The log dir `jax.profiler.trace` was given: above `plugins/profile/<run>/`, else the file's folder."""
    parts = xspace.relative_to(root).parts
    for k in range(len(parts) - 3, -1, -1):
        if parts[k : k + 2] == ("plugins", "profile"):
            return root.joinpath(*parts[:k])
    return xspace.parent


def _host_name(found: Path, root: Path | None) -> str:
    if root is not None:
        return found.relative_to(root).as_posix() or found.name
    for suffix in _XSPACE_SUFFIXES[::-1]:
        if found.name.endswith(suffix):
            return found.name.removesuffix(suffix)
    return found.name


def _newest_run(files: list[Path]) -> list[Path]:
    newest = max(f.parent for f in files)
    return [f for f in files if f.parent == newest]


def _xspaces(paths: Iterable[Path]) -> list[Path]:
    return sorted(p for p in paths if p.name.endswith(_XSPACE_SUFFIXES) and p.is_file())


def read_trace(path: str | Path | list[Path]) -> Trace:
    """Every timed event of a jax.profiler trace (a file, or a log dir: its newest run; or the XSpace files
    given), times from its start."""
    spaces = [(p, _read_space(p)) for p in (path if isinstance(path, list) else find_trace_files(path))]
    with kept_objects():  # 100,000s of events that live to the end of the run: collections need not scan them
        found = [e for _, space in spaces for e in _events(space)]  # (start, -duration, index, event)
    origin = min((e[0] for e in found), default=0.0)
    found.sort()  # by start, the longer (enclosing) first; the index keeps equal events in plane order
    events = [e[3] for e in found]
    for event in events:
        event.start_ns -= origin
    return Trace(
        [p for p, _ in spaces],
        events,
        [h for _, space in spaces for h in space.hostnames],
        {k: v for _, space in spaces for k, v in _hlo_protos(space).items()},
        origin,
    )


def embedded_hlo_text(hlo_proto: bytes) -> str:
    """The HLO text of an embedded HloProto, printed by jaxlib (XLA's own printer; jax is imported here
    only). Raises XlaInspectError when jax is missing or the proto is not one."""
    try:  # jax's private modules, as untyped as they are unstable
        xla_client = importlib.import_module("jax._src.lib").xla_client
        hlo = importlib.import_module("jaxlib._hlo")
    except ImportError:
        raise XlaInspectError(
            "printing the HLO the profile embeds needs jax (pip install jax); or pass --dump "
            "with the run's --xla_dump_to directory"
        ) from None
    module = _message_class("HloProto").FromString(hlo_proto).hlo_module
    try:
        options = hlo.HloPrintOptions()
        options.print_metadata = True  # op_name and source lines, as a dump prints them
        return xla_client.XlaComputation(module).get_hlo_module().to_string(options)
    except Exception as error:  # noqa: BLE001 (jaxlib raises its own error types)
        raise XlaInspectError(f"the HLO embedded in the profile does not load: {error}") from None


def _hlo_protos(space: Message) -> dict[int, tuple[str, bytes]]:
    protos: dict[int, tuple[str, bytes]] = {}
    for plane in space.planes:
        names = {entry.key: entry.value.name for entry in plane.stat_metadata}
        for entry in plane.event_metadata:
            stats = _stats(entry.value.stats, names)
            proto, program_id = stats.get("Hlo Proto"), stats.get("program_id")
            if isinstance(proto, bytes) and isinstance(program_id, int):
                protos[program_id] = (entry.value.name.rpartition("(")[0] or entry.value.name, proto)
    return protos


def _read_space(path: Path) -> Message:
    """One XSpace; a damaged or foreign file is an input error naming the file."""
    data = read_bytes(path)  # gunzipped when gzip
    message_class = _message_class("XSpace")
    try:
        space = message_class.FromString(data)
    except Exception as error:  # noqa: BLE001 (protobuf's DecodeError differs between its backends)
        raise XlaInspectError(f"{path}: not an XPlane profile (the protobuf does not decode: {error})") from None
    if not space.planes or not any(plane.name for plane in space.planes):
        raise XlaInspectError(f"{path}: not an XPlane profile (no named planes)")
    return space


@functools.cache
def _message_class(name: str) -> Any:
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
    stat = _message_class("XSpace").DESCRIPTOR.fields_by_name["planes"].message_type.fields_by_name["stats"]
    return stat.message_type.fields_by_name["ref_value"]


def _events(space: Message) -> list[tuple[float, float, int, TraceEvent]]:
    """Each timed event as (start, -duration, index, TraceEvent), to sort by start once. An event's stats
    are its metadata's, read once per metadata, updated by its own; an event with none of its own shares
    its metadata's dict (read-only, as every consumer treats stats). Instant events (no duration) are left
    out: they take no time, and in jax's traces they are the thread pool's hand-off markers
    (`ThreadpoolListener::Record/StartRegion/StopRegion`, half of a GPU trace's events), which only
    link a task to the thread that ran it."""
    events: list[tuple[float, float, int, TraceEvent]] = []
    for plane in space.planes:
        stat_names = {entry.key: entry.value.name for entry in plane.stat_metadata}
        metadata = {
            entry.key: (entry.value.name, _stats(entry.value.stats, stat_names)) for entry in plane.event_metadata
        }
        plane_name, missing = plane.name, ("", dict[str, StatValue]())
        for line in plane.lines:
            name, base = line.display_name or line.name, line.timestamp_ns
            for event in line.events:
                if not event.duration_ps:
                    continue
                meta_name, meta_stats = metadata.get(event.metadata_id, missing)
                own = event.stats
                stats = {**meta_stats, **_stats(own, stat_names)} if own else meta_stats
                start, duration = base + event.offset_ps / 1000, event.duration_ps / 1000
                events.append(
                    (start, -duration, len(events), TraceEvent(plane_name, name, meta_name, start, duration, stats))
                )
    return events


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
