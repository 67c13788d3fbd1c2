"""`layout` and `layouts`: what a shape's layout costs, and the padding ledger of a dump."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from xlainspect.analysis.layouts import (
    explain_shape,
    filter_ledger,
    ledger_files,
    ledger_totals,
    ledger_view,
    module_ledger,
    ranked,
)
from xlainspect.analysis.runner import Paths, analyse_each, input_paths, remembered
from xlainspect.analysis.tabular import Tabular
from xlainspect.dump.directory import load_dump
from xlainspect.dump.module import SkippedFile
from xlainspect.dump.selection import select_dump_modules
from xlainspect.hlo.shape_text import parse_shape
from xlainspect.progress import Progress, silent

if TYPE_CHECKING:
    from xlainspect.analysis.layouts import ArrayLayout, LedgerView, PaddingRow, PaddingTotal


class ArrayLayouts(Tabular, list["ArrayLayout"]):
    """`explain_layout`'s arrays, a list (a tuple shape has one per leaf)."""


def explain_layout(shape: str, platform: str | None = None) -> ArrayLayouts:
    """What each array of a shape with layout costs (`bf16[3,5]{1,0:T(8,128)(2,1)}`); a tuple gives one per leaf."""
    return ArrayLayouts(explain_shape(parse_shape(shape), platform))


@dataclass
class LayoutsReport(Tabular):
    """The padding ledger of a dump: the most wasteful values and totals per module and function."""

    values: list[PaddingRow]
    """The `top` most wasteful array values (all, without `top`)."""
    modules: list[PaddingTotal]
    functions: list[PaddingTotal]
    """Totals over every value that passed the filters, not only the `top` listed."""
    skipped: list[SkippedFile]
    view: LedgerView
    """What a table shows: the padded values (the `top`, default 20), the modules losing bytes, and
    a caption saying what it left out (every value with `every_value`)."""


@remembered("path")
def layouts_report(
    path: Paths,
    *,
    function: str | None = None,
    min_expansion: float = 0.0,
    platform: str | None = None,
    top: int | None = None,
    every_value: bool = False,
    progress: Progress = silent,
) -> LayoutsReport:
    """The padding ledger: every array value of the after-optimizations modules, most wasted bytes first."""
    dump = load_dump(input_paths(path))
    chosen = select_dump_modules(dump, function=function)
    per_module, skipped, _ = analyse_each(
        chosen,
        lambda m: module_ledger(m, platform),
        inputs=ledger_files,
        key=lambda m: f"layouts:{platform}",
        blame=lambda m: m.files[0].path,
        advance=progress("reading modules", len(chosen)),
    )
    ledger = ranked([row for rows in per_module for row in rows])
    rows = filter_ledger(ledger, function=function, min_expansion=min_expansion)
    shown = rows[:top] if top is not None else rows
    totals = ledger_totals(rows, "module"), ledger_totals(rows, "function")
    return LayoutsReport(shown, *totals, [*dump.skipped, *skipped], ledger_view(rows, top, every_value))
