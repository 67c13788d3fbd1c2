"""Output: rich tables for people; JSON, CSV and Markdown for machines and pull requests.

`emit` is the one way a command's `Document` reaches stdout. Tables are drawn with rich on a terminal
only: piped or redirected, a document is plain text (`document.to_text`), one line a row, which `grep`
and `awk` read and which needs no rich at all. Two consoles, built lazily so tests can replace them:
data goes to stdout, everything else (progress, notes, errors) to stderr, so
`xlainspect ... --format json | jq` always works.
"""

from __future__ import annotations

import enum
import functools
import os
import re
import shutil
import sys
from typing import TYPE_CHECKING, Literal

from xlainspect.report.document import (
    DRAWN_ROWS,
    NARROW,
    Document,
    Heading,
    Lines,
    Table,
    cell_text,
    entry_text,
    is_numeric,
    to_csv,
    to_json,
    to_text,
)
from xlainspect.report.document import to_markdown as _to_markdown

if TYPE_CHECKING:  # rich is imported where a table is drawn: `--help` and JSON output skip it
    from rich.console import Console
    from rich.table import Table as RichTable


class OutputFormat(str, enum.Enum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"


def _color_system() -> Literal["auto"] | None:
    """NO_COLOR (no-color.org) means no escape codes at all; rich alone would still print bold and italic."""
    return None if os.environ.get("NO_COLOR") else "auto"


@functools.cache
def stdout_console() -> Console:
    from rich.console import Console

    return Console(soft_wrap=False, color_system=_color_system())


@functools.cache
def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True, color_system=_color_system())


def note(text: str) -> None:
    """One line on stderr, never read as rich markup. Printable text without `:name:` (which rich reads as
    an emoji code) is written as it is, as rich would write it: importing rich for a line costs ~25 ms."""
    if all(line.isprintable() for line in text.split("\n")) and not _EMOJI_CODE.search(text):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    else:
        stderr_console().print(text, markup=False, highlight=False)


_EMOJI_CODE = re.compile(r":\S*?:")


def emit(document: Document, fmt: OutputFormat) -> None:
    """The document in the chosen format on stdout, then its notes on stderr."""
    if fmt is OutputFormat.json:
        sys.stdout.write(to_json(document))
    elif fmt is OutputFormat.csv:
        sys.stdout.write(to_csv(document))
    elif fmt is OutputFormat.markdown:
        sys.stdout.write(_to_markdown(document))
    elif sys.stdout.isatty():
        _draw(document)
    else:  # COLUMNS, else 80, as rich would read a pipe's width
        sys.stdout.write(to_text(document, shutil.get_terminal_size().columns))
    for line in document.notes:
        note(line)


def _draw(document: Document) -> None:
    console = stdout_console()
    blocks = document.narrow if document.narrow is not None and console.width < NARROW else document.blocks
    for index, block in enumerate(blocks):
        if isinstance(block, Table):
            if index and isinstance(blocks[index - 1], Table):
                console.print()
            console.print(rich_table(block))
            for line in (block.note, _rows_left_out(block)):
                if line:
                    console.print(line, markup=False, highlight=False)
        elif isinstance(block, Heading):
            from rich.text import Text

            console.rule(Text(block.text), align="left")
        elif isinstance(block, Lines):
            console.print(block.text, markup=False, highlight=False, soft_wrap=True)
        else:  # an Entry
            console.print(entry_text(block, console.width), markup=False, highlight=False, soft_wrap=True)


def rich_table(tab: Table) -> RichTable:
    from rich.table import Table as RichTable
    from rich.text import Text

    drawn = RichTable(title=tab.title, title_justify="left", show_lines=False)
    for index, column in enumerate(tab.columns):
        # The first column names the row (function, module): keep it whole on narrow terminals.
        drawn.add_column(
            column, justify="right" if is_numeric(tab, index) else "left", overflow="fold", no_wrap=not index
        )
    for row in tab.rows[:DRAWN_ROWS]:
        drawn.add_row(*(Text(cell_text(v)) for v in row))  # Text(): HLO is never rich markup
    return drawn


def _rows_left_out(tab: Table) -> str:
    left_out = len(tab.rows) - DRAWN_ROWS
    return f"... {left_out:,} more rows: piped or --format csv|json|markdown prints all" if left_out > 0 else ""
