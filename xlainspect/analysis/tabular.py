"""Results as tables in a notebook: `to_pandas()` and `_repr_html_()` on every command's result.

A result is data; its tables are the report layer's (the JSON document and the tables each command
writes, `xlainspect.report.views`). `Tabular` reaches them at call time through the registry of views
in `xlainspect.report.notebook`, imported by name there and then: no analysis imports the report layer
at module level, so the tables' columns are defined once (the JSON's), and `import xlainspect` and the
CLI load neither the registry nor pandas.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping, Sized
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    import pandas  # pyright: ignore[reportMissingTypeStubs]

NOTEBOOK = "xlainspect.report.notebook"
"""The report layer's registry of views (one per result type), imported when a result is shown."""


class _Views(Protocol):
    def frame(self, result: object, table: str | None) -> pandas.DataFrame: ...

    def html_of(self, result: object) -> str: ...


def _views() -> _Views:
    return cast("_Views", importlib.import_module(NOTEBOOK))


class Tabular:
    """A result shown as its command's tables: `to_pandas()` (the main table), `to_pandas("name")` (the
    others), a notebook's HTML (what the CLI draws), and a one-line `repr` (a report's rows are many)."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__repr__" not in cls.__dict__:  # @dataclass keeps a __repr__ the class itself has
            setattr(cls, "__repr__", Tabular.__repr__)  # noqa: B010 (pyright: a method is not assigned to)

    def to_pandas(self, table: str | None = None) -> pandas.DataFrame:
        """The result's main table as a pandas DataFrame (or the table named `table`): the columns and
        values of its command's JSON, numbers as numbers. Needs pandas: pip install 'xlainspect[pandas]'."""
        return _views().frame(self, table)

    def _repr_html_(self) -> str:
        """What Jupyter shows: the tables the CLI prints (their first rows and a count), and for a
        profile or a cost report the chart its HTML page draws."""
        return _views().html_of(self)

    def __repr__(self) -> str:
        """`CostReport(modules=<2>, skipped=<0>)`: sizes of collections, short values as they are."""
        if not dataclasses.is_dataclass(self):  # a list of rows (CacheMisses)
            return f"{type(self).__name__}({_short(self)})"
        shown = [f"{f.name}={_short(getattr(self, f.name))}" for f in dataclasses.fields(self) if f.repr]
        return f"{type(self).__name__}({', '.join(shown)})"


SHORT = 60
"""Characters of a value's repr shown whole in a result's repr."""


def _short(value: object) -> str:
    if isinstance(value, (str, int, float, PurePath)) or value is None:
        text = repr(str(value) if isinstance(value, PurePath) else value)
        return text if len(text) <= SHORT else text[: SHORT - 4] + "...'"
    if isinstance(value, (list, tuple, Mapping)):
        return f"<{len(cast(Sized, value))}>"
    return f"<{type(value).__name__}>"
