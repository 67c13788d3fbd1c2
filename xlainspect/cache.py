"""A content-keyed on-disk cache of parsed HLO files, so re-analysing an unchanged dump is cheap.

Parsing a 50 MB after-optimizations module takes seconds; unpickling its model takes a fraction of
that. Entries live in the user cache directory (`$XLAINSPECT_CACHE_DIR`, else
`$XDG_CACHE_HOME/xlainspect`, else `~/.cache/xlainspect`):

- `files/<hash of the path>.json` remembers a file's size, mtime and content digest, so an
  unchanged file is not even read again to be hashed;
- `models/<content digest>.pickle` holds the parsed modules, keyed by the text's digest and by the
  parser's own fingerprint (xlainspect version, grammar text, model layout), so an upgrade or a
  grammar change never reads a stale model.

A file whose size or mtime changed is re-hashed; a new digest means a new entry. Writes go to a
temporary file and are renamed into place, so a crashed or concurrent run never leaves half an
entry; an unreadable entry is treated as a miss. The cache only ever saves time: any error reading
or writing it falls back to parsing.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import json
import os
import pickle
import tempfile
from pathlib import Path

from xlainspect.hlo.model import Module

#: Bump when the pickled model's classes change shape (fields added, renamed, retyped).
MODEL_FORMAT = 1


def cache_dir() -> Path:
    """Where entries live: `$XLAINSPECT_CACHE_DIR`, `$XDG_CACHE_HOME/xlainspect` or `~/.cache/xlainspect`."""
    explicit = os.environ.get("XLAINSPECT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "xlainspect"


def set_enabled(enabled: bool) -> None:
    """Switch the cache on or off for this process (the CLI's `--no-cache`)."""
    global _enabled
    _enabled = enabled


_enabled = os.environ.get("XLAINSPECT_NO_CACHE", "") in ("", "0")


def parse_file(path: str | Path, *, use_cache: bool | None = None) -> list[Module]:
    """`parse_hlo(read_text(path), str(path))`, answered from the cache when the file is unchanged.

    `use_cache=None` follows `set_enabled` (on unless `XLAINSPECT_NO_CACHE=1`). Raises what
    parse_hlo and read_text raise (HloParseError, DumpError); a bad file is never cached.
    """
    if use_cache is None:
        use_cache = _enabled
    from xlainspect.hlo.parser import parse_hlo
    from xlainspect.io import read_text

    path = Path(path)
    try:
        digest = _content_digest(path) if use_cache else None
    except OSError:  # missing or unreadable: read_text names the problem
        digest = None
    if digest is None:
        return parse_hlo(read_text(path), str(path))
    entry = cache_dir() / "models" / f"{digest}.pickle"
    modules = _load(entry)
    if modules is None:
        modules = parse_hlo(read_text(path), str(path))
        _store(entry, modules)
    for module in modules:  # the same text may sit at several paths
        module.path = str(path)
    return modules


def _content_digest(path: Path) -> str:
    """Digest of the file's bytes and the parser fingerprint; reuses the last one while size and mtime hold."""
    stat = path.stat()
    record = cache_dir() / "files" / (hashlib.blake2b(str(path.resolve()).encode(), digest_size=16).hexdigest() + ".json")
    try:
        known = json.loads(record.read_text())
        if known["size"] == stat.st_size and known["mtime_ns"] == stat.st_mtime_ns and known["parser"] == _parser_fingerprint():
            return known["digest"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    content = hashlib.blake2b(path.read_bytes(), digest_size=20)
    content.update(_parser_fingerprint().encode())
    digest = content.hexdigest()
    _write_atomic(record, json.dumps({"size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
                                      "parser": _parser_fingerprint(), "digest": digest}).encode())
    return digest


@functools.cache
def _parser_fingerprint() -> str:
    """Changes whenever the parse of the same text could change: version, grammar, model format."""
    from xlainspect import __version__
    from xlainspect.hlo.parser import grammar_text

    grammar = hashlib.blake2b(grammar_text().encode(), digest_size=8).hexdigest()
    return f"{__version__}-{MODEL_FORMAT}-{grammar}"


def _load(entry: Path) -> list[Module] | None:
    try:
        data = entry.read_bytes()
    except OSError:
        return None
    gc_was_enabled = gc.isenabled()
    gc.disable()  # as in the parse: a large model is millions of objects that all stay alive
    try:
        modules = pickle.loads(data)
    except Exception:  # a truncated or foreign entry is a miss, never an error
        return None
    finally:
        if gc_was_enabled:
            gc.enable()
    return modules if isinstance(modules, list) and all(isinstance(m, Module) for m in modules) else None


def _store(entry: Path, modules: list[Module]) -> None:
    try:
        data = pickle.dumps(modules, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, RecursionError):
        return
    _write_atomic(entry, data)


def _write_atomic(target: Path, data: bytes) -> None:
    """Write through a temporary file and rename, so readers never see half an entry; errors are ignored."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target.parent, prefix=".tmp-", delete=False) as handle:
            handle.write(data)
        os.replace(handle.name, target)
    except OSError:
        with contextlib.suppress(OSError, NameError):
            os.unlink(handle.name)
