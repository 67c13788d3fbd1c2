"""The grammar's text, which the parsed-model cache fingerprints without paying for Lark's import."""

from __future__ import annotations

import functools
import importlib.resources
from pathlib import Path

_CHECKOUT_GRAMMAR = Path(__file__).resolve().parents[2] / "grammars" / "hlo.lark"


@functools.cache
def grammar_text() -> str:
    """The grammar: package data in an installed wheel, `grammars/hlo.lark` in a checkout."""
    packaged = importlib.resources.files("xlainspect") / "grammars" / "hlo.lark"
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return _CHECKOUT_GRAMMAR.read_text(encoding="utf-8")
