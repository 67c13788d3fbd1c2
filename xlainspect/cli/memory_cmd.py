"""`xlainspect memory DIR|FILE`: allocation totals, the peak and the biggest buffers live there."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from xlainspect.analysis.commands.memory import memory_report
from xlainspect.cli.app import commands_of
from xlainspect.cli.options import DumpPath, FormatOpt, FunctionOpt, rows_kept, show, user_errors
from xlainspect.cli.progress import progress_bars
from xlainspect.cli.render import OutputFormat, note
from xlainspect.report.memory_html import write_memory_html
from xlainspect.report.views.memory import memory_document

commands = commands_of("memory")

BUFFERS_SHOWN = 10
"""Buffers live at the peak a table lists per module without `--top`."""


@commands.command()
def memory(
    path: DumpPath,
    function: FunctionOpt = None,
    top: Annotated[
        int | None,
        typer.Option(
            "--top",
            min=0,
            help="Buffers live at the peak to list per module, biggest first (0: all; default: 10 in a table, "
            "all in JSON/CSV).",
        ),
    ] = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write a self-contained page with the memory curve.")
    ] = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Memory per compiled module from the buffer assignment, memory-usage report and live ranges: bytes by
    allocation kind, the peak (program point and instruction) and the biggest buffers live at the peak."""
    with user_errors(), progress_bars() as progress:
        report = memory_report(path, function=function, top=rows_kept(top, fmt, BUFFERS_SHOWN), progress=progress)
        if html is not None:
            write_memory_html(report.modules, html)
            note(f"wrote {html}")
    show(memory_document(report), fmt, report.skipped)
