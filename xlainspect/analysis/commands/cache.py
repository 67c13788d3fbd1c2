"""`cache` and `cache-misses`: what jax's persistent compilation cache holds, and why a run missed it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from xlainspect.analysis.cache_inventory import cache_inventory, dump_entries
from xlainspect.analysis.cache_misses import cache_misses
from xlainspect.analysis.runner import remembered
from xlainspect.analysis.tabular import Tabular
from xlainspect.dump.compilation_cache import read_cache_dir
from xlainspect.dump.directory import Dump, dump_of, load_dump
from xlainspect.dump.jaxlog import read_jax_log, run_log
from xlainspect.dump.module import SkippedFile
from xlainspect.dump.scan import scan_dump
from xlainspect.errors import UsageError

if TYPE_CHECKING:
    from xlainspect.analysis.cache_inventory import CachedFunction, DumpCompileEntry
    from xlainspect.analysis.cache_misses import CacheMiss
    from xlainspect.dump.compilation_cache import CacheDir


@dataclass
class CacheReport(Tabular):
    """A persistent-cache directory per function, and with a dump, which compiles it holds."""

    cached: CacheDir
    functions: list[CachedFunction]
    joined: list[DumpCompileEntry] | None
    """With a dump: each of its compiles and whether the cache holds its executable."""
    skipped: list[SkippedFile]


@remembered("path", "dump", "log")
def cache_report(path: str | Path, *, dump: str | Path | None = None, log: Path | None = None) -> CacheReport:
    """What jax's persistent compilation cache holds, per function, and which functions hold one program
    under several keys (a key that changed between runs, or changes every run: jax #21159). `log` is the
    run log of `dump`."""
    if log is not None and dump is None:
        raise UsageError("$log is the log of the run of $dump: give both")
    cached = read_cache_dir(path)
    loaded = load_dump(dump) if dump is not None else None
    joined = dump_entries(cached, loaded, run_log(dump, log)) if loaded is not None else None
    return CacheReport(cached, cache_inventory(cached), joined, [*cached.skipped, *(loaded.skipped if loaded else [])])


class CacheMisses(Tabular, list["CacheMiss"]):
    """`cache_misses_report`'s rows, a list, with the runs it compares (named in its table's title)."""

    def __init__(self, rows: list[CacheMiss], a: str | Path, b: str | Path, skipped: list[SkippedFile]) -> None:
        super().__init__(rows)
        self.a, self.b = a, b
        self.skipped = skipped
        """Files of B's dump that could not be read (their functions' details say less)."""


@remembered("a", "b")
def cache_misses_report(a: str | Path, b: str | Path) -> CacheMisses:
    """Per function of run B: hit, miss or not written, and for a miss the cache-key components that
    changed since run A. A run is a jax log, or a folder holding jax.log (with its dump, for the HLO)."""
    dump = _dump_if_any(Path(b))
    skipped = list(dump.skipped) if dump is not None else []
    rows = cache_misses(read_jax_log(a), read_jax_log(b), dump, skipped)
    return CacheMisses(rows, a, b, skipped)


def _dump_if_any(path: Path) -> Dump | None:
    """The dump beside a run's log (a capture directory), for the HLO it holds; None for a lone log, or a
    folder without HLO files (a run that dumped nothing: the log alone says what missed)."""
    if not path.is_dir():
        return None
    scanned = scan_dump(path)
    return dump_of(path, scanned) if any(f.kind == "hlo" for f in scanned) else None
