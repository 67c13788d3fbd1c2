"""What the parser needs that does not need Lark: the grammar's text and the decoder of a
TUPLE_SHAPE token. The parsed-model cache and the line fast path use them without paying for
Lark's import."""

from __future__ import annotations

import functools
import importlib.resources
from pathlib import Path

from xlainspect.errors import HloParseError, error_at
from xlainspect.shape import Shape, array_shape, tuple_shape

_CHECKOUT_GRAMMAR = Path(__file__).resolve().parents[2] / "grammars" / "hlo.lark"


@functools.cache
def grammar_text() -> str:
    """The grammar: package data in an installed wheel, `grammars/hlo.lark` in a checkout."""
    packaged = importlib.resources.files("xlainspect") / "grammars" / "hlo.lark"
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return _CHECKOUT_GRAMMAR.read_text(encoding="utf-8")


@functools.lru_cache(maxsize=16384)
def decode_tuple_shape(text: str) -> Shape:
    """Decode a TUPLE_SHAPE token, `(f32[], /*index=1*/(s32[2]{0}))`; errors point into `text`."""
    elements = []
    depth, start = 0, 1
    for position in range(1, len(text)):
        char = text[position]
        if char in "([{":
            depth += 1
        elif char in ")]}" and depth:
            depth -= 1
        elif depth == 0 and char in ",)":
            element = text[start:position]
            if element.strip():
                elements.append(_tuple_element(text, start, element))
            start = position + 1
    return tuple_shape(tuple(elements))


def _tuple_element(text: str, offset: int, element: str) -> Shape:
    body = element.lstrip(" ")
    if body.startswith("/*"):
        body = body[body.index("*/") + 2 :].lstrip(" ")
    at = offset + len(element) - len(body)
    try:
        return decode_tuple_shape(body) if body.startswith("(") else array_shape(body)
    except HloParseError as error:
        raise error_at(text, at + error.column - 1, error.message) from None
