"""A table drawn as rich draws it, character for character, without rich's renderer.

Rich lays a table out through generic segments: ~0.15 s for the tables of a 20-module dump, most of
a command's time once the dump is read. This module reproduces the one layout `render.rich_table`
asks for (heavy head box, one space of padding, titles left, the first column never wrapped, the rest
folded, numbers right, on a colour terminal the header bold and the title italic) with rich's own
width arithmetic (`ratio_reduce`) and line breaking (`divide_line`), for plain text only. Anything
else (a legacy Windows or ASCII-only console; wide, zero-width or control characters; markup in a
title or header) returns None, and rich draws it.
tests/test_plain_table.py proves the two equal.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rich._ratio import ratio_reduce
from rich._wrap import divide_line
from rich.cells import get_character_cell_size

from xlainspect.report.document import Table, cell_text, is_numeric

#: The escape codes of rich's table styles: a header is bold, a title italic (any colour system).
_BOLD, _ITALIC, _END = "\x1b[1m", "\x1b[3m", "\x1b[0m"
#: What rich would read as markup or emoji in a title or header (`[bold]`, `:smile:`).
_MARKUP = re.compile(r"\[|:\S*:")


def draw(tab: Table, rows: Sequence[tuple], width: int, styled: bool = False) -> str | None:
    """The table as rich prints it at `width` columns (title included, each line ending in a newline;
    `styled`: with the escape codes rich writes on a colour terminal), or None where its text is not
    plain."""
    header = list(tab.columns)
    body = [[cell_text(v) for v in row] for row in rows]
    if not _plain([tab.title or "", *header], markup=True) or not all(_plain(row) for row in body):
        return None
    columns = list(zip(header, *body)) if header else []
    widths = _widths(columns, width - len(columns) - 1)
    if widths is None:
        return None
    right = [is_numeric(tab, index) for index in range(len(columns))]
    lines = _title(tab.title, sum(widths) + len(columns) + 1, styled)
    lines.append(_rule("┏", "━", "┳", "┓", widths))
    lines += _row(header, widths, right, header=True, styled=styled)
    lines.append(_rule("┡", "━", "╇", "┩", widths))
    for row in body:
        lines += _row(row, widths, right, header=False, styled=styled)
    lines.append(_rule("└", "─", "┴", "┘", widths))
    return "".join(line + "\n" for line in lines)


def _plain(texts: list[str], markup: bool = False) -> bool:
    """Every character printable and one cell wide (bars `█` too), so a string's length is its width."""
    return all(_one_cell(t) and not (markup and _MARKUP.search(t)) for t in texts)


def _one_cell(text: str) -> bool:
    if text.isascii():
        return text.isprintable()
    return text.isprintable() and all(get_character_cell_size(c) == 1 for c in text)


def _measure(text: str) -> tuple[int, int]:
    """Rich's Text measurement: the longest word, the whole line."""
    words = text.split()
    return (max(map(len, words)) if words else len(text)), len(text)


def _widths(columns: list[tuple[str, ...]], room: int) -> list[int] | None:
    """Each column's width with its padding, as rich's `Table._calculate_column_widths` makes them (no
    expand, no fixed widths); None where not even one cell per column fits."""
    if room < 1:
        return None
    widths = [_column_range(cells, room)[1] or 1 for cells in columns]
    if sum(widths) > room:
        widths = _collapse(widths, [index > 0 for index in range(len(widths))], room)
        if sum(widths) > room:
            widths = ratio_reduce(sum(widths) - room, [1] * len(widths), widths, widths)
        widths = [_column_range(cells, w)[1] for w, cells in zip(widths, columns)]
    return widths


def _column_range(cells: tuple[str, ...], room: int) -> tuple[int, int]:
    """Rich's `Table._measure_column` for padded text cells at most `room` wide."""
    if room < 1:
        return 0, 0
    ranges = [_cell_range(cell, room) for cell in cells]
    low, high = max(r[0] for r in ranges), max(r[1] for r in ranges)
    return min(low, room), min(high, room)


def _cell_range(text: str, room: int) -> tuple[int, int]:
    """`Measurement.get` of a cell padded one space each side (`Padding.__rich_measure__`, normalised)."""
    if room - 2 < 1:
        return room, room
    low, high = _measure(text)
    low, high = min(low, high), max(low, high)
    low, high = min(low, room), min(high, room)
    if high < 1:
        low, high = 0, 0
    low, high = min(low + 2, room), min(high + 2, room)
    low = min(max(0, low), high)
    return (0, 0) if high < 1 else (low, high)


def _collapse(widths: list[int], wrapable: list[bool], room: int) -> list[int]:
    """Rich's `Table._collapse_widths`: shrink the widest wrapable columns first."""
    excess = sum(widths) - room
    while sum(widths) and excess > 0 and any(wrapable):
        widest = max(w for w, wrap in zip(widths, wrapable) if wrap)
        second = max(w if wrap and w != widest else 0 for w, wrap in zip(widths, wrapable))
        ratios = [1 if (w == widest and wrap) else 0 for w, wrap in zip(widths, wrapable)]
        if not any(ratios) or not widest - second:
            break
        widths = ratio_reduce(excess, ratios, [min(excess, widest - second)] * len(widths), widths)
        excess = sum(widths) - room
    return widths


def _lines(text: str, width: int, right: bool, wrap: bool) -> list[str]:
    """Rich's `Text.wrap` of one line of text (fold overflow), justified to exactly `width`."""
    if wrap:
        offsets = divide_line(text, width, fold=True)
        pieces = [text[a:b] for a, b in zip([0, *offsets], [*offsets, len(text)])]
    else:
        pieces = [text]
    lines = []
    for piece in pieces:
        if len(piece) > width:  # Text.rstrip_end: trailing blanks past the width go first
            blanks = len(piece) - len(piece.rstrip())
            piece = piece[: len(piece) - min(blanks, len(piece) - width)]
        piece = piece.rstrip()[:width].rjust(width) if right else piece[:width].ljust(width)
        lines.append(piece)
    return lines


def _row(cells: list[str], widths: list[int], right: list[bool], header: bool, styled: bool) -> list[str]:
    """One table row, each cell wrapped in its column and padded to the row's height (a header sits at
    the bottom of its row, a body cell at the top); a styled header is bold, padding by padding as rich
    writes it."""
    bold = header and styled
    columns = []
    for index, (text, w, r) in enumerate(zip(cells, widths, right)):
        lines = [
            f"{_BOLD} {_END}{_BOLD}{line}{_END}{_BOLD} {_END}" if bold else f" {line} "
            for line in (_lines(text, w - 2, r, wrap=index > 0) if w > 2 else [])  # no room: no text
        ]
        columns.append(lines)
    height = max(map(len, columns), default=0)
    for index, (lines, w) in enumerate(zip(columns, widths)):
        blank = [f"{_BOLD}{' ' * w}{_END}" if bold and w else " " * w] * (height - len(lines))
        columns[index] = blank + lines if header else lines + blank
    if not height:  # no column had room for text: rich still draws the row as one blank line
        columns, height = [[" " * w] for w in widths], 1
    bar = "┃" if header else "│"
    return [bar + bar.join(column[line] for column in columns) + bar for line in range(height)]


def _rule(left: str, line: str, cross: str, end: str, widths: list[int]) -> str:
    return left + cross.join(line * w for w in widths) + end


def _title(title: str | None, width: int, styled: bool) -> list[str]:
    """The title wrapped to the table's width, each line padded to it (rich justifies it left), italic
    where styled."""
    lines = _lines(title, width, right=False, wrap=True) if title else []
    return [f"{_ITALIC}{line}{_END}" for line in lines] if styled else lines
