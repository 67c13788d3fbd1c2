"""The grammar's text, and where the tables derived from it are kept between runs.

The text is read without Lark (the parsed-model cache fingerprints it, and the speed layer needs
only the terminals saved from an earlier run). What the grammar derives (Lark's LALR tables, the
terminals' regexes) depends on that text and on Lark's version alone: it is the same in every parse
of the process, so the caller that owns a cache lends it once (`keep_tables`) rather than to each
parse. `hlo` imports no cache: the caller's object need only do what `TableCache` says.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Protocol

_PACKAGED_GRAMMAR = Path(__file__).resolve().parents[1] / "grammars" / "hlo.lark"
_CHECKOUT_GRAMMAR = Path(__file__).resolve().parents[2] / "grammars" / "hlo.lark"


def grammar_path() -> Path:
    """The grammar: package data in an installed wheel, `grammars/hlo.lark` in a checkout. Read as a
    file beside the package (a wheel installs as files): importlib.resources would import zipfile and
    its readers at every start (~3 ms)."""
    return _PACKAGED_GRAMMAR if _PACKAGED_GRAMMAR.is_file() else _CHECKOUT_GRAMMAR


@functools.cache
def grammar_text() -> str:
    return grammar_path().read_text(encoding="utf-8")


class TableCache(Protocol):
    """Where the grammar's derived tables may be read and saved (`xlainspect.cache.Cache` is one). The
    caller names each table file by a digest of what it is derived from (the grammar text, Lark's
    version, the start symbol), so a saved file is never stale."""

    def table_file(self, name: str) -> Path | None:
        """The file `name` is kept in, where it may be read (it exists) or written; else None."""
        ...

    def write_table(self, name: str, data: bytes) -> None:
        """Save `data` as `name` (atomically), where the cache may be written; else nothing."""
        ...


_kept: TableCache | None = None
"""The process's one setting in `hlo`, read when a table is first built (never during a parse)."""


def keep_tables(cache: TableCache | None) -> None:
    """Read and save the grammar's tables in `cache` from now on (None: build them in memory, the
    library's default). Tables built already stay as they are: they are the same wherever they come from."""
    global _kept
    _kept = cache


def table_cache() -> TableCache | None:
    """The cache lent by `keep_tables`, if any."""
    return _kept
