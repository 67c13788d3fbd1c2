"""What a persistent compilation cache directory holds, per function, and which compiles of a dump it holds.

An entry's function is the module name its key starts with. A function holds one entry per distinct key
(jax's cache_key.get: the computation, jax and backend versions, XLA flags, compile options, devices,
compression). Entries of different programs are what a run compiles (one per signature or static value;
one run writes each key once). Entries of one program (`CacheEntry.program`) under several keys are
the program compiled again by a run whose key differed: flags, versions or compression changed between
runs, or a key changes every run (jax #21159: a custom_partitioning callback's address hashed into the
computation). The entry count alone says neither.

Joining a dump: with the run's jax log the dump's compiles carry their keys (paired as in
compile_times), so an entry is found by key; without a log only the order is known, and the k-th compile
of a function is matched with its k-th entry, oldest first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from xlainspect.analysis.compile_times import compile_times
from xlainspect.dump.compilation_cache import CacheDir, CacheEntry
from xlainspect.dump.directory import Dump
from xlainspect.dump.jaxlog import JaxLog


@dataclass(slots=True)
class CachedFunction:
    """One function's entries in jax's persistent compilation cache: count, bytes, stored compile seconds."""

    name: str
    entries: int
    bytes: int
    compile_seconds: int
    """The stored seconds of its entries, summed (what a cold run would spend compiling them again)."""
    oldest: str
    newest: str
    programs: int | None
    """The distinct compiled programs its entries hold; None where an entry's program is not known."""
    same_program: bool
    """Some program is held under more than one key (see the module docstring)."""


@dataclass(slots=True)
class DumpCompileEntry:
    """One compile of a dump and the cache entry that holds it, if any."""

    function: str
    compile: int
    """1-based, in the dump's module-id order within the function."""
    module_id: int | None
    key: str | None
    cached: bool
    matched_by: str
    """"key" (from the run's jax log) or "order" (no log: the k-th compile against the k-th oldest entry)."""


def timestamp(seconds: float) -> str:
    """A file time as UTC ISO 8601, to the second."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def cache_inventory(cache: CacheDir) -> list[CachedFunction]:
    """Per function, most entries first: entry count, bytes, stored compile seconds, oldest and newest
    write, the programs the entries hold and whether one is held under several keys."""
    rows = [_function_row(name, entries) for name, entries in entries_by_function(cache).items()]
    return sorted(rows, key=lambda r: (-r.entries, r.name))


def entries_by_function(cache: CacheDir) -> dict[str, list[CacheEntry]]:
    """Entries per function, oldest first."""
    grouped: dict[str, list[CacheEntry]] = {}
    for entry in cache.entries:
        grouped.setdefault(entry.function, []).append(entry)
    return grouped


def _function_row(name: str, entries: list[CacheEntry]) -> CachedFunction:
    known = {e.program for e in entries if e.program is not None}
    programs = len(known) if all(e.program is not None for e in entries) else None
    return CachedFunction(
        name,
        len(entries),
        sum(e.bytes for e in entries),
        sum(e.compile_seconds for e in entries),
        timestamp(entries[0].modified),
        timestamp(entries[-1].modified),
        programs,
        len(known) < sum(e.program is not None for e in entries),
    )


def dump_entries(cache: CacheDir, dump: Dump, log: JaxLog | None = None) -> list[DumpCompileEntry]:
    """Every compile of the dump, in order per function, with whether the cache holds its executable."""
    if log is not None:
        paired = compile_times(dump, log).by_module
        keys = cache.by_key()
        return [
            DumpCompileEntry(
                name,
                index,
                m.module_id,
                paired[m].key if m in paired else None,
                m in paired and paired[m].key in keys,
                "key",
            )
            for name, modules in dump.functions().items()
            for index, m in enumerate(modules, 1)
        ]
    stored = entries_by_function(cache)
    rows: list[DumpCompileEntry] = []
    for name, modules in dump.functions().items():
        entries = stored.get(name, [])
        for index, module in enumerate(modules, 1):
            entry = entries[index - 1] if index <= len(entries) else None
            rows.append(
                DumpCompileEntry(name, index, module.module_id, entry and entry.key, entry is not None, "order")
            )
    return rows
