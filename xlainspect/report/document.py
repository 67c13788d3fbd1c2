"""What a command shows, in one type, and its text forms: JSON, CSV, Markdown and plain text (the CLI
draws tables with rich on a terminal).

Every command's answer becomes a `Document`: the JSON document (built from the typed report, so
numbers keep their types), the blocks people read (tables, headings, lines) in order, and the one
table CSV writes. `emit` in the CLI is the only place a document is written out; the HTML report
reuses `Table`, `cell_text` and `markdown_table`. Stdlib only.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast


@dataclass(slots=True)
class Table:
    """Rows under named columns (a row is a tuple in column order); `note` says what was left out."""

    title: str | None
    columns: tuple[str, ...]
    rows: tuple[tuple[object, ...], ...]
    note: str = ""
    right: tuple[str, ...] = ()
    """Columns aligned right although they hold text (signed deltas, percents); numbers always are."""


@dataclass(slots=True)
class Heading:
    """A rule with a name over the blocks that follow (a function of `diff`)."""

    text: str


@dataclass(slots=True)
class Lines:
    """Text printed as it is (a decoded layout, a note under a table)."""

    text: str


@dataclass(slots=True)
class Entry:
    """A row as a paragraph, for terminals too narrow for its table: a heading line, then labelled
    texts wrapped under it."""

    head: str
    fields: tuple[tuple[str, str], ...]


Block = Table | Heading | Lines | Entry


@dataclass
class Document:
    """A command's answer: `data` for JSON, `blocks` for the terminal, `markdown` where Markdown shows
    more than the terminal's narrow tables (None: the same blocks), `csv` the rows CSV writes (every
    column), `notes` for stderr, and whether a CI gate failed (exit 1) or could not decide (exit 2: an
    input it needs did not parse, so neither a pass nor a failure is true)."""

    data: object
    blocks: list[Block]
    csv: Table | None = None
    markdown: list[Block] | None = None
    narrow: list[Block] | None = None
    """What a terminal narrower than `NARROW` columns shows instead of `blocks` (None: the same)."""
    notes: list[str] = field(default_factory=list[str])
    gate_failed: bool = False
    gate_undecided: bool = False


DRAWN_ROWS = 25
"""Rows of one table drawn for people (a terminal, a notebook): rich lays out ~1,000 cells in 0.1 s, and a
screen shows a few dozen rows; CSV, JSON, Markdown and DataFrames keep every row."""


NARROW = 120
"""Columns under which a wide table's text columns would be a few characters wide (a pipe is 80)."""


def table(title: str | None, records: Iterable[object], columns: Sequence[str], note: str = "") -> Table:
    """A table of dicts or dataclass instances, cut to `columns`."""
    return Table(title, tuple(columns), tuple(tuple(_get(r, c) for c in columns) for r in records), note)


@functools.cache
def fields(row_type: type) -> tuple[str, ...]:
    """A dataclass's field names, in order: the columns of its rows."""
    return tuple(f.name for f in dataclasses.fields(row_type))


def records(rows: Iterable[object]) -> list[dict[str, Any]]:
    """Dataclass rows as JSON-ready dicts (nested dataclasses become dicts)."""
    return [record(r) for r in rows]


def record(value: object) -> Any:
    """`dataclasses.asdict` for JSON: dataclasses become dicts, lists, tuples and dicts are walked, other
    values are kept as they are (asdict deep-copies each, ten times the cost on a dump's rows). Any: a
    JSON value, whatever its shape."""
    kind = type(value)
    if hasattr(kind, "__dataclass_fields__"):
        return {name: record(getattr(value, name)) for name in fields(kind)}
    if kind is list or kind is tuple:
        walked = [record(v) for v in cast("Iterable[object]", value)]
        return walked if kind is list else tuple(walked)
    if kind is dict:
        return {k: record(v) for k, v in cast("dict[object, object]", value).items()}
    return value


def _get(record: object, column: str) -> object:
    return cast("dict[str, object]", record).get(column) if isinstance(record, dict) else getattr(record, column)


def to_json(document: Document) -> str:
    return json.dumps(document.data, indent=2, default=str) + "\n"


def to_csv(document: Document) -> str:
    """The document's CSV table, every column; integers stay integers, sequences are joined."""
    out = io.StringIO()
    if document.csv is not None:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(document.csv.columns)
        writer.writerows([_csv_cell(v) for v in row] for row in document.csv.rows)
    return out.getvalue()


def _csv_cell(value: object) -> object:
    if isinstance(value, (Mapping, list, tuple)):
        return cell_text(cast(object, value))  # joined as a table's cell is
    return value


def to_markdown(document: Document) -> str:
    parts: list[str] = []
    for block in document.markdown if document.markdown is not None else document.blocks:
        if isinstance(block, Table):
            parts.append(markdown_table(block))
        elif isinstance(block, Heading):
            parts.append(f"### {block.text}")
        elif isinstance(block, Lines):
            parts.append(block.text)
        else:
            parts.append(entry_text(block, NARROW))
    return "\n\n".join(part.rstrip("\n") for part in parts) + "\n"


def markdown_table(tab: Table) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = [f"**{tab.title}**", ""] if tab.title else []
    lines.append("| " + " | ".join(tab.columns) + " |")
    lines.append("|" + "|".join("---:" if is_numeric(tab, i) else "---" for i in range(len(tab.columns))) + "|")
    lines += ["| " + " | ".join(cell_text(v).replace("|", "\\|") for v in row) + " |" for row in tab.rows]
    if tab.note:
        lines += ["", tab.note]
    return "\n".join(lines) + "\n"


def to_text(document: Document, width: int) -> str:
    """The document as plain text, for a pipe or a file: tables in aligned columns, one line a row and
    every row (`grep` finds a row whole, `cut`/`awk` its columns), no box drawing or escape codes;
    a `narrow` document's paragraphs wrapped at `width`."""
    parts: list[str] = []
    blocks = document.narrow if document.narrow is not None and width < NARROW else document.blocks
    for index, block in enumerate(blocks):
        if isinstance(block, Table):
            if index and isinstance(blocks[index - 1], Table):
                parts.append("")
            parts.append(plain_table(block))
        elif isinstance(block, Heading):
            parts.append(f"== {block.text} ==")
        elif isinstance(block, Entry):
            parts.append(entry_text(block, width))
        else:
            parts.append(block.text)
    return "".join(part.rstrip("\n") + "\n" for part in parts)


def plain_table(tab: Table) -> str:
    """Columns two spaces apart, numbers aligned right, a rule of dashes under the header."""
    cells: list[Sequence[str]] = [tab.columns, *([cell_text(v).replace("\n", " ") for v in row] for row in tab.rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(tab.columns))]
    right = [is_numeric(tab, i) for i in range(len(tab.columns))]

    def line(row: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, widths, right)).rstrip()

    lines = [tab.title] if tab.title else []
    lines += [line(tab.columns), line(["-" * w for w in widths]), *map(line, cells[1:])]
    if tab.note:
        lines.append(tab.note)
    return "\n".join(lines) + "\n"


def entry_text(entry: Entry, width: int) -> str:
    """An `Entry`: its head line, then each field wrapped at `width` under a two-space indent."""
    import textwrap

    lines = [entry.head]
    for label, text in entry.fields:
        lines += textwrap.wrap(f"{label}: {text}", width, initial_indent="  ", subsequent_indent="    ")
    return "\n".join(lines)


def is_numeric(tab: Table, index: int) -> bool:
    """Whether a column holds numbers only, or is marked `right`: aligned right in tables."""
    if tab.columns[index] in tab.right:
        return True
    values = [row[index] for row in tab.rows if row[index] is not None]
    return bool(values) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def cell_text(value: object) -> str:
    """A value as people read it in a table: thousands separated, two decimals, sequences joined."""
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, Mapping):
        return " ".join(f"{k}:{n}" for k, n in cast("Mapping[object, object]", value).items())
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, cast("Sequence[object]", value)))
    return "" if value is None else str(value)
