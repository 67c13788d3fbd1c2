"""Typed analysis rows -> pandas DataFrames (the only module that imports pandas) or JSON records.

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
