"""Output: rich tables for people; JSON, CSV and Markdown for machines and pull requests.

Two consoles, built lazily so tests can replace them: data goes to stdout, everything else
(progress, notes, errors) to stderr, so `xlainspect ... --format json | jq` always works.
"""

from __future__ import annotations

import csv
import enum
import functools
import json
import os
import sys
from typing import TYPE_CHECKING

from xlainspect.report.table import cell_text, is_numeric, markdown_table

if TYPE_CHECKING:  # pandas and rich are imported where a table is drawn: `--help` and JSON output skip them
    import pandas as pd
    from rich.console import Console
    from rich.table import Table


class OutputFormat(str, enum.Enum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"


def _color_system() -> str | None:
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


def emit_json(document: object) -> None:
    """Pretty JSON on stdout (plain print: rich would re-wrap or colour it)."""
    sys.stdout.write(json.dumps(document, indent=2, default=str) + "\n")


def emit_frame(frame: pd.DataFrame, fmt: OutputFormat, title: str | None = None) -> None:
    """A pandas table in the chosen format; JSON here is a list of records."""
    if fmt is OutputFormat.json:
        emit_json(json.loads(frame.to_json(orient="records")))
    elif fmt is OutputFormat.csv:
        sys.stdout.write(frame.to_csv(index=False))
    else:
        emit_rows(frame.to_dict("records"), [str(c) for c in frame.columns], fmt, title)


def emit_rows(records: list[dict], columns: list[str], fmt: OutputFormat, title: str | None = None) -> None:
    """Rows (dicts) as a table in the chosen format, without pandas: the hot commands (count-recompiles)
    skip its import, a quarter of a second."""
    if fmt is OutputFormat.json:
        emit_json([{c: r.get(c) for c in columns} for r in records])
    elif fmt is OutputFormat.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([_csv_cell(r.get(c)) for c in columns] for r in records)
    elif fmt is OutputFormat.markdown:
        sys.stdout.write(markdown_table(records, columns, title) + "\n")
    else:
        stdout_console().print(rich_table(records, columns, title))


def rich_table(records: list[dict], columns: list[str], title: str | None = None) -> Table:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, title_justify="left", show_lines=False)
    for index, column in enumerate(columns):
        # The first column names the row (function, module): keep it whole on narrow terminals.
        table.add_column(
            column, justify="right" if is_numeric(records, column) else "left", overflow="fold", no_wrap=index == 0
        )
    for record in records:
        table.add_row(*(Text(cell_text(record.get(c))) for c in columns))  # Text(): HLO is never rich markup
    return table


def _csv_cell(value: object) -> object:
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else value
