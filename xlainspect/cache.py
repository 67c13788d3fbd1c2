"""xlainspect's one on-disk cache, with one key policy: an entry is found by the code that computed it,
the content (or stat) of its inputs and its arguments, and by nothing else.

Re-analysing an unchanged dump is cheap: parsing a 50 MB after-optimizations module takes seconds,
loading its model a fraction of that, and a command's remembered answer costs only a listing of its
inputs. Entries live in the user cache directory (`$XLAINSPECT_CACHE_DIR`, else
`$XDG_CACHE_HOME/xlainspect`, else `~/.cache/xlainspect`: `settings.cache_dir`):

- `<kind>/<key>.<suffix>`: an answer (`Cache.answer`) under the digest of its `Key`: the parsed
  models of a file (`models/`, the parser's code, the text's digest), an analysis of files
  (`results/`, xlainspect's code, the files' digests and names, the analysis and its arguments), a
  command's whole answer (`commands/`, xlainspect's code, the path, size and mtime of every file
  under its inputs, its arguments): changed code, a changed input or other arguments never read an
  old answer;
- `files/<hash of the path>.json` remembers a file's size, mtime and content digest, so an
  unchanged file is not even read again to be hashed (`Cache.digest`); a file whose size or mtime
  changed is re-hashed, and a new digest means a new entry;
- `grammar-*.lark`, `terminals-*.json`: the grammar's tables (`Cache.table_file`), named by a digest
  of the grammar text, Lark's version and the start symbol (`xlainspect.hlo.grammar.TableCache`).

Writes go to a temporary file and are renamed into place, so a crashed or concurrent run never leaves
half an entry; an unreadable entry is treated as a miss. The cache only ever saves time: any error
reading or writing it falls back to computing. A disabled cache (`--no-cache`) computes every answer
and writes nothing; it still reads the grammar's saved tables, which no input or argument changes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISDIR
from typing import Any, TypeVar

from xlainspect.settings import cache_dir, cache_enabled, kept_objects

T = TypeVar("T")

REMEMBERED_FILES = 20_000
"""Inputs of up to this many files get a remembered answer: listing them costs ~6 us a file (0.08 s for
a 2,000-module dump's 14,000), which a fleet's 900,000 files would pay at every run, hit or miss (5 s);
the listing stops at a folder that would pass the limit, before its files are looked at."""


class TooManyFiles(Exception):
    """The inputs hold more than REMEMBERED_FILES files: the command runs without its answer cache."""


@dataclass(frozen=True)
class Key:
    """What an answer is computed from: the code (a `fingerprint`), its inputs (content digests, or
    `listing`'s stat lines) and its arguments (their text)."""

    code: str
    inputs: tuple[str, ...]
    arguments: str

    def digest(self) -> str:
        parts = "\n".join([self.code, *self.inputs, "", self.arguments])
        return hashlib.blake2b(parts.encode(), digest_size=20).hexdigest()


@dataclass(frozen=True)
class Codec:
    """How an answer is written (`suffix` names its files); `unwritable`: what `dumps` raises for a value
    it cannot write (the answer is then returned, not kept; anything else is a bug, and raised)."""

    suffix: str
    dumps: Callable[[Any], bytes]
    loads: Callable[[bytes], Any]
    unwritable: tuple[type[Exception], ...]


PICKLE = Codec(
    "pickle",
    lambda value: pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL),
    pickle.loads,
    # a lock, a local function or class, a nesting too deep: pickle says so with any of these
    (pickle.PicklingError, TypeError, AttributeError, RecursionError),
)


class Cache:
    """The cache in `directory`; `enabled=False` computes every answer and writes nothing."""

    def __init__(self, directory: Path, *, enabled: bool = True) -> None:
        self.directory = directory
        self.enabled = enabled

    @classmethod
    def configured(cls) -> Cache:
        """The cache the settings name (`settings.cache_dir`, `--no-cache`)."""
        return cls(cache_dir(), enabled=cache_enabled())

    def answer(self, kind: str, key: Key, compute: Callable[[], T], codec: Codec = PICKLE) -> T:
        """`compute()`, or what it returned when last computed under the same key."""
        if not self.enabled:
            return compute()
        entry = self.directory / kind / f"{key.digest()}.{codec.suffix}"
        try:
            data = entry.read_bytes()
            with kept_objects():  # an answer lives to the end of the run: collections need not scan it
                return codec.loads(data)
        except Exception:  # noqa: BLE001 (missing, truncated or foreign: a miss)
            pass
        result = compute()
        with contextlib.suppress(*codec.unwritable):
            self.write(entry, codec.dumps(result))
        return result

    def digest(self, path: Path) -> str:
        """Digest of the file's bytes; the last one is reused while its size and mtime hold. Raises
        OSError where the file cannot be read."""
        stat = path.stat()
        name = hashlib.blake2b(str(path.resolve()).encode(), digest_size=16).hexdigest()
        record = self.directory / "files" / f"{name}.json"
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            known = json.loads(record.read_text())
            if known["size"] == stat.st_size and known["mtime_ns"] == stat.st_mtime_ns:
                return known["content"]
        content = hashlib.blake2b(path.read_bytes(), digest_size=20).hexdigest()
        if self.enabled:
            found = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "content": content}
            self.write(record, json.dumps(found).encode())
        return content

    def table_file(self, name: str) -> Path | None:
        """`xlainspect.hlo.grammar.TableCache`: where a grammar table is kept, if it may be read or written."""
        path = self.directory / name
        return path if self.enabled or path.is_file() else None

    def write_table(self, name: str, data: bytes) -> None:
        if self.enabled:
            self.write(self.directory / name, data)

    @staticmethod
    def write(target: Path, data: bytes) -> None:
        """Write an entry through a temporary file and a rename, so a reader never sees half of one (a
        crashed or concurrent run); any error only costs the entry."""
        written = None
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=target.parent, prefix=".tmp-", delete=False) as handle:
                written = handle.name
                handle.write(data)
            os.replace(written, target)
        except OSError:
            if written is not None:
                with contextlib.suppress(OSError):
                    os.unlink(written)


def listing(paths: Iterable[str | Path]) -> list[str]:
    """`path size mtime` of every file under `paths` (folders walked, symbolic links followed, each
    folder once), a folder's own mtime (entries added or removed), `missing` for what is not there:
    the inputs of a remembered command as its key sees them. TooManyFiles past REMEMBERED_FILES."""
    lines: list[str] = []
    seen: set[tuple[int, int]] = set()

    def visit(path: str) -> None:
        try:
            found = os.stat(path)
        except FileNotFoundError:
            lines.append(f"{path}\tmissing")
            return
        if not S_ISDIR(found.st_mode):
            lines.append(f"{path}\t{found.st_size}\t{found.st_mtime_ns}")
        elif (found.st_dev, found.st_ino) not in seen:
            seen.add((found.st_dev, found.st_ino))
            lines.append(f"{path}/\t{found.st_mtime_ns}")
            names = sorted(os.listdir(path))
            if len(lines) + len(names) > REMEMBERED_FILES:
                raise TooManyFiles
            for name in names:
                visit(os.path.join(path, name))

    for path in paths:
        visit(os.path.abspath(path))
    return lines


def fingerprint(files: Iterable[Path]) -> str:
    """A digest of the code an answer is computed from: the bytes of `files`, in the order given."""
    digest = hashlib.blake2b(digest_size=12)
    for source in files:
        digest.update(source.read_bytes())
    return digest.hexdigest()
