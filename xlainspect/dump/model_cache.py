"""The dump layer's uses of xlainspect's cache (`xlainspect.cache`, which holds the key policy and
the measured behaviours): parsed models of a file, an analysis of files, a command's whole answer.

Each names what its answer is computed from, and the cache finds it by nothing else:

- `parse_file`: the parser's code (xlainspect/hlo and the grammar) and the text's digest: a change
  to an analysis keeps every parsed model;
- `cached_result`: xlainspect's code (every source and data file), the files' digests and names, the
  analysis and its arguments;
- `remembered`: xlainspect's code, the path, size and mtime of every file under the command's inputs
  (`cache.listing`), its arguments and which optional packages it may import: a warm re-run lists
  and stats the inputs, nothing more.

Each lends the cache to the grammar too (`hlo.grammar.keep_tables`), so its tables are saved once.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import marshal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from xlainspect.cache import Cache, Codec, Key, TooManyFiles, fingerprint, listing
from xlainspect.dump.files import read_text
from xlainspect.dump.storage import is_url, local
from xlainspect.hlo.grammar import grammar_path, keep_tables
from xlainspect.hlo.model import Module
from xlainspect.hlo.parser import parse_hlo
from xlainspect.progress import silent
from xlainspect.settings import kept_objects
from xlainspect.workers import OWNED

T = TypeVar("T")

_PACKAGE = Path(__file__).parents[1]


def open_cache(enabled: bool | None = None) -> Cache:
    """The cache the settings name, lent to the grammar for its tables; on or off as the settings say,
    or as `enabled` says for this call's answer (the tables follow the settings)."""
    cache = Cache.configured()
    keep_tables(cache)
    return cache if enabled is None else Cache(cache.directory, enabled=enabled)


def parse_file(path: str | Path, *, use_cache: bool | None = None, text: str | None = None) -> list[Module]:
    """`parse_hlo(read_text(path), str(path))`, answered from the cache when the file is unchanged,
    in the processes the settings lend (`workers.OWNED`).

    `use_cache=None` follows the settings (`--no-cache`); `text` is the file's text where the caller
    read it already (it is not read again to be parsed). Raises what parse_hlo and read_text raise
    (HloParseError, DumpError); a bad file is never cached.
    """
    path = Path(path)
    cache = open_cache(use_cache)
    try:
        digest = cache.digest(path) if cache.enabled else None
    except OSError:  # missing or unreadable: read_text names the problem
        digest = None
    if digest is None:
        return _parse(path, text)
    modules = cache.answer("models", Key(_parser_fingerprint(), (digest,), ""), lambda: _parse(path, text), _MODELS)
    for module in modules:  # the same text may sit at several paths
        module.path = str(path)
    return modules


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
    cache = open_cache(use_cache)
    if not cache.enabled:
        return compute()
    try:
        digests = tuple(f"{cache.digest(p)}\n{p.name}" for p in _input_paths(path))
    except OSError:
        return compute()
    return cache.answer("results", Key(_code_fingerprint(), digests, analysis), compute)


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
            cache = open_cache()
            if not cache.enabled:
                return function(*args, **kwargs)
            arguments = {name: value for name, value in bound.arguments.items() if name != "progress"}
            try:
                files = listing(p for name in inputs for p in _input_paths(arguments[name]))
            except (OSError, TooManyFiles):
                return function(*args, **kwargs)
            call_text = f"{function.__module__}.{function.__qualname__}{arguments!r} {_importable(uses)}"
            key = Key(_code_fingerprint(), tuple(files), call_text)
            return cache.answer("commands", key, lambda: function(*args, **kwargs))

        return call

    return wrap


def _read_urls(arguments: dict[str, Any], inputs: tuple[str, ...]) -> None:
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


@functools.cache
def _code_fingerprint() -> str:
    """What an answer is computed from besides its inputs: every source and data file of the installed
    xlainspect package (the chips' figures) and the grammar."""
    return fingerprint([grammar_path(), *sorted([*_PACKAGE.rglob("*.py"), *(_PACKAGE / "data").glob("*")])])


@functools.cache
def _parser_fingerprint() -> str:
    """What a parse of the same text is computed from: the grammar and xlainspect/hlo (the parser and
    the model with its record format)."""
    return fingerprint([grammar_path(), *sorted((_PACKAGE / "hlo").glob("*.py"))])


def _parse(path: Path, text: str | None = None) -> list[Module]:
    """The grammar's parse of the file's `text`, read where not given."""
    return parse_hlo(read_text(path) if text is None else text, str(path), runner=OWNED)


def _load_models(data: bytes) -> list[Module]:
    with kept_objects():  # the model lives as long as the run: later collections need not scan it again
        return [Module.from_record(record) for record in marshal.loads(data)]


_MODELS = Codec("model", lambda modules: marshal.dumps([m.to_record() for m in modules]), _load_models, (ValueError,))
"""Parsed modules as their records (`Module.to_record`), written with marshal (a ValueError: a record
too deep for it)."""
