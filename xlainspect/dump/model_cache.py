"""A content-keyed on-disk cache of parsed HLO files, so re-analysing an unchanged dump is cheap.

Parsing a 50 MB after-optimizations module takes seconds; loading its model takes a fraction of
that. Entries live in the user cache directory (`$XLAINSPECT_CACHE_DIR`, else
`$XDG_CACHE_HOME/xlainspect`, else `~/.cache/xlainspect`):

- `files/<hash of the path>.json` remembers a file's size, mtime and content digest, so an
  unchanged file is not even read again to be hashed;
- `models/<content digest>.model` holds the parsed modules, keyed by the text's digest and by the
  parser's own fingerprint (xlainspect version, grammar text, model layout), so an upgrade or a
  grammar change never reads a stale model;
- `results/<key>.pickle` holds what an analysis returned for one file (`cached_result`), keyed by
  the file's digest and name, the analysis and its arguments, and a digest of xlainspect's own
  source, so changed code never serves an old answer;
- `commands/<key>.pickle` holds a whole command's answer (`remembered`), keyed by its arguments,
  xlainspect's source and the path, size and mtime of every file under its inputs: re-running a
  command on an unchanged dump reads no file, only their names and stat.

A file whose size or mtime changed is re-hashed; a new digest means a new entry. Writes go to a
temporary file and are renamed into place, so a crashed or concurrent run never leaves half an
entry; an unreadable entry is treated as a miss. The cache only ever saves time: any error reading
or writing it falls back to parsing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import inspect
import json
import marshal
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from stat import S_ISDIR
from typing import TYPE_CHECKING, TypeVar

from xlainspect.dump.storage import is_url, local
from xlainspect.progress import silent
from xlainspect.settings import cache_dir, cache_enabled, kept_objects, write_cache_file

if TYPE_CHECKING:  # the model classes load with the model cache's records (`model_records`)
    from xlainspect.hlo.model import Module


def parse_file(path: str | Path, *, use_cache: bool | None = None, text: str | None = None) -> list[Module]:
    """`parse_hlo(read_text(path), str(path))`, answered from the cache when the file is unchanged.

    `use_cache=None` follows `xlainspect.settings.cache_enabled()`; `text` is the file's text where the
    caller read it already (it is not read again to be parsed). Raises what parse_hlo and read_text
    raise (HloParseError, DumpError); a bad file is never cached.
    """
    if use_cache is None:
        use_cache = cache_enabled()
    path = Path(path)
    try:
        digest = _content_digest(path) if use_cache else None
    except OSError:  # missing or unreadable: read_text names the problem
        digest = None
    if digest is None:
        return _parse(path, text)
    entry = cache_dir() / "models" / f"{digest}.model"
    modules = _load(entry)
    if modules is None:
        modules = _parse(path, text)
        _store(entry, modules)
    for module in modules:  # the same text may sit at several paths
        module.path = str(path)
    return modules


T = TypeVar("T")


def cached_result(
    path: str | Path | Sequence[str | Path],
    analysis: str,
    compute: Callable[[], T],
    *,
    use_cache: bool | None = None,
) -> T:
    """`compute()`, an analysis of the file at `path` (or of every file in a sequence of paths), answered
    from the cache while those files, their names and xlainspect's code are unchanged: a warm re-analysis
    then reads neither the files nor the model.

    `analysis` names the analysis and its arguments. Errors from `compute` pass through, uncached.
    """
    paths = _input_paths(path)
    if not (cache_enabled() if use_cache is None else use_cache):
        return compute()
    try:
        digests = [f"{_content_digest(p)}\n{p.name}" for p in paths]
    except OSError:
        return compute()
    return _memo("results", [*digests, analysis], compute)


def remembered(*inputs: str, uses: tuple[str, ...] = ()) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """A command's library function, answered from `commands/` while its arguments, xlainspect's code
    and every file under the arguments named in `inputs` (files or folders, one or a sequence, None
    for none) keep their path, size and mtime: a warm re-run lists and stats the inputs, nothing more.
    `uses` names optional packages the answer depends on; which of them can be imported is part of the
    key. An argument named `progress` is not. With the cache off it is the function."""

    def wrap(function: Callable[..., T]) -> Callable[..., T]:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def call(*args, **kwargs) -> T:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            _read_urls(bound.arguments, inputs)
            args, kwargs = bound.args, bound.kwargs
            if not cache_enabled():
                return function(*args, **kwargs)
            arguments = {name: value for name, value in bound.arguments.items() if name != "progress"}
            try:
                listing = _listing(p for name in inputs for p in _input_paths(arguments[name]))
            except (OSError, _TooManyFiles):
                return function(*args, **kwargs)
            call_text = f"{function.__module__}.{function.__qualname__}{arguments!r} {_importable(uses)}"
            return _memo("commands", [call_text, *listing], lambda: function(*args, **kwargs))

        return call

    return wrap


def _read_urls(arguments: dict, inputs: tuple[str, ...]) -> None:
    """Replace each URL among the `inputs` arguments by its local mirror (`storage.local`), so the
    command reads, and its answer is keyed by, local files that change when the objects' versions do."""
    progress = arguments.get("progress") or silent
    for name in inputs:
        value = arguments[name]
        if isinstance(value, (list, tuple)):
            arguments[name] = type(value)(local(v, progress) if is_url(v) else v for v in value)
        elif is_url(value):
            arguments[name] = local(value, progress)


def _importable(packages: tuple[str, ...]) -> tuple[bool, ...]:
    importable = []
    for package in packages:
        try:
            importable.append(importlib.util.find_spec(package) is not None)
        except (ImportError, ValueError):  # a parent missing, or a module set to None in sys.modules
            importable.append(False)
    return tuple(importable)


def _input_paths(value) -> list[Path]:
    if value is None:
        return []
    return [Path(value)] if isinstance(value, (str, Path)) else [Path(v) for v in value]


REMEMBERED_FILES = 20_000
"""Inputs of up to this many files get a remembered answer: listing them costs ~6 us a file (0.08 s for
a 2,000-module dump's 14,000), which a fleet's 900,000 files would pay at every run, hit or miss (5 s);
the listing stops at a folder that would pass the limit, before its files are looked at."""


class _TooManyFiles(Exception):
    """The inputs hold more than REMEMBERED_FILES files: the command runs without its answer cache."""


def _listing(paths) -> list[str]:
    """`path size mtime` of every file under `paths` (folders walked, symbolic links followed, each
    folder once), a folder's own mtime (entries added or removed), `missing` for what is not there;
    _TooManyFiles past REMEMBERED_FILES."""
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
                raise _TooManyFiles
            for name in names:
                visit(os.path.join(path, name))

    for path in paths:
        visit(os.path.abspath(path))
    return lines


def _memo(kind: str, key_parts: list[str], compute: Callable[[], T]) -> T:
    """`compute()`, or what it returned when the same key (with xlainspect's code) was last computed."""
    import pickle  # here: a run with the cache off needs none

    key = hashlib.blake2b("\n".join([*key_parts, _code_fingerprint()]).encode(), digest_size=20)
    entry = cache_dir() / kind / f"{key.hexdigest()}.pickle"
    try:
        return pickle.loads(entry.read_bytes())
    except Exception:  # missing, truncated or foreign: a miss
        pass
    result = compute()
    with contextlib.suppress(pickle.PicklingError, TypeError, AttributeError, RecursionError):
        write_cache_file(entry, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
    return result


@functools.cache
def _code_fingerprint() -> str:
    """A digest of what an answer is computed from besides its input: every source and data file of the
    installed xlainspect package (the chips' figures) and the grammar."""
    from xlainspect.hlo.grammar import grammar_text

    package = Path(__file__).parents[1]
    digest = hashlib.blake2b(grammar_text().encode(), digest_size=12)
    for source in sorted([*package.rglob("*.py"), *(package / "data").glob("*")]):
        digest.update(source.read_bytes())
    return digest.hexdigest()


def _parse(path: Path, text: str | None = None) -> list[Module]:
    """The grammar's parse of the file's `text`, read where not given (imported here: a cache hit never
    loads Lark)."""
    from xlainspect.dump.files import read_text
    from xlainspect.hlo.parser import parse_hlo

    return parse_hlo(read_text(path) if text is None else text, str(path))


def _content_digest(path: Path) -> str:
    """Digest of the file's bytes and the parser fingerprint; reuses the last one while size and mtime hold."""
    stat = path.stat()
    record = (
        cache_dir() / "files" / (hashlib.blake2b(str(path.resolve()).encode(), digest_size=16).hexdigest() + ".json")
    )
    try:
        known = json.loads(record.read_text())
        if (
            known["size"] == stat.st_size
            and known["mtime_ns"] == stat.st_mtime_ns
            and known["parser"] == _parser_fingerprint()
        ):
            return known["digest"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    content = hashlib.blake2b(path.read_bytes(), digest_size=20)
    content.update(_parser_fingerprint().encode())
    digest = content.hexdigest()
    write_cache_file(
        record,
        json.dumps(
            {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "parser": _parser_fingerprint(), "digest": digest}
        ).encode(),
    )
    return digest


@functools.cache
def _parser_fingerprint() -> str:
    """Changes whenever the parse of the same text could change: the grammar, the parser's code
    (xlainspect/hlo), the model format."""
    from xlainspect.hlo.grammar import grammar_text

    digest = hashlib.blake2b(grammar_text().encode(), digest_size=8)
    for source in sorted((Path(__file__).parents[1] / "hlo").glob("*.py")):
        digest.update(source.read_bytes())
    from xlainspect.dump.model_records import MODEL_FORMAT

    return f"{MODEL_FORMAT}-{digest.hexdigest()}"


def _load(entry: Path) -> list[Module] | None:
    from xlainspect.dump.model_records import module_of

    try:
        data = entry.read_bytes()
    except OSError:
        return None
    with kept_objects():  # the model lives as long as the run: later collections need not scan it again
        try:
            return [module_of(record) for record in marshal.loads(data)]
        except Exception:  # a truncated or foreign entry is a miss, never an error
            return None


def _store(entry: Path, modules: list[Module]) -> None:
    from xlainspect.dump.model_records import module_record

    try:
        data = marshal.dumps([module_record(m) for m in modules])
    except (ValueError, TypeError):
        return
    write_cache_file(entry, data)
