"""Dump directories (`--xla_dump_to=DIR`), HLO files or several of either: their files grouped into
one compile each (`DumpModule`), from file names alone (`names`), by one scan of the folders (`scan`);
HLO bodies are parsed only when someone asks for them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from xlainspect.dump.module import DumpModule, SkippedFile
from xlainspect.dump.names import DumpFile, classify
from xlainspect.dump.scan import scan_listed, scan_under
from xlainspect.dump.storage import listed, local
from xlainspect.errors import DumpError, XlaInspectError
from xlainspect.settings import kept_objects


@dataclass
class Dump:
    """The modules of a dump folder (or HLO files), and the files skipped while reading them."""

    root: Path
    modules: list[DumpModule]
    skipped: list[SkippedFile] = field(default_factory=list[SkippedFile])
    runs: bool = False
    """Several dumps given at once (`load_dump([a, b])`, each a `host`): runs to compare, not the
    hosts of one job."""

    def functions(self) -> dict[str, list[DumpModule]]:
        """Modules per function (HloModule name), each list in compile order (host, timestamp, id)."""
        grouped: dict[str, list[DumpModule]] = {}
        for module in self.modules:
            grouped.setdefault(module.name or module.label, []).append(module)
        return grouped

    def skip(self, path: Path, error: XlaInspectError, strict: bool = False) -> None:
        """Record a file that cannot be analysed (or raise, in strict mode) and go on with the rest."""
        if strict:
            raise error
        self.skipped.append(SkippedFile.of(path, error))


def load_dump(path: str | Path | list[Path], *, strict: bool = False) -> Dump:
    """A dump directory (per-host sub-directories included), one HLO file, or a list of files; each a
    path or an fsspec URL (read through its local mirror, `storage.local`)."""
    with kept_objects():  # a fleet's file records and modules live to the end of the run
        return _load_dump([local(p) for p in path] if isinstance(path, (list, tuple)) else [local(path)], strict)


def listed_dump(url: str, files: list[DumpFile] | None = None) -> Dump:
    """The dump under `url` from its listing alone (`scan.scan_listed`, or the `files` it found for a
    caller that needs every file too): modules whose files are the objects' URLs, none fetched. Where a
    cluster's workers read each host's files (`--scheduler`), this process fetches only the few files
    it reads itself (`files.read_bytes`)."""
    with kept_objects():
        modules = [m for m in _group(scan_listed(url, listed(url)) if files is None else files) if m.hlo_file()]
    if not modules:
        raise DumpError(f"{url}: no files that XLA's dumper or jax.profiler writes there")
    return Dump(Path(url), modules)


def load_module_of(path: Path) -> Dump:
    """The dump of the module one dump file belongs to: the file and the files XLA named for the same
    compile (module id and timestamp) beside it. Its folder is listed, never walked nor any other entry
    opened: a file argument reads that file's module whatever else its folder holds (`/tmp`'s link
    loops, unreadable folders). A file not named like a dump file is read alone."""
    found = classify(path)
    if found is None or found.module_id is None:
        return load_dump(path)
    try:
        names = os.listdir(path.parent)
    except OSError:  # a folder that lets its files be read but not listed
        names = [path.name]
    siblings = (classify(path.parent / name) for name in names)
    key = (found.module_id, found.timestamp)
    return dump_of(path.parent, [f for f in siblings if f is not None and (f.module_id, f.timestamp) == key])


def _load_dump(paths: list[Path], strict: bool) -> Dump:
    files: list[DumpFile] = []
    loose: list[Path] = []
    directories = [p for p in paths if p.is_dir()]
    scan_root = Path(os.path.commonpath([d.absolute() for d in directories])) if len(directories) > 1 else None
    for one in paths:
        if one.is_dir():  # several directories: each one's path (from their common parent) is its host
            files += scan_under(scan_root or one, one.absolute() if scan_root else one)
        elif one.exists():
            dump_file = classify(one)
            if dump_file is None or dump_file.kind != "hlo":
                loose.append(one)
            else:
                files.append(dump_file)
        else:
            raise DumpError(f"{one}: no such file or directory")
    dump = _dump(paths, files, loose, strict)
    dump.runs = scan_root is not None
    return dump


def dump_of(root: Path, files: list[DumpFile]) -> Dump:
    """The Dump of files `scan_dump(root)` found: a caller that needs every file too scans once."""
    with kept_objects():
        return _dump([root], files, [], strict=False)


def _dump(paths: list[Path], files: list[DumpFile], loose: list[Path], strict: bool) -> Dump:
    modules = _group(files) + [
        DumpModule(None, None, None, "", [DumpFile(str(p), None, None, None, "after_optimizations", "hlo")])
        for p in loose
    ]
    kept = [m for m in modules if m.hlo_file()]
    if not kept:
        where = paths[0] if len(paths) == 1 else ", ".join(map(str, paths))
        raise DumpError(
            f"no XLA dump files (module_*.txt: *before_optimizations.txt, *after_optimizations.txt) under {where}"
        )
    root = (
        paths[0] if len(paths) == 1 and paths[0].is_dir() else Path(os.path.commonpath([p.absolute() for p in paths]))
    )
    if loose:
        _name_modules_from_headers(modules, strict)
    return Dump(root=root, modules=kept)


def _name_modules_from_headers(modules: list[DumpModule], strict: bool) -> None:
    """Loose HLO files (not named like a dump file) take the module name from their header."""
    for module in modules:
        if module.name is None:
            try:
                module.name = module.header().name
            except XlaInspectError:  # left unnamed: the analysis that reads it meets the error and skips it
                if strict:
                    raise


def _group(files: list[DumpFile]) -> list[DumpModule]:
    """Files -> compiles. HLO stage files define the modules; side files (debug_options, the folder,
    LLVM IR whose kernel name follows the module name) join the module of their host and id whose
    name prefixes theirs. Timestamped dumps put no timestamp on debug_options and the folder."""
    by_key: dict[tuple[str, int | None, int | None, str | None], DumpModule] = {}
    for dump_file in files:
        if dump_file.stage is not None:
            key = (dump_file.host, dump_file.timestamp, dump_file.module_id, dump_file.module_name)
            module = by_key.get(key)
            if module is None:
                module = by_key[key] = DumpModule(
                    dump_file.module_id, dump_file.module_name, None, dump_file.host, timestamp=dump_file.timestamp
                )
            module.files.append(dump_file)
    by_id: dict[tuple[str, int | None], list[DumpModule]] = {}
    for module in by_key.values():
        by_id.setdefault((module.host, module.module_id), []).append(module)
    for dump_file in files:
        if dump_file.stage is None:
            owner = _owner(by_id.get((dump_file.host, dump_file.module_id), []), dump_file)
            if owner is not None:
                owner.files.append(dump_file)
    modules = sorted(by_key.values(), key=lambda m: (m.host, m.timestamp or 0, m.module_id or 0, m.name or ""))
    for module in modules:
        module.platform = _module_platform(module.files)
    return modules


def _owner(candidates: list[DumpModule], dump_file: DumpFile) -> DumpModule | None:
    name = dump_file.module_name or ""
    for module in candidates:
        if dump_file.timestamp in (None, module.timestamp) and (
            module.name == dump_file.module_name or name.startswith(f"{module.name}.")
        ):
            return module
    return None


def _module_platform(files: list[DumpFile]) -> str | None:
    platforms = {f.platform for f in files if f.platform}
    return next(iter(platforms)) if len(platforms) == 1 else (sorted(platforms)[0] if platforms else None)
