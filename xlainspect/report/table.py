"""Typed analysis rows -> pandas DataFrames (the only module that imports pandas), JSON records or Markdown.

pandas is imported inside `to_frame`: JSON output never needs it, and its import is a quarter of a
second, as long as a warm re-analysis takes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


def to_frame(rows: Sequence[object], row_type: type) -> pd.DataFrame:
    """One column per dataclass field, in field order; the columns exist even with no rows."""
    import pandas as pd

    columns = [f.name for f in dataclasses.fields(row_type)]
    return pd.DataFrame([dataclasses.astuple(r) for r in rows], columns=columns)


def to_records(rows: Sequence[object]) -> list[dict]:
    """Rows as JSON-ready dicts (nested dataclasses become dicts, tuples lists)."""
    return [dataclasses.asdict(r) for r in rows]


def markdown_table(records: list[dict], columns: list[str], title: str | None = None) -> str:
    """A GitHub-flavoured Markdown table (pandas' own needs the optional tabulate package)."""
    lines = [f"**{title}**", ""] if title else []
    lines.append("| " + " | ".join(columns) + " |")
    lines.append("|" + "|".join("---:" if is_numeric(records, c) else "---" for c in columns) + "|")
    for record in records:
        lines.append("| " + " | ".join(cell_text(record.get(c)).replace("|", "\\|") for c in columns) + " |")
    return "\n".join(lines)


def is_numeric(records: list[dict], column: str) -> bool:
    """Whether a column holds numbers only (right-aligned in tables)."""
    values = [r.get(column) for r in records if r.get(column) is not None]
    return bool(values) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def cell_text(value: object) -> str:
    """A value as people read it in a table: thousands separated, two decimals, sequences joined."""
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return "" if value is None else str(value)
