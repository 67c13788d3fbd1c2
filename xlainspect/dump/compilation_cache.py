"""jax's persistent compilation cache directory (`jax_compilation_cache_dir`), read from disk alone.

Layout as jax writes it (jax/_src/lru_cache.py, compilation_cache.py, jax 0.10.2):

* `<key>-cache`: one compiled executable; `<key>` is `<module name>-<sha256 hex>` (cache_key.py).
  Its bytes are `compress(int(compile_seconds).to_bytes(4, "big") + serialized executable)`, compressed
  with zstandard when jax found it (`compression.zstd` on Python 3.14+, else the `zstandard` package),
  else zlib. Newer XLA may serialize the executable as a riegeli "split proto"; only the 4-byte prefix is
  read here, so that does not matter.
* `<key>-atime` (8-byte little-endian ns of the last use) and `.lockfile`: only with eviction on
  (`jax_compilation_cache_max_size` > 0).
* `xla_gpu_per_fusion_autotune_cache_dir/`, `xla_gpu_kernel_cache_file`: XLA's own GPU caches.

Stdlib only; zstandard is imported when an entry needs it.
"""

from __future__ import annotations

import importlib
import os
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from xlainspect.dump.module import SkippedFile
from xlainspect.errors import DumpError

_TIME_BYTES = 4
_ENTRY = re.compile(r"^(?P<key>(?P<function>.+)-[0-9a-f]{64})-cache$")
_ATIME = re.compile(r"^.+-[0-9a-f]{64}-atime$")
_XLA_OWN = frozenset({".lockfile", "xla_gpu_per_fusion_autotune_cache_dir", "xla_gpu_kernel_cache_file"})
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@dataclass(slots=True)
class CacheEntry:
    """One `<key>-cache` file."""

    function: str
    """The module name the key starts with (`jit_train_step`): the HloModule name of the compile."""
    key: str
    """`<module name>-<sha256 hex>`, as jax logs it ("with key '...'")."""
    bytes: int
    """Size on disk (compressed)."""
    compile_seconds: int
    """What jax stored: the compile's wall seconds, truncated to an integer (a 0.4 s compile stores 0)."""
    modified: float
    """The file's mtime (POSIX seconds): when jax wrote it."""
    compression: str
    """"zstandard" or "zlib"."""


@dataclass
class CacheDir:
    """A jax persistent-cache directory: its entries and the files it could not read."""

    root: Path
    entries: list[CacheEntry]
    skipped: list[SkippedFile] = field(default_factory=list[SkippedFile])

    def by_key(self) -> dict[str, CacheEntry]:
        return {e.key: e for e in self.entries}


def read_cache_dir(path: str | Path) -> CacheDir:
    """Every readable entry of a cache directory, oldest first; damaged and foreign files are in `skipped`."""
    root = Path(path)
    if not root.is_dir():
        raise DumpError(f"{root}: no such directory" if not root.exists() else f"{root}: not a directory")
    try:
        names = sorted(os.listdir(root))
    except OSError as error:
        raise DumpError(f"{root}: cannot read ({error.strerror})") from None
    cache = CacheDir(root, [])
    for name in names:
        _read_one(cache, root / name)
    if not cache.entries and not cache.skipped:
        raise DumpError(f"{root}: no persistent compilation cache entries (<module>-<sha256>-cache files)")
    cache.entries.sort(key=lambda e: (e.modified, e.key))
    return cache


def _read_one(cache: CacheDir, path: Path) -> None:
    name = path.name
    if name in _XLA_OWN or _ATIME.match(name):
        return
    match = _ENTRY.match(name)
    if match is None or not path.is_file():
        cache.skipped.append(SkippedFile(path, "not a jax cache file (<module>-<sha256>-cache)"))
        return
    try:
        cache.entries.append(read_entry(path, match["function"], match["key"]))
    except DumpError as error:
        cache.skipped.append(SkippedFile(path, str(error).removeprefix(f"{path}: ")))


def read_entry(path: Path, function: str, key: str) -> CacheEntry:
    """One entry, decompressed whole (a truncated or damaged file fails here, not later)."""
    try:
        data = path.read_bytes()
        modified = path.stat().st_mtime
    except OSError as error:
        raise DumpError(f"{path}: cannot read ({error.strerror})") from None
    compression, payload = _decompress(data, path)
    if len(payload) <= _TIME_BYTES:
        raise DumpError(f"{path}: {len(payload)} bytes after decompression: no executable after the compile time")
    seconds = int.from_bytes(payload[:_TIME_BYTES], "big")
    return CacheEntry(function, key, len(data), seconds, modified, compression)


def _decompress(data: bytes, path: Path) -> tuple[str, bytes]:
    """(compression, bytes) by the stream's magic number: jax writes zstandard frames or zlib streams."""
    if data.startswith(_ZSTD_MAGIC):
        return "zstandard", _zstd_decompress(data, path)
    if len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0:
        try:
            return "zlib", zlib.decompress(data)
        except zlib.error as error:
            raise DumpError(f"{path}: damaged or truncated zlib data ({error})") from None
    what = "empty file" if not data else "neither zstandard nor zlib data"
    raise DumpError(f"{path}: {what}: not a jax cache entry")


def _zstd_decompress(data: bytes, path: Path) -> bytes:
    """Zstandard as jax reads it: Python 3.14's `compression.zstd`, else the `zstandard` package."""
    errors: tuple[type[Exception], ...]
    decompress: Callable[[bytes], bytes]
    try:
        stdlib = importlib.import_module("compression.zstd")  # Python 3.14+
        errors, decompress = (stdlib.ZstdError,), stdlib.decompress
    except ImportError:
        try:
            import zstandard
        except ImportError:
            raise DumpError(f"{path}: zstandard-compressed; install the zstandard package to read it") from None
        errors = (zstandard.ZstdError,)
        decompress = zstandard.ZstdDecompressor().decompress
    try:
        return decompress(data)
    except errors as error:
        raise DumpError(f"{path}: damaged or truncated zstandard data ({error})") from None
