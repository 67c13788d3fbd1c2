"""The dump layer's uses of xlainspect's cache (`xlainspect.cache`, which holds the key policy and
the measured behaviours): parsed models of a file, an analysis of files, a command's whole answer.

Each names what its answer is computed from, and the cache finds it by nothing else:

- `parse_file`: the parser's code (xlainspect/hlo and the grammar) and the text's digest: a change
  to an analysis keeps every parsed model;
- `cached_result`: xlainspect's code (every source and data file), the files' digests and names, the
  analysis and its arguments;
- a command's whole answer (`analysis.commands.remembered`): xlainspect's code, the path, size and mtime
  of every file under the command's inputs (`cache.listing`), its arguments and which optional packages
  it may import: a warm re-run lists and stats the inputs, nothing more.

Each lends the cache to the grammar too (`hlo.grammar.keep_tables`), so its tables are saved once.
"""

from __future__ import annotations

import functools
import marshal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from xlainspect.cache import Cache, Codec, Key, fingerprint
from xlainspect.dump.files import read_text
from xlainspect.dump.storage import local
from xlainspect.hlo.grammar import grammar_path, keep_tables
from xlainspect.hlo.model import Module
from xlainspect.hlo.parser import parse_hlo
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
    (HloParseError, DumpError); a bad file is never cached. A URL's object (a module of a dump only
    listed, `directory.listed_dump`) is fetched alone and parsed from its mirror (`storage.local`).
    """
    path = local(path)
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
        digests = tuple(f"{cache.digest(p)}\n{p.name}" for p in paths_of(path))
    except OSError:
        return compute()
    return cache.answer("results", Key(code_fingerprint(), digests, analysis), compute)


def paths_of(value: str | Path | Sequence[str | Path] | None) -> list[Path]:
    """An argument naming files (one, several, or None) as the paths it names."""
    if value is None:
        return []
    return [Path(value)] if isinstance(value, (str, Path)) else [Path(v) for v in value]


@functools.cache
def code_fingerprint() -> str:
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
