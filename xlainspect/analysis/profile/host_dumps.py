"""Which part of a `--dump` each host's trace joins with: a job that dumps per host (`--xla_dump_to=
DIR/<host>`) has a folder per host, and the hosts' programs can differ (a compile on one host only,
other module ids), so a host's ops take their costs, and its collectives their bytes, from its own folder.

* **Its own folder**: the dump folder whose host (`DumpModule.host`: its path under the dump, a
  `--xla_dump_hlo_to_subfolder` process folder included) is the trace's host name (`host_traces`: the
  `<host>.xplane.pb` file's name, or the log dir's folder), or whose last path segment is (`job/host_1`).
* **One folder** (no host split): every host joins the whole dump, as one host does.
* **No folder of its name** in a per-host dump: the whole dump, where a module (its label: id and name)
  is in several host folders, the first folder's (in name order); the output says which host did so.
"""

from __future__ import annotations

from xlainspect.analysis.profile.events import dump_label
from xlainspect.analysis.profile.job import DUMP_FALLBACK, DUMP_OWN, DUMP_WHOLE, HostDump
from xlainspect.dump.directory import Dump
from xlainspect.dump.module import DumpModule


def host_dumps(dump: Dump | None, hosts: list[str]) -> dict[str, HostDump]:
    """Each trace host's part of `dump` (None for every host without a dump)."""
    if dump is None:
        return {host: HostDump(None, None, None) for host in hosts}
    folders = sorted({m.host for m in dump.modules})
    if folders == [""]:
        whole = HostDump(dump, str(dump.root), DUMP_WHOLE)
        return dict.fromkeys(hosts, whole)
    found: dict[str, HostDump] = {}
    fallback = HostDump(Dump(dump.root, _first_of_each(dump.modules)), str(dump.root), DUMP_FALLBACK)
    for host in hosts:
        folder = _folder_of(host, folders)
        if folder is None:
            found[host] = fallback
            continue
        modules = [m for m in dump.modules if m.host == folder]
        found[host] = HostDump(Dump(dump.root / folder, modules), str(dump.root / folder), DUMP_OWN)
    return found


def _folder_of(host: str, folders: list[str]) -> str | None:
    """The dump folder named as the host: its whole path, else (one only) its last segment."""
    if host in folders:
        return host
    named = [f for f in folders if f.rpartition("/")[2] == host]
    return named[0] if len(named) == 1 else None


def _first_of_each(modules: list[DumpModule]) -> list[DumpModule]:
    """One module per label, the first host folder's (`Dump.modules` is in host order)."""
    seen: dict[str, DumpModule] = {}
    for module in modules:
        seen.setdefault(dump_label(module), module)
    return list(seen.values())
