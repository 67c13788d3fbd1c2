"""Dump health: what a user should know about a dump directory before trusting any count made from it.

Dumps come from crashed or killed jobs, from several processes writing one folder, from runs that hit
`--xla_dump_max_hlo_modules`, and from flag sets that dump protos only. Each check here turns one of
those into a `Finding` with a severity, a count, example paths, and what to do about it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from xlainspect.dump.directory import AFTER_STAGES, Dump, DumpFile, classify, load_dump
from xlainspect.dump.files import read_text
from xlainspect.errors import DumpError, XlaInspectError

SEVERITIES = ("error", "warning", "info")
_MAX_EXAMPLES = 3
_DUMP_CAP = re.compile(r"^\s*xla_dump_max_hlo_modules:\s*(-?\d+)\s*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Finding:
    """One health problem of a dump: how bad, how many, where to look, and what to do."""

    check: str
    severity: str
    """"error" (counts from this dump are wrong), "warning" (they may be), "info" (worth knowing)."""
    count: int
    examples: tuple[str, ...]
    """Up to three paths relative to the dump root."""
    explanation: str
    action: str


@dataclass(frozen=True, slots=True)
class DumpHealth:
    root: Path
    modules: int
    files: int
    findings: tuple[Finding, ...]


def diagnose(path: str | Path) -> DumpHealth:
    """Run every check on the dump under `path`; DumpError when there is no dump to look at."""
    root = Path(path)
    if not root.is_dir():
        raise DumpError(f"{root}: not a directory (doctor reads a --xla_dump_to folder)")
    files = _all_files(root)
    try:
        dump = load_dump(root)
    except DumpError:
        if not any(f.kind == "proto" for f in files):
            raise
        dump = Dump(root, [])  # protos only: the one finding that matters is that text dumps are off
    findings = [finding for check in _CHECKS for finding in check(root, dump, files)]
    findings.sort(key=lambda f: (SEVERITIES.index(f.severity), f.check))
    return DumpHealth(root, len(dump.modules), len(files), tuple(findings))


def _all_files(root: Path) -> list[DumpFile]:
    """Every file under `root` that XLA's dumper names (symbolic links to folders are not followed)."""
    found = []
    for path in sorted(root.rglob("*module_*")):
        if path.is_file():
            host = path.parent.relative_to(root).as_posix()
            dump_file = classify(path, "" if host == "." else host)
            if dump_file is not None and dump_file.kind != "folder":
                found.append(dump_file)
    return found


def _finding(root: Path, check: str, severity: str, paths: list[Path], explanation: str, action: str) -> list[Finding]:
    """[] when no path shows the problem, else the one finding with the first paths as examples."""
    if not paths:
        return []
    examples = tuple(_relative(root, p) for p in paths[:_MAX_EXAMPLES])
    return [Finding(check, severity, len(paths), examples, explanation, action)]


def _relative(root: Path, path: Path) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _damaged(root: Path, dump: Dump, files: list[DumpFile]) -> list[Finding]:
    problems = {f.path: _text_problem(f.path) for f in files if f.kind == "hlo"}
    unreadable = [path for path, problem in problems.items() if problem == "unreadable"]
    truncated = [path for path, problem in problems.items() if problem == "truncated"]
    return _finding(
        root,
        "unreadable-files",
        "error",
        unreadable,
        "HLO text files that are binary, not UTF-8, compressed wrongly or empty; every command skips them.",
        "Re-run the dump, or delete the files; `--strict` makes commands fail on them.",
    ) + _finding(
        root,
        "truncated-files",
        "error",
        truncated,
        "HLO text ends mid-computation (the process was killed, or is still writing); commands skip them.",
        "Wait for the job to finish, or re-run it; the module's other stages may still be complete.",
    )


def _text_problem(path: Path) -> str | None:
    """Return "unreadable", "truncated" or None. A complete HLO dump ends with a computation's closing brace."""
    try:
        text = read_text(path)
    except XlaInspectError:
        return "unreadable"
    last = text.rstrip().rsplit("\n", 1)[-1].strip()
    if not last:
        return "unreadable"
    return None if last.startswith("}") else "truncated"


def _missing_after(root: Path, dump: Dump, files: list[DumpFile]) -> list[Finding]:
    stranded = [
        m.file("hlo", "before").path
        for m in dump.modules
        if "before_optimizations" in m.stages and not set(m.stages) & set(AFTER_STAGES)
    ]
    return _finding(
        root,
        "missing-after-optimizations",
        "warning",
        stranded,
        "A module was dumped before optimization but has no after-optimizations file: its compile "
        "crashed or was killed, it was filtered out, or a persistent compilation cache hit skipped it.",
        "Check the job's log for a compile error or OOM kill; count these as attempted compiles only.",
    )


def _id_collisions(root: Path, dump: Dump, files: list[DumpFile]) -> list[Finding]:
    names: dict[tuple, set[str]] = defaultdict(set)
    paths: dict[tuple, Path] = {}
    for module in dump.modules:
        key = (module.host, module.timestamp, module.module_id)
        names[key].add(module.name or "")
        paths.setdefault(key, module.hlo_file().path)
    clashes = [paths[key] for key, found in names.items() if len(found) > 1]
    return _finding(
        root,
        "module-id-collision",
        "error",
        clashes,
        "One module id names different modules: several processes (hosts, or repeated runs) wrote into "
        "one folder, and XLA's per-process ids restart at 0, so files may have overwritten each other.",
        "Give every process its own --xla_dump_to folder (e.g. one per host), or empty it between runs.",
    )


def _dump_cap(root: Path, dump: Dump, files: list[DumpFile]) -> list[Finding]:
    caps = [
        (int(m[1]), f.path)
        for f in files
        if f.kind == "debug_options"
        for m in [_DUMP_CAP.search(_quiet_read(f.path))]
        if m
    ]
    if not caps:
        return []
    cap, path = min(caps)
    modules = len({(f.host, f.timestamp, f.module_id) for f in files if f.stage is not None})
    if cap < 0 or modules < cap:
        return []
    return [
        Finding(
            "dump-cap-reached",
            "warning",
            modules,
            (_relative(root, path),),
            f"--xla_dump_max_hlo_modules={cap} and the dump holds {modules} modules: compiles after the "
            f"cap were not dumped, so recompile counts are a lower bound.",
            "Raise --xla_dump_max_hlo_modules (or narrow --xla_dump_hlo_module_re) and re-run.",
        )
    ]


def _quiet_read(path: Path) -> str:
    try:
        return read_text(path)
    except XlaInspectError:
        return ""


def _per_pass(root: Path, dump: Dump, files: list[DumpFile]) -> list[Finding]:
    passes = [f.path for f in files if f.stage in ("pass", "in_pass")]
    modules = len({(f.host, f.timestamp, f.module_id) for f in files if f.stage in ("pass", "in_pass")})
    return _finding(
        root,
        "per-pass-files",
        "info",
        passes,
        f"--xla_dump_hlo_pass_re wrote {len(passes)} between-pass HLO files for {modules} module(s): "
        f"counting files (ls | wc -l) overstates compiles; xlainspect counts modules.",
        "Nothing to fix; drop --xla_dump_hlo_pass_re when you only need before/after HLO.",
    )


def _mixed_platforms(root: Path, dump: Dump, files: list[DumpFile]) -> list[Finding]:
    by_platform: dict[str, list[Path]] = defaultdict(list)
    for module in dump.modules:
        if module.platform:
            by_platform[module.platform].append(module.hlo_file().path)
    if len(by_platform) < 2:
        return []
    paths = [paths[0] for paths in by_platform.values()]
    return [
        Finding(
            "mixed-platforms",
            "warning",
            len(dump.modules),
            tuple(_relative(root, p) for p in paths),
            f"Modules for {', '.join(sorted(by_platform))} share one folder: several jobs wrote here, and "
            f"per-function compile counts mix platforms.",
            "Dump each platform (or job) into its own folder, or filter modules by platform.",
        )
    ]


def _protos_only(root: Path, dump: Dump, files: list[DumpFile]) -> list[Finding]:
    keys_with_text = {(f.host, f.timestamp, f.module_id) for f in files if f.kind == "hlo"}
    protos = {(f.host, f.timestamp, f.module_id): f.path for f in files if f.kind == "proto"}
    paths = [path for key, path in protos.items() if key not in keys_with_text]
    return _finding(
        root,
        "text-dumps-off",
        "warning",
        paths,
        "Modules dumped as HLO protos only (--xla_dump_hlo_as_text=false): xlainspect reads HLO text, "
        "so these modules are invisible to every other command.",
        "Re-run with --xla_dump_hlo_as_text (it may be combined with --xla_dump_hlo_as_proto).",
    )


_CHECKS = (_damaged, _missing_after, _id_collisions, _dump_cap, _per_pass, _mixed_platforms, _protos_only)
