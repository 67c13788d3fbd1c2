"""Reading what `jax.profiler.trace(log_dir)` writes: `plugins/profile/<run>/<host>.xplane.pb`, an XSpace,
found by its folder (`find_trace_files`, `host_traces`) and decoded into columns (`dump.xspace`).

The `<host>.trace.json.gz` and `perfetto_trace.json.gz` written beside it holds the same events as
JSON; it is found through its folder, and the XSpace beside it is what is read.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePath, PurePosixPath
from typing import TypeVar

from xlainspect.dump.events import Events, StatValue
from xlainspect.dump.storage import listed
from xlainspect.dump.xspace import SpaceReader, message_class
from xlainspect.errors import XlaInspectError


@dataclass
class Trace:
    """Every event of a jax.profiler trace, its hosts and the HLO it embeds."""

    paths: list[Path]
    events: Events
    """Every timed event (duration > 0) of every plane, by start time, as columns."""
    hostnames: list[str]
    hlo_protos: dict[int, tuple[str, bytes]] = field(default_factory=dict[int, tuple[str, bytes]])
    """program_id -> (HloModule name, serialized HloProto): the optimized HLO the profiler embeds
    (`Hlo Proto` stats of the `/host:metadata` plane)."""
    origin_ns: float = 0.0
    """The first event's time on the host's clock (ns since the epoch): what `start_ns` counts from."""
    allocations: Events | None = None
    """The allocators' instant events (`MemoryAllocation`, `MemoryDeallocation`: `xspace.ALLOCATION_EVENTS`),
    on the same clock as `events`; none where the trace records none."""
    planes: dict[str, dict[str, StatValue]] = field(default_factory=dict[str, dict[str, StatValue]])
    """Each plane's own stats by the plane's name: a GPU's (`/device:GPU:0`) `core_count` (its SMs),
    `compute_cap_major` and `_minor`, `gpu_device_name`."""


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
        raise XlaInspectError(f"{path}: no *.xplane.pb file under it {_WRITTEN}")
    newest = max(p.parent for p in found)
    return [p for p in found if p.parent == newest]


_XSPACE_SUFFIXES = (".xplane.pb", ".xplane.pb.gz")
_WRITTEN = "(jax.profiler.trace(log_dir) writes log_dir/plugins/profile/<run>/<host>.xplane.pb)"


def host_traces(path: str | Path) -> dict[str, list[Path]]:
    """Each host's XSpace files of one profiling run, by host name. jax.profiler writes one
    `<host>.xplane.pb` per process into `plugins/profile/<run>/`: several files in the run folder are
    several hosts (named by their files). A log dir holding one log dir per host (`<dir>/<host>/plugins/
    profile/<run>/...`, a job whose hosts each traced to a folder of their own) is one host per folder,
    named by the folder, its newest run read."""
    path = Path(path)
    if path.is_dir() and (found := _xspaces(path.rglob("*.xplane.pb*"))):
        return _runs_by_host(path, found)
    return {_host_name(f, None): [f] for f in find_trace_files(path)}


def url_host_traces(url: str) -> dict[str, list[str]]:
    """`host_traces` of a log dir at an fsspec URL, from its listing alone: each host's objects' URLs,
    none fetched (a cluster's workers fetch each host's own, `storage.local`)."""
    if url.endswith(_XSPACE_SUFFIXES):
        return {_host_name(PurePosixPath(url), None): [url]}
    root = PurePosixPath("/")
    found = [root / name for name in listed(url) if name.endswith(_XSPACE_SUFFIXES)]
    if not found:
        raise XlaInspectError(f"{url}: no *.xplane.pb file under it {_WRITTEN}")
    return {host: [url.rstrip("/") + str(f) for f in files] for host, files in _runs_by_host(root, found).items()}


Found = TypeVar("Found", bound=PurePath)


def _runs_by_host(root: Found, found: list[Found]) -> dict[str, list[Found]]:
    """The XSpace files found under a log dir, by host: one host per log dir where it holds several
    (each its newest run), else one per file of the newest run."""
    by_log_dir: dict[Found, list[Found]] = {}
    for xspace in found:
        by_log_dir.setdefault(_log_dir(xspace, root), []).append(xspace)
    if len(by_log_dir) > 1:
        return {_host_name(log_dir, root): _newest_run(files) for log_dir, files in sorted(by_log_dir.items())}
    return {_host_name(f, None): [f] for f in _newest_run(found)}


def _log_dir(xspace: Found, root: Found) -> Found:
    """The log dir `jax.profiler.trace` was given: above `plugins/profile/<run>/`, else the file's folder."""
    parts = xspace.relative_to(root).parts
    for k in range(len(parts) - 3, -1, -1):
        if parts[k : k + 2] == ("plugins", "profile"):
            return root.joinpath(*parts[:k])
    return xspace.parent


def _host_name(found: PurePath, root: PurePath | None) -> str:
    if root is not None:
        return found.relative_to(root).as_posix() or found.name
    for suffix in _XSPACE_SUFFIXES[::-1]:
        if found.name.endswith(suffix):
            return found.name.removesuffix(suffix)
    return found.name


def _newest_run(files: list[Found]) -> list[Found]:
    newest = max(f.parent for f in files)
    return [f for f in files if f.parent == newest]


def _xspaces(paths: Iterable[Path]) -> list[Path]:
    return sorted(p for p in paths if p.name.endswith(_XSPACE_SUFFIXES) and p.is_file())


def read_trace(path: str | Path | list[Path]) -> Trace:
    """Every timed event of a jax.profiler trace (a file, or a log dir: its newest run; or the XSpace files
    given), times from its start, as columns (`dump.events.Events`, made by `dump.xspace`)."""
    paths = path if isinstance(path, list) else find_trace_files(path)
    reader = SpaceReader()
    for file in paths:
        reader.read(file)
    events, origin = reader.events()
    return Trace(
        paths,
        events,
        reader.hostnames,
        reader.hlo_protos,
        origin,
        reader.allocations(origin) or None,
        reader.plane_stats,
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
    module = message_class("HloProto").FromString(hlo_proto).hlo_module
    try:
        options = hlo.HloPrintOptions()
        options.print_metadata = True  # op_name and source lines, as a dump prints them
        return xla_client.XlaComputation(module).get_hlo_module().to_string(options)
    except Exception as error:  # noqa: BLE001 (jaxlib raises its own error types)
        raise XlaInspectError(f"the HLO embedded in the profile does not load: {error}") from None
