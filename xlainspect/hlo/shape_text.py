"""`parse_shape`: one shape typed by a person, e.g. `bf16[3,5]{1,0:T(8,128)(2,1)}` or `bf16[3,5]<1,0>`.

User input gets two conveniences and one extra check that dumps do not: `<...>` is accepted for the
layout braces (shell-friendly), element type words may be upper case (`F32[...]` as XLA's docs write
them), and a first tile with more dimensions than the array is rejected as a likely typo (XLA's size
function would silently count the missing dimensions as 1, and dumps are never rejected for it).
"""

from __future__ import annotations

import re

from xlainspect.errors import error_at
from xlainspect.hlo.parser import decode_shape
from xlainspect.hlo.shape import Shape

_ANGLE_LAYOUT = re.compile(r"\]<([^<>]*)>")
_UPPER_TYPE = re.compile(r"(?<![A-Za-z0-9_])([A-Z][A-Z0-9]*)(?=\[)")


def parse_shape(text: str) -> Shape:
    """Parse a shape with layout as XLA prints it; `.logical_bytes`, `.padded_bytes` give its cost.

    Raises HloParseError (column and caret into `text`) for anything XLA's parser would reject.

    >>> parse_shape("bf16[3,5]<1,0:T(8,128)(2,1)>").padded_bytes
    2048
    """
    normalized = _normalize(text)
    if normalized.startswith("{"):
        raise error_at(
            normalized,
            0,
            "a layout alone is not a shape: put the element type and dimensions first, e.g. f32[3,5]{1,0}",
        )
    _check_braces(normalized)
    shape = decode_shape(normalized)
    for leaf in shape.leaves():
        layout = leaf.layout
        if leaf.dims and layout is not None and layout.tiles and len(layout.tiles[0].dims) > leaf.rank:
            at = normalized.find("T(", normalized.find(f"{leaf.dtype}["))
            raise error_at(normalized, at, f"tile {layout.tiles[0]} has more dimensions than the shape ({leaf.rank})")
    return shape


def _normalize(text: str) -> str:
    """`]<...>` -> `]{...}` (innermost first, for nested `P(...)`), upper-case type words lowered."""
    text = text.strip()
    while True:
        replaced = _ANGLE_LAYOUT.sub(r"]{\1}", text)
        if replaced == text:
            break
        text = replaced
    return _UPPER_TYPE.sub(lambda m: m.group(1).lower(), text)


def _check_braces(text: str) -> None:
    """Name an unclosed `{` or `(` directly; the grammar would only say the layout is unexpected."""
    stack: list[int] = []
    for i, char in enumerate(text):
        if char in "{(":
            stack.append(i)
        elif char in "})":
            if not stack or "{(".index(text[stack[-1]]) != "})".index(char):
                raise error_at(text, i, f"unbalanced {char!r}")
            stack.pop()
    if stack:
        opener = text[stack[-1]]
        raise error_at(
            text,
            len(text),
            f"{opener!r} at column {stack[-1] + 1} is never closed: add {'}' if opener == '{' else ')'!r}",
        )
