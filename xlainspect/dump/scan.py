"""A dump folder listed: every file XLA's dumper names, classified by name (`names.classify`), per-host
sub-folders and per-module folders included, one `os.scandir` per folder (a 64-host dump lists about
900,000 files)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from xlainspect.dump.names import MODULE_FILE, DumpFile, classified, in_folder
from xlainspect.errors import DumpError
from xlainspect.settings import kept_objects


def scan_dump(root: Path) -> list[DumpFile]:
    """Every file under a dump folder that XLA's dumper names, classified by name, per-module folders'
    files included (one os.scandir per folder: a 64-host dump lists about 900,000 files)."""
    with kept_objects():
        return _scan(root, root, set())


def scan_under(root: Path, directory: Path) -> list[DumpFile]:
    """`scan_dump` of a folder under `root`: its files' hosts are their folders' paths relative to `root`
    (several dumps given at once, each a host of their common parent)."""
    return _scan(root, directory, set())


def scan_listed(url: str, names: list[str]) -> list[DumpFile]:
    """`scan_dump` of a bucket's listing (`storage.listed`: each object's name below `url`): the same
    files, classified by name alone and located by their URLs, none fetched (a cluster's workers read
    each host's own, `files.read_bytes`)."""
    root = url.rstrip("/")
    found = (_listed(f"{root}/{name}", name.split("/")) for name in names)
    return [dump_file for dump_file in found if dump_file is not None]


def _listed(location: str, parts: list[str]) -> DumpFile | None:
    """The DumpFile `_scan` makes of the file at `parts` (its folders, then its name) below the root,
    or None for one it skips: a folder's files have that folder's path as their host, a per-module
    folder's its owner's, and a process folder in a per-module folder is a host of its own."""
    *folders, name = parts
    host, owner = "", None
    for depth, folder in enumerate(folders, 1):
        if owner is not None:  # a process's folder (--xla_dump_hlo_to_subfolder): its own host
            host, owner = f"{owner}/{folder}" if owner else folder, None
            continue
        match = MODULE_FILE.match(folder)
        module_folder = classified(match, location, host) if match else None
        if module_folder is not None and module_folder.kind == "folder":
            if depth == len(folders):
                return in_folder(location, host, module_folder)
            owner = host
        else:
            host = "/".join(folders[:depth])
    match = MODULE_FILE.match(name)
    return _module_file(match, location, host) if match else None


def _scan(root: Path, directory: Path, seen: set[tuple[int, int]], host: str | None = None) -> list[DumpFile]:
    """Classify every file under `directory` in one pass per folder (os.scandir, no stat per file);
    its host is `host`, else its path relative to `root`."""
    try:
        info = directory.stat()
    except OSError as error:
        raise DumpError(f"{directory}: cannot read ({error.strerror})") from None
    if (info.st_dev, info.st_ino) in seen:
        raise DumpError(f"{directory}: symbolic link loop")
    seen.add((info.st_dev, info.st_ino))
    if host is None:
        host = "" if directory == root else directory.relative_to(root).as_posix()
    files: list[DumpFile] = []
    try:
        entries = list(os.scandir(directory))
    except PermissionError:
        raise DumpError(f"{directory}: permission denied") from None
    except OSError as error:
        raise DumpError(f"{directory}: cannot read ({error.strerror})") from None
    for entry in entries:
        match = MODULE_FILE.match(entry.name)
        if entry.is_dir():  # a per-module folder, or a host's (or any other) sub-directory
            folder = classified(match, entry.path, host) if match else None
            if folder is not None and folder.kind == "folder":
                files += _folder_files(root, entry.path, host, folder, seen)
            else:
                files += _scan(root, Path(entry.path), seen)
        elif match:
            files.append(_module_file(match, entry.path, host))
    return files


def _module_file(match: re.Match[str], location: str, host: str) -> DumpFile:
    """A file (not a folder) named `module_*`: of kind `unknown` where no rule names its suffix."""
    found = classified(match, location, host)
    if found.kind == "folder":
        found.kind = "unknown"
    return found


def _folder_files(
    root: Path, directory: str, host: str, folder: DumpFile, seen: set[tuple[int, int]]
) -> list[DumpFile]:
    """The per-module folder (`module_0000.jit_f/`: module.mlir, compile options). With
    --xla_dump_hlo_to_subfolder (2026) it holds one `<host>_<pid>/` folder per process instead: each
    is that process's host."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    files = [in_folder(e.path, host, folder) for e in entries if e.is_file()]
    for entry in entries:
        if entry.is_dir():
            files += _scan(root, Path(entry.path), seen, f"{host}/{entry.name}" if host else entry.name)
    return files
