"""jax's persistent compilation cache directory (`jax_compilation_cache_dir`), read from disk alone.

Layout as jax writes it (jax/_src/lru_cache.py, compilation_cache.py, jax 0.10.2):

* `<key>-cache`: one compiled executable; `<key>` is `<module name>-<sha256 hex>` (cache_key.py).
  Its bytes are `compress(int(compile_seconds).to_bytes(4, "big") + serialized executable)`, compressed
  with zstandard when jax found it (`compression.zstd` on Python 3.14+, else the `zstandard` package),
  else zlib. Newer XLA may serialize the executable as a riegeli "split proto"; only the 4-byte prefix is
  read here, so that does not matter.
* Which program an entry holds (`CacheEntry.program`), so that entries of one program under several keys
  are told from one entry per signature: on GPU, the optimized module's frontend attribute
  `fingerprint_before_lhs`, XLA's `GetFingerprint128` of the canonical HLO before the latency-hiding
  scheduler (gpu_hlo_schedule.cc), found in the executable's bytes; else the `HloModuleProto` a CPU
  executable embeds (hlo.proto: name = 1, computations = 3, host_program_shape = 4), hashed without its
  `id` (5), a process-wide counter. None where neither is found.
* `<key>-atime` (8-byte little-endian ns of the last use) and `.lockfile`: only with eviction on
  (`jax_compilation_cache_max_size` > 0).
* `xla_gpu_per_fusion_autotune_cache_dir/`, `xla_gpu_kernel_cache_file`: XLA's own GPU caches.

Stdlib only; zstandard is imported when an entry needs it.
"""

from __future__ import annotations

import hashlib
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
    program: str | None = None
    """Which compiled program the entry holds (see the module docstring): equal for the same program
    compiled in another run or under another key; None where the executable does not say."""


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
    program = executable_program(payload[_TIME_BYTES:], function)
    return CacheEntry(function, key, len(data), seconds, modified, compression, program)


_FINGERPRINT = re.compile(rb"fingerprint_before_lhs\x12 (?P<hex>[0-9a-f]{32})")
"""The frontend attribute map entry XLA's GPU scheduler adds: key, then field 2, 32 bytes of hex."""
_MODULE_DEPTH = 4
"""How deep in the executable's messages an `HloModuleProto` is looked for (a CPU executable's is at 3)."""


def executable_program(executable: bytes, function: str) -> str | None:
    """Which program a serialized executable holds: `fp:` and XLA's fingerprint before scheduling (GPU),
    else `hlo:` and the sha256 of the embedded HloModuleProto less its id; None where neither is found."""
    if found := _FINGERPRINT.search(executable):
        return "fp:" + found["hex"].decode()
    size, at = _varint(executable, 0)  # jax 0.10's IFRT executables: a length-prefixed header, then the proto
    parts = [executable[at + size :], executable] if 0 <= at < at + size <= len(executable) else [executable]
    fields = next((f for part in parts if (f := _module_proto(part, function.encode(), 0)) is not None), None)
    if fields is None:
        return None
    digest = hashlib.sha256(b"".join(raw for number, _, raw in fields if number != _MODULE_ID))
    return "hlo:" + digest.hexdigest()


_MODULE_NAME, _COMPUTATIONS, _HOST_PROGRAM_SHAPE, _MODULE_ID = 1, 3, 4, 5
"""HloModuleProto's field numbers (xla/service/hlo.proto)."""
Field = tuple[int, bytes, bytes]
"""A protobuf field: number, value (a length-delimited field's bytes, else empty) and its bytes as written."""


def _module_proto(data: bytes, name: bytes, depth: int) -> list[Field] | None:
    """The fields of the first message, `data` or one nested in it, that is an HloModuleProto of module
    `name` (its name, computations and host program shape); None where there is none."""
    fields = _fields(data)
    if fields is None:
        return None
    numbers = {number for number, _, _ in fields}
    if (_MODULE_NAME, name) in {(n, v) for n, v, _ in fields} and {_COMPUTATIONS, _HOST_PROGRAM_SHAPE} <= numbers:
        return fields
    if depth == _MODULE_DEPTH:
        return None
    return next((m for _, v, _ in fields if v and (m := _module_proto(v, name, depth + 1)) is not None), None)


def _fields(data: bytes) -> list[Field] | None:
    """`data` read as one protobuf message; None where it is not one (a blob of object code)."""
    fields: list[Field] = []
    at = 0
    while at < len(data):
        start = at
        tag, at = _varint(data, at)
        number, wire = tag >> 3, tag & 7
        value = b""
        if number == 0 or at < 0:
            return None
        if wire == 0:
            _, at = _varint(data, at)
        elif wire == 2:
            size, at = _varint(data, at)
            value, at = data[at : at + size], at + size
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
        else:
            return None
        if at < 0 or at > len(data):
            return None
        fields.append((number, value, data[start:at]))
    return fields


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """A protobuf varint at `at`: (value, the offset after it); offset -1 where the bytes end first."""
    value = shift = 0
    while at < len(data):
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if byte < 0x80:
            return value, at
    return value, -1


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
