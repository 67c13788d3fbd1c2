"""The grammar's text, which the parsed-model cache fingerprints without paying for Lark's import."""

from __future__ import annotations

import functools
from pathlib import Path

_PACKAGED_GRAMMAR = Path(__file__).resolve().parents[1] / "grammars" / "hlo.lark"
_CHECKOUT_GRAMMAR = Path(__file__).resolve().parents[2] / "grammars" / "hlo.lark"


@functools.cache
def grammar_text() -> str:
    """The grammar: package data in an installed wheel, `grammars/hlo.lark` in a checkout. Read as a
    file beside the package (a wheel installs as files): importlib.resources would import zipfile and
    its readers at every start (~3 ms)."""
    path = _PACKAGED_GRAMMAR if _PACKAGED_GRAMMAR.is_file() else _CHECKOUT_GRAMMAR
    return path.read_text(encoding="utf-8")
