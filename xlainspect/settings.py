"""What a caller lets xlainspect do to its process and its disk. Stdlib only.

The library's defaults change nothing a caller did not ask for: `parse_hlo` parses in the calling
process with garbage collection as the caller left it. The CLI owns its process and opts in
(`own_process`): a large text is parsed by one worker process per core, and collection pauses
while millions of long-lived model objects are made (the dump layer lends these to the parser as
`workers.OWNED`; `hlo` never reads this module). `--no-cache` (`set_cache_enabled(False)`)
makes xlainspect write nothing: neither parsed models nor the grammar's LALR tables.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
from collections.abc import Generator
from pathlib import Path

_cache_enabled = os.environ.get("XLAINSPECT_NO_CACHE", "") in ("", "0")
_parse_workers = 1
_pause_gc = False


def cache_dir() -> Path:
    """Where entries live: `$XLAINSPECT_CACHE_DIR`, `$XDG_CACHE_HOME/xlainspect` or `~/.cache/xlainspect`."""
    explicit = os.environ.get("XLAINSPECT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "xlainspect"


def cache_enabled() -> bool:
    """On unless `XLAINSPECT_NO_CACHE=1` or `set_cache_enabled(False)` (the CLI's `--no-cache`)."""
    return _cache_enabled


def set_cache_enabled(enabled: bool) -> None:
    global _cache_enabled
    _cache_enabled = enabled


def own_process(workers: int | None = None) -> None:
    """Let xlainspect use the process as its own: `workers` parse processes for large texts (one per
    core by default), garbage collection paused while a model is built (a quarter of a parse), and freed
    memory given back to the system (`_give_back_freed_memory`)."""
    global _parse_workers, _pause_gc
    _parse_workers = workers if workers is not None else _cores()
    _pause_gc = True
    _give_back_freed_memory()


def work_alone() -> None:
    """In a forked worker: what it maps runs in it alone. Its siblings hold the other cores already; a
    fork of its own (a job's host reading a large trace, naming many steps) would only share them."""
    global _parse_workers
    _parse_workers = 1


_M_MMAP_THRESHOLD = -3
"""mallopt(3)'s parameter: the size from which glibc maps a block on its own."""


_libc: ctypes.CDLL | None = None
"""glibc, where xlainspect owns the process and runs on it (`_give_back_freed_memory`)."""


def _give_back_freed_memory() -> None:
    """The C library (glibc) keeps a freed block under its mmap threshold in the heap, and raises the
    threshold each time a mapped block is freed (up to 32 MiB): the temporaries numpy makes of a trace's
    columns, tens of MB each, then stay in the process once freed (400 MB of a 1 GB peak on a 167 MB
    trace). A fixed threshold of 16 MiB maps each larger block on its own and unmaps it when freed; the
    smaller ones (a chunk's columns, 1 MiB each) are reused from the heap rather than mapped afresh each
    time (each new page a fault, in the system's time), and `trim_freed_memory`
    gives the heap's free pages back between a read's phases. Elsewhere than glibc: nothing."""
    global _libc
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(_M_MMAP_THRESHOLD, 16 << 20)
        libc.malloc_trim  # noqa: B018  (glibc has it: checked here, called later)
    except (OSError, AttributeError):
        return
    _libc = libc


def trim_freed_memory() -> None:
    """The heap's free pages given back to the system (glibc's `malloc_trim`), where xlainspect owns the
    process: after a phase whose temporaries are gone, before the next holds more."""
    if _libc is not None:
        _libc.malloc_trim(0)


def parse_workers() -> int:
    return _parse_workers


@contextlib.contextmanager
def paused_gc() -> Generator[bool]:
    """Garbage collection paused for the block where the process is xlainspect's own (and collection
    is on); yields whether it paused."""
    if not (_pause_gc and gc.isenabled()):
        yield False
        return
    gc.disable()
    try:
        yield True
    finally:
        gc.enable()


@contextlib.contextmanager
def kept_objects() -> Generator[None]:
    """Where the process is xlainspect's own, garbage collection paused while the block makes objects
    that live to the end of the run, and those frozen after (never scanned again): a fleet's dump lists
    900,000 file records, and collections scanning them over and over would cost half the listing."""
    with paused_gc() as paused:
        yield
        if paused:
            gc.freeze()


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
