"""A result in a notebook: its command's JSON tables as pandas DataFrames, its CLI tables as HTML.

The registry of views (`VIEWS`): for each result type, the function that makes its command's
`Document` and the name of its main table. `xlainspect.analysis.tabular.Tabular`, the base of every
result, imports this module by name when a result is shown or turned into a DataFrame, so the analyses
never import the report layer, and the DataFrame's columns are the JSON's, defined once in the views.

A document's tables are the lists in its JSON: `data` itself where it is a list (named by the view's
`main`), else each key of `data` whose value is a list (rows of dicts; a list of values is a table of
one column named by its key). The main table is the one CSV writes. pandas is imported in `frame` only.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from xlainspect.analysis.commands.cache import CacheMisses, CacheReport
from xlainspect.analysis.commands.compiles import CaptureReport, ModulesReport, RecompileReport
from xlainspect.analysis.commands.cost import CostReport
from xlainspect.analysis.commands.diff import DiffReport, ProfileDiff
from xlainspect.analysis.commands.graph import (
    CollectivesReport,
    CopiesReport,
    FusionsReport,
    Neighbourhood,
    OpsReport,
)
from xlainspect.analysis.commands.layouts import ArrayLayouts, LayoutsReport
from xlainspect.analysis.commands.memory import MemoryReport
from xlainspect.analysis.commands.parse import ParseReport
from xlainspect.analysis.commands.report import DumpFacts
from xlainspect.analysis.doctor import DumpHealth
from xlainspect.analysis.profile import ProfileReport
from xlainspect.errors import UsageError, literal
from xlainspect.report.cost_html import ROOFLINE_STYLE, module_roofline
from xlainspect.report.document import DRAWN_ROWS, Document, Heading, Lines, Table, to_json
from xlainspect.report.dump_report import DumpReport
from xlainspect.report.graph_text import neighbourhood_document
from xlainspect.report.page import table_html
from xlainspect.report.profile_html import TIMELINE_STYLE, typical_step
from xlainspect.report.views.cache import cache_document, cache_misses_document
from xlainspect.report.views.compiles import capture_notes, modules_document, recompiles_document
from xlainspect.report.views.cost import cost_document
from xlainspect.report.views.diff import diff_document
from xlainspect.report.views.doctor import doctor_document
from xlainspect.report.views.facts import facts_document, report_document
from xlainspect.report.views.graph import collectives_document, copies_document, fusions_document, ops_document
from xlainspect.report.views.hosts import with_hosts
from xlainspect.report.views.layouts import layout_document, layouts_document
from xlainspect.report.views.memory import memory_document
from xlainspect.report.views.parse import parse_document
from xlainspect.report.views.profile import profile_document
from xlainspect.report.views.profile_diff import profile_diff_document

if TYPE_CHECKING:
    import pandas  # pyright: ignore[reportMissingTypeStubs]

INSTALL_HINT = "to_pandas() needs pandas: pip install 'xlainspect[pandas]' (or pip install pandas)"


@dataclass(frozen=True, slots=True)
class View:
    """How a result type is shown: its command's document, its main table, and the chart its page draws."""

    document: Callable[[Any], Document]
    main: str
    chart: Callable[[Any], str] | None = None


def _capture_document(report: CaptureReport) -> Document:
    """count-recompiles' document of the captured run; where its dump could not be read, the notes."""
    if report.recompiles is not None:
        return recompiles_document(report.recompiles)
    notes = capture_notes(report)
    data = {"status": report.status, "dump": str(report.dump), "notes": notes}
    return Document(data, [Lines("\n".join(notes))])


def _cost_chart(report: CostReport) -> str:
    return "".join(module_roofline(module) for module in report.modules[:CHARTS])


VIEWS: dict[type, View] = {
    ParseReport: View(parse_document, "modules"),
    ArrayLayouts: View(layout_document, "arrays"),
    LayoutsReport: View(layouts_document, "values"),
    FusionsReport: View(fusions_document, "fusions"),
    CopiesReport: View(copies_document, "copies"),
    CollectivesReport: View(collectives_document, "collectives"),
    OpsReport: View(ops_document, "opcodes"),
    Neighbourhood: View(neighbourhood_document, "nodes"),
    ModulesReport: View(modules_document, "modules"),
    RecompileReport: View(recompiles_document, "functions"),
    CaptureReport: View(_capture_document, "functions"),
    MemoryReport: View(memory_document, "modules"),
    DiffReport: View(diff_document, "functions"),
    ProfileDiff: View(profile_diff_document, "ops"),
    CostReport: View(lambda report: cost_document(report, None), "ops", _cost_chart),
    ProfileReport: View(lambda report: with_hosts(profile_document(report, None), report), "ops", typical_step),
    CacheReport: View(lambda report: cache_document(report, str(report.cached.root), "the dump"), "functions"),
    CacheMisses: View(lambda rows: cache_misses_document(rows, str(rows.a), str(rows.b)), "functions"),
    DumpHealth: View(doctor_document, "findings"),
    DumpFacts: View(facts_document, "functions"),
    DumpReport: View(report_document, "modules"),
}
"""The view of each result type (a subclass is shown as its nearest registered base)."""

CHARTS = 3
"""Modules whose roofline a cost report's HTML draws (the first; `cost --html` draws every one)."""


def view_of(result: object) -> View:
    for kind in type(result).__mro__:
        if kind in VIEWS:
            return VIEWS[kind]
    raise TypeError(f"{type(result).__name__} has no view in {__name__}.VIEWS")  # a result class not registered


def tables(result: object) -> dict[str, list[Any]]:
    """The lists of the result's JSON document by name (values as JSON writes them: paths as text)."""
    view = view_of(result)
    data = json.loads(to_json(view.document(result)))
    if isinstance(data, list):
        return {view.main: data}
    return {key: value for key, value in data.items() if isinstance(value, list)}


def frame(result: object, table: str | None = None) -> pandas.DataFrame:
    """The result's table `table` (None: its main table) as a DataFrame: one column per JSON key, in the
    JSON's order, numbers as numbers (an integer column with nulls is pandas' nullable Int64)."""
    try:
        import pandas as pd  # pyright: ignore[reportMissingTypeStubs] (here only: `import xlainspect` and the CLI never load it)
    except ImportError:
        raise ImportError(INSTALL_HINT) from None
    found = tables(result)
    name = view_of(result).main if table is None else table
    if name not in found:
        listed = ", ".join(found) or "none"
        kind = type(result).__name__
        raise UsageError("$table " + literal(f"{name!r}: {kind} has no table of that name; its tables: {listed}"))
    rows: list[dict[str, object]] = [row if isinstance(row, dict) else {name: row} for row in found[name]]
    # pandas' own annotations leave these arguments untyped (it ships no stubs)
    data_frame = pd.DataFrame.from_records(rows) if rows else pd.DataFrame()  # pyright: ignore[reportUnknownMemberType]
    for column in data_frame.columns:
        kind = _nullable([row.get(column) for row in rows])
        if kind is not None:
            data_frame[column] = data_frame[column].astype(kind)  # pyright: ignore[reportUnknownMemberType]
    return data_frame


def _nullable(values: list[object]) -> str | None:
    """Pandas' nullable dtype for a column of integers (or booleans) with nulls, which it would
    otherwise make floats (or objects); None for any other column."""
    present = [v for v in values if v is not None]
    if not present or len(present) == len(values):
        return None
    if all(isinstance(v, bool) for v in present):
        return "boolean"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return "Int64"
    return None


def html_of(result: object) -> str:
    """The tables the CLI prints (each its first `DRAWN_ROWS` rows and a count of the rest), then the
    chart the result's HTML page draws, in a `div` whose style applies inside it only."""
    view = view_of(result)
    parts = [_block_html(block) for block in view.document(result).blocks]
    if view.chart is not None:
        parts.append(view.chart(result))
    return f"<div class='{SCOPE}'><style>{_scoped(_STYLE)}</style>{''.join(parts)}</div>"


SCOPE = "xlainspect"
_STYLE = ROOFLINE_STYLE + TIMELINE_STYLE + "td.l,th.l{text-align:left}.note{color:#666;font-style:italic}"


def _block_html(block: object) -> str:
    if isinstance(block, Table):
        return _table_block(block)
    if isinstance(block, Heading):
        return f"<h4>{html.escape(block.text)}</h4>"
    if isinstance(block, Lines):
        return f"<pre>{html.escape(block.text)}</pre>"
    return ""  # an Entry: the narrow terminal's form of a table the blocks hold too


def _table_block(tab: Table) -> str:
    shown = Table(tab.title, tab.columns, tab.rows[:DRAWN_ROWS], tab.note, tab.right)
    title = f"<p><b>{html.escape(tab.title)}</b></p>" if tab.title else ""
    left_out = len(tab.rows) - DRAWN_ROWS
    more = f"<p class='note'>... {left_out:,} more rows: to_pandas() has them all</p>" if left_out > 0 else ""
    return title + table_html(shown, set()) + more


def _scoped(css: str) -> str:
    """Each rule's selectors under `.SCOPE` (a notebook's outputs share one page and its styles)."""
    return re.sub(r"(^|})\s*([^{}]+){", lambda m: f"{m.group(1)}" + _prefix(m.group(2)) + "{", css)


def _prefix(selectors: str) -> str:
    return ",".join(f".{SCOPE} {s.strip()}" for s in selectors.split(","))
