"""Typed analysis rows -> pandas DataFrames (the only module that imports pandas)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pandas as pd


def to_frame(rows: Sequence[object], row_type: type) -> pd.DataFrame:
    """One column per dataclass field, in field order; the columns exist even with no rows."""
    columns = [f.name for f in dataclasses.fields(row_type)]
    return pd.DataFrame([dataclasses.astuple(r) for r in rows], columns=columns)


def to_records(rows: Sequence[object]) -> list[dict]:
    """Rows as JSON-ready dicts (nested dataclasses become dicts, tuples lists)."""
    return [dataclasses.asdict(r) for r in rows]
