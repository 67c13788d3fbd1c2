"""Dump health: what a user should know about a dump directory before trusting any count made from it.

Dumps come from crashed or killed jobs, from several processes writing one folder, from runs that hit
`--xla_dump_max_hlo_modules`, and from flag sets that dump protos only. Each check here turns one of
those into a `HealthFinding`: a check, a severity, a count, example paths and the values the check found;
the report words each check's explanation and what to do (`xlainspect.report.views.doctor`).
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlainspect.analysis.divergence import HostDisagreement, host_disagreements, uncompared_programs
from xlainspect.analysis.runner import analyse_each, remembered
from xlainspect.analysis.tabular import Tabular
from xlainspect.dump.directory import Dump, dump_of, listed_dump
from xlainspect.dump.files import decode_text, read_bytes, read_edges, read_text
from xlainspect.dump.headers import TAIL_BYTES, closes_computation, last_line
from xlainspect.dump.module import DumpModule
from xlainspect.dump.names import AFTER_STAGES, DumpFile
from xlainspect.dump.scan import scan_dump, scan_listed
from xlainspect.dump.storage import is_url, listed
from xlainspect.dump.textproto import int_field
from xlainspect.errors import DumpError, XlaInspectError
from xlainspect.progress import Progress, silent
from xlainspect.workers import map_groups

SEVERITIES = ("error", "warning", "info")
_MAX_EXAMPLES = 3


@dataclass(slots=True)
class OddCount:
    """A host that compiled a function another number of times than most hosts did."""

    host: str
    function: str
    count: int
    usual: int


@dataclass(slots=True)
class HealthFinding:
    """One health problem of a dump: which check, how bad, how many, where to look, and what it found
    (the report's `Finding` is another thing: a cost worth fixing, ranked against the others)."""

    check: str
    severity: str
    """"error" (counts from this dump are wrong), "warning" (they may be), "info" (worth knowing)."""
    count: int
    examples: tuple[str, ...]
    """Up to three paths relative to the dump root (none for the host checks: their hosts say where)."""
    cap: int | None = None
    """dump-cap-reached: the dump's --xla_dump_max_hlo_modules."""
    modules: int | None = None
    """dump-cap-reached: modules the dump holds; per-pass-files: modules with between-pass files."""
    hosts: int | None = None
    """host-compile-counts: hosts in the dump."""
    names: tuple[str, ...] = ()
    """dump-cap-reached: modules cut at their before_optimizations file; mixed-platforms: the platforms."""
    folders: tuple[str, ...] = ()
    """dump-cap-reached: jax's per-module folders of compiles the cap left out."""
    first_error: str | None = None
    """unparsable-modules: the first module's parse error (its first line)."""
    odd_counts: tuple[OddCount, ...] = ()
    """host-compile-counts: each odd host's functions."""
    disagreements: tuple[HostDisagreement, ...] = ()
    """host-programs: each compile some hosts compiled otherwise."""


@dataclass(slots=True)
class DumpHealth(Tabular):
    """What `doctor` found about a dump: its size and each finding."""

    root: str | Path
    """The dump folder, or the URL of a dump only listed (`diagnose` with a scheduler)."""
    modules: int
    files: int
    findings: tuple[HealthFinding, ...]


def diagnose(path: str | Path, progress: Progress = silent, scheduler: str | None = None) -> DumpHealth:
    """Run every check on the dump under `path`; DumpError when there is no dump to look at.
    `progress` hears of each check done (a fleet's dump takes seconds). With a `scheduler` (a Dask
    scheduler's address) the reads of every file of a fleet's hosts (each HLO file's edges and digest,
    each compared program) are a task per host on that cluster: a dump at a URL (`gs://`, `s3://`) is
    then only listed here (`listed_dump`), each worker fetches its hosts' files, and this process
    fetches only what it reads itself (each host's debug_options, each distinct module text it parses,
    the programs a disagreement quotes); the answer is the same, its root the URL."""
    if scheduler is not None and is_url(path):  # not remembered: the workers read most objects
        scanned = scan_listed(path, listed(path))
        return _diagnosed(path, scanned, lambda: listed_dump(path, scanned), progress, scheduler)
    return _remembered_diagnosis(path, progress, scheduler)


@remembered("path")
def _remembered_diagnosis(path: str | Path, progress: Progress, scheduler: str | None) -> DumpHealth:
    """`diagnose` of a local folder (a URL mirrored first, by `remembered`), remembered."""
    root = Path(path)
    if not root.is_dir():
        raise DumpError(f"{root}: not a directory (doctor reads a --xla_dump_to folder)")
    scanned = scan_dump(root)
    return _diagnosed(root, scanned, lambda: dump_of(root, scanned), progress, scheduler)


def _diagnosed(
    root: _Root, scanned: list[DumpFile], grouped: Callable[[], Dump], progress: Progress, scheduler: str | None
) -> DumpHealth:
    """Every check on the files `scanned` under `root` (a folder, or a listed URL), whose modules
    `grouped` makes (DumpError where there are none)."""
    files = _sorted_out(scanned)
    files.scheduler = scheduler
    try:
        dump = grouped()
    except DumpError:
        if not files.protos:
            raise
        dump = Dump(Path(root), [])  # protos only: the one finding that matters is that text dumps are off
    advance = progress("checking the dump", len(_CHECKS))
    findings: list[HealthFinding] = []
    for check in _CHECKS:
        findings += check(root, dump, files)
        advance(1)
    findings.sort(key=lambda f: (SEVERITIES.index(f.severity), f.check))
    return DumpHealth(root, len(dump.modules), len(files.all), tuple(findings))


_Root = str | Path
"""Where a dump's files are: a folder, or the URL of a bucket's folder only listed (`diagnose`)."""

_ModuleKey = tuple[str, int | None, int | None]
"""(host, timestamp, module id): one compile of one process."""


@dataclass(slots=True)
class _Files:
    """A dump's files as the checks ask for them, sorted out in one pass and in scan order (a fleet's
    dump is 900,000 files: a pass per check, and sorting them all by path, were a fifth of `doctor`).
    Examples taken from these lists are sorted by path where a finding is made."""

    all: list[DumpFile]
    """The files XLA's dumper names `module_*` (not per-module folders, nor the files inside them)."""
    hlo: list[DumpFile]
    between: list[DumpFile]
    """HLO files written between passes (--xla_dump_hlo_pass_re)."""
    protos: dict[_ModuleKey, str]
    """(host, timestamp, module id) -> the last by path of its HLO protos."""
    debug_options: dict[str, str | None]
    """One per host, the first by path -> its text (None where it cannot be read: the unreadable-files
    finding names it), read once: the dump cap is an XLA flag, the same in every debug_options a
    process writes."""
    in_folders: list[DumpFile]
    """The files of jax's per-module folders (`module_0006.jit_f/module.mlir`)."""
    cap: tuple[int, Path] | None = None
    """What `_dump_cap_reached` finds, asked once."""
    unknown: list[str] = field(default_factory=list[str])
    """Files named `module_*` of no kind XLA's dumper is known to write."""
    scheduler: str | None = None
    """Where the checks read a fleet's files: a Dask scheduler's address (a task per host), None: here."""


def _sorted_out(scanned: list[DumpFile]) -> _Files:
    files = _Files([], [], [], {}, {}, [])
    debug_options: dict[str, DumpFile] = {}
    for found in scanned:
        kind = found.kind
        if kind == "folder":
            continue
        if "module_" not in found.location.rpartition(os.sep)[2]:
            files.in_folders.append(found)
            continue
        files.all.append(found)
        if kind == "unknown":
            files.unknown.append(found.location)
        if found.stage in ("pass", "in_pass"):
            files.between.append(found)
        if kind == "hlo":
            files.hlo.append(found)
        elif kind == "proto":
            key = (found.host, found.timestamp, found.module_id)
            files.protos[key] = max(files.protos.get(key, ""), found.location)
        elif kind == "debug_options":
            first = debug_options.get(found.host)
            if first is None or found.location < first.location:
                debug_options[found.host] = found
    files.debug_options = {f.location: _options_text(f.location) for f in debug_options.values()}
    files.cap = _dump_cap_reached(files)
    return files


def _finding(root: _Root, check: str, severity: str, paths: Sequence[str | Path], **found: Any) -> list[HealthFinding]:
    """[] when no path shows the problem, else the one finding with the first paths as examples, and
    what else the check `found` (HealthFinding's fields)."""
    if not paths:
        return []
    examples = tuple(_relative(root, p) for p in paths[:_MAX_EXAMPLES])
    return [HealthFinding(check, severity, len(paths), examples, **found)]


def _relative(root: _Root, path: str | Path) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _texts(root: _Root, dump: Dump, files: _Files) -> list[HealthFinding]:
    """unreadable-files, truncated-files and unparsable-modules, from one read of each HLO file: its
    first line and last bytes, and for a module's own text its content digest (a file of a few KB is
    read whole by that one read); and the debug_options read for the dump cap that cannot be read."""
    texts = [(m, f.location) for m in dump.modules if (f := m.hlo_file()) is not None]  # a Dump's modules all have one
    digested = {location for _, location in texts}
    wanted = [(f.location, f.location in digested) for f in files.hlo]
    hosts = [f.host for f in files.hlo]
    facts = dict(
        zip([path for path, _ in wanted], map_groups(_text_facts, wanted, hosts, files.scheduler, _CHUNK_FILES))
    )
    options = {location: ("unreadable", None) for location, text in files.debug_options.items() if text is None}
    return _damaged(root, facts | options) + _unparsable(root, texts, facts)


_CHUNK_FILES = 4096
"""HLO files a process reads per chunk it takes (about 30 ms)."""


def _damaged(root: _Root, facts: dict[str, tuple[str | None, bytes | None]]) -> list[HealthFinding]:
    unreadable = sorted(path for path, (problem, _) in facts.items() if problem == "unreadable")
    truncated = sorted(path for path, (problem, _) in facts.items() if problem == "truncated")
    return _finding(root, "unreadable-files", "error", unreadable) + _finding(
        root, "truncated-files", "error", truncated
    )


def _text_facts(wanted: tuple[str, bool]) -> tuple[str | None, bytes | None]:
    """Of `(path, digest)`: the file's problem ("unreadable", "truncated" or None) and, when `digest`,
    its content digest (empty for an unreadable file): the hosts of one job write the same modules,
    each parsed once. A complete HLO dump ends with a computation's closing brace: only the first line
    and the last bytes are read for that (a fleet's dump is 100,000s of files), a binary file shows in
    its first bytes, a killed writer in its last."""
    path, digest = wanted
    try:
        first, tail, whole = read_edges(path, TAIL_BYTES)
    except XlaInspectError:  # not swallowed: the unreadable-files finding names it
        return "unreadable", b"" if digest else None
    problem = _text_problem(first, tail, path)
    if not digest:
        return problem, None
    try:
        content = read_bytes(path) if whole is None else whole
    except XlaInspectError:  # its edges read, its body not (a file removed meanwhile): unreadable too
        return "unreadable", b""
    return problem, hashlib.blake2b(content, digest_size=16).digest()


def _text_problem(first: bytes, tail: bytes, path: str) -> str | None:
    """The problem ("unreadable", "truncated" or None) a file shows in its first line and last bytes."""
    try:
        decode_text(first, path)
    except XlaInspectError:  # binary or not UTF-8: the unreadable-files finding names it
        return "unreadable"
    if b"\x00" in tail:
        return "unreadable"
    last = last_line(tail)
    if not last.strip():
        return "unreadable"
    return None if closes_computation(last) else "truncated"


def _unparsable(
    root: _Root, texts: list[tuple[DumpModule, str]], facts: dict[str, tuple[str | None, bytes | None]]
) -> list[HealthFinding]:
    """Modules whose HLO text is complete but does not parse (syntax from a newer XLA, a foreign or
    damaged file): every command skips them, so a count or a diff would silently leave them out.
    Files already reported as unreadable or truncated are not repeated here. `texts`: each module with
    the path of its HLO text. Parsed by the runner, once per content (the hosts of a job write the same
    modules), the models not kept (a fleet's dump would hold every module in memory)."""
    found = {Path(location): facts.get(location) or _text_facts((location, True)) for _, location in texts}
    digests = {id(module): found[Path(location)][1] for module, location in texts}
    parsed = analyse_each(
        [module for module, _ in texts],
        _parses,
        inputs=DumpModule.hlo_path,
        key=lambda _: "doctor:parses",
        blame=DumpModule.hlo_path,
        advance=lambda _: None,
        same=lambda module: digests[id(module)],
        only_input=False,  # a finding, not an error, where no module parses
    )
    failed = [
        (skipped.path, skipped.reason.splitlines()[0].replace(str(skipped.path), _relative(root, skipped.path)))
        for skipped in parsed.skipped
        if found[Path(skipped.path)][0] is None
    ]
    first = failed[0][1] if failed else None
    return _finding(root, "unparsable-modules", "error", [path for path, _ in failed], first_error=first)


def _parses(module: DumpModule) -> bool:
    """Whether the module's HLO text parses (an error says why; the model is not kept)."""
    return bool(module.parse())


def _stranded(dump: Dump) -> list[DumpModule]:
    """Modules dumped before optimization with no after-optimizations file."""
    return [m for m in dump.modules if _hlo_stages(m) & _STRANDED == {"before_optimizations"}]


_STRANDED = frozenset({"before_optimizations", *AFTER_STAGES})


def _hlo_stages(module: DumpModule) -> set[str | None]:
    """The stages of a module's HLO files, unordered (`DumpModule.stages` sorts them: 128,000 modules)."""
    return {f.stage for f in module.files if f.kind == "hlo"}


def _cut_by_cap(dump: Dump, files: _Files) -> list[DumpModule]:
    """The stranded modules that the dump cap explains: when the cap is reached, XLA writes no file for
    a module id new to the folder, and jax's per-module folder (written outside the cap) counts toward
    it, so the compile at the cap keeps its before_optimizations file only. Those come after every
    complete module; a stranded module before a complete one is something else (a crash)."""
    if files.cap is None:
        return []
    complete = [m.module_id or 0 for m in dump.modules if not _hlo_stages(m).isdisjoint(AFTER_STAGES)]
    last = max(complete, default=-1)
    return [m for m in _stranded(dump) if (m.module_id or 0) > last]


def _missing_after(root: _Root, dump: Dump, files: _Files) -> list[HealthFinding]:
    cut = _cut_by_cap(dump, files)
    stranded = [  # a stranded module has its before_optimizations file by definition
        f.location for m in _stranded(dump) if m not in cut and (f := m.file("hlo", "before")) is not None
    ]
    return _finding(root, "missing-after-optimizations", "warning", stranded)


def _unknown_files(root: _Root, dump: Dump, files: _Files) -> list[HealthFinding]:
    return _finding(root, "unknown-files", "info", sorted(files.unknown))


def _id_collisions(root: _Root, dump: Dump, files: _Files) -> list[HealthFinding]:
    names: dict[_ModuleKey, set[str]] = defaultdict(set)
    first: dict[_ModuleKey, DumpModule] = {}
    for module in dump.modules:
        key = (module.host, module.timestamp, module.module_id)
        names[key].add(module.name or "")
        first.setdefault(key, module)
    clashes = [  # a Dump's modules all have an HLO file
        f.location for key, found in names.items() if len(found) > 1 and (f := first[key].hlo_file()) is not None
    ]
    return _finding(root, "module-id-collision", "error", clashes)


def _dump_cap_reached(files: _Files) -> tuple[int, Path] | None:
    """(cap, the debug_options file that says so) when `xla_dump_max_hlo_modules` is set and the dump
    holds that many modules; None otherwise."""
    found = [
        (int_field(text or "", "xla_dump_max_hlo_modules"), Path(location))
        for location, text in files.debug_options.items()
    ]
    caps = [(cap, path) for cap, path in found if cap is not None]
    if not caps:
        return None
    cap, path = min(caps)
    return None if cap < 0 or _staged_modules(files) < cap else (cap, path)


def _staged_modules(files: _Files) -> int:
    """How many modules have a file of some HLO stage."""
    return len({(f.host, f.timestamp, f.module_id) for f in files.all if f.stage is not None})


def _dump_cap(root: _Root, dump: Dump, files: _Files) -> list[HealthFinding]:
    if files.cap is None:
        return []
    cap, path = files.cap
    modules = _staged_modules(files)
    cut = [m.label for m in _cut_by_cap(dump, files)]
    undumped = _undumped_folders(root, files)
    found = HealthFinding("dump-cap-reached", "warning", modules, (_relative(root, path),), cap=cap, modules=modules)
    found.names, found.folders = tuple(cut), tuple(undumped)
    return [found]


def _undumped_folders(root: _Root, files: _Files) -> list[str]:
    """The per-module folders jax writes (`module_0006.jit_f/`, module.mlir) whose module has no HLO file: they
    are written outside XLA's dump cap, so they count the compiles the cap left out. Found by their
    files, as a bucket lists them (it has no folders)."""
    dumped = {(f.host, f.module_id) for f in files.all if f.stage is not None}
    undumped = {Path(f.location).parent for f in files.in_folders if (f.host, f.module_id) not in dumped}
    return [_relative(root, folder) for folder in sorted(undumped)]


def _options_text(location: str) -> str | None:
    """A debug_options file's text (a URL's object fetched alone, `files.read_bytes`); None where it
    cannot be read (the unreadable-files finding names it, `_texts`)."""
    try:
        return read_text(location)
    except XlaInspectError:
        return None


def _per_pass(root: _Root, dump: Dump, files: _Files) -> list[HealthFinding]:
    passes = sorted(f.location for f in files.between)
    modules = len({(f.host, f.timestamp, f.module_id) for f in files.between})
    return _finding(root, "per-pass-files", "info", passes, modules=modules)


def _mixed_platforms(root: _Root, dump: Dump, files: _Files) -> list[HealthFinding]:
    by_platform: dict[str, DumpModule] = {}  # each platform's first module
    for module in dump.modules:
        if module.platform:
            by_platform.setdefault(module.platform, module)
    if len(by_platform) < 2:
        return []
    paths = [f.location for module in by_platform.values() if (f := module.hlo_file()) is not None]  # all have one
    examples = tuple(_relative(root, p) for p in paths)
    return [HealthFinding("mixed-platforms", "warning", len(dump.modules), examples, names=tuple(sorted(by_platform)))]


def _protos_only(root: _Root, dump: Dump, files: _Files) -> list[HealthFinding]:
    with_text = {(f.host, f.timestamp, f.module_id) for f in files.hlo} if files.protos else set[_ModuleKey]()
    paths = sorted(path for key, path in files.protos.items() if key not in with_text)
    return _finding(root, "text-dumps-off", "warning", paths)


def _host_compile_counts(root: _Root, dump: Dump, files: _Files) -> list[HealthFinding]:
    """Hosts of one job compile the same functions the same number of times; a host that compiled a
    function more or less often than most hosts did saw other shapes or code, or lost compiles."""
    per_host: dict[str, Counter[str]] = defaultdict(Counter[str])
    for module in dump.modules:
        per_host[module.host][module.name or module.label] += 1
    if len(per_host) < 2:
        return []
    odd: dict[str, list[OddCount]] = defaultdict(list)
    for function in sorted({name for counts in per_host.values() for name in counts}):
        counts = {host: host_counts[function] for host, host_counts in per_host.items()}
        usual, _ = Counter(counts.values()).most_common(1)[0]
        for host, count in counts.items():
            if count != usual:
                odd[host].append(OddCount(host, function, count, usual))
    if not odd:
        return []
    hosts = sorted(odd)
    counts = tuple(c for host in hosts for c in odd[host])
    return [HealthFinding("host-compile-counts", "warning", len(hosts), (), hosts=len(per_host), odd_counts=counts)]


def _host_programs(root: _Root, dump: Dump, files: _Files) -> list[HealthFinding]:
    """Hosts that compiled another program for a function (analysis/divergence.py)."""
    found = [d for d in host_disagreements(dump, scheduler=files.scheduler) if d.compile is not None]
    if not found:
        return []
    return [HealthFinding("host-programs", "error", len(found), (), disagreements=tuple(found))]


def _uncompared_programs(root: _Root, dump: Dump, files: _Files) -> list[HealthFinding]:
    """Compiles whose hosts' programs host-programs could not compare: no stage every host dumped."""
    paths = [path for m in uncompared_programs(dump) if (path := m.program_file()) is not None]
    return _finding(root, "host-programs-uncompared", "warning", [p.path for p in paths])


_CHECKS = (
    _texts,
    _missing_after,
    _id_collisions,
    _dump_cap,
    _per_pass,
    _mixed_platforms,
    _protos_only,
    _host_compile_counts,
    _unknown_files,
    _host_programs,
    _uncompared_programs,
)
