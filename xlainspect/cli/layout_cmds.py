"""`xlainspect layout SHAPE` (what one layout costs) and `xlainspect layouts PATH` (the padding ledger)."""

from __future__ import annotations

import enum
from typing import Annotated

import typer

from xlainspect.analysis.commands.layouts import explain_layout, layouts_report
from xlainspect.cli.app import commands_of
from xlainspect.cli.options import DumpPath, FormatOpt, FunctionOpt, show, user_errors
from xlainspect.cli.progress import progress_bars
from xlainspect.cli.render import OutputFormat
from xlainspect.report.views.layouts import layout_document, layouts_document

commands = commands_of("layout")


class Platform(str, enum.Enum):
    tpu = "tpu"
    gpu = "gpu"
    cpu = "cpu"


PlatformOpt = Annotated[
    Platform | None,
    typer.Option("--platform", help="Names memory spaces (and, for tpu, applies the TPU backend's size rule)."),
]


@commands.command()
def layout(
    shape: Annotated[
        str,
        typer.Argument(
            help="A shape with layout, e.g. 'bf16[3,5]{1,0:T(8,128)(2,1)}' or 'bf16[3,5]<1,0:T(8,128)(2,1)>'.",
            show_default=False,
        ),
    ],
    platform: PlatformOpt = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Decode a layout: physical order, tiles, padded dims, logical vs padded bytes, memory space."""
    with user_errors():
        arrays = explain_layout(shape, platform.value if platform else None)
    show(layout_document(arrays), fmt)


@commands.command()
def layouts(
    path: DumpPath,
    top: Annotated[int | None, typer.Option("--top", help="Show only the N most wasteful values.")] = None,
    min_expansion: Annotated[float, typer.Option("--min-expansion", help="Only values padded at least X times.")] = 0.0,
    function: FunctionOpt = None,
    platform: PlatformOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    every_value: Annotated[
        bool, typer.Option("--all", help="Tables list every value and module, padded or not (JSON and CSV always do).")
    ] = False,
) -> None:
    """The padding ledger: every array value of the after-optimizations modules, ranked by wasted bytes;
    tables show the padded ones (--top, default 20) with totals per function and module."""
    with user_errors(), progress_bars() as progress:
        report = layouts_report(
            path,
            function=function,
            min_expansion=min_expansion,
            platform=platform.value if platform else None,
            top=top,
            every_value=every_value,
            progress=progress,
        )
    show(layouts_document(report), fmt, report.skipped)
