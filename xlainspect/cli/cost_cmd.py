"""`xlainspect cost DIR|FILE...`: FLOPs, bytes and roofline time per op and module for one call as executed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from xlainspect.analysis.commands.cost import ChipChoice, cost_report
from xlainspect.cli.app import commands_of
from xlainspect.cli.options import (
    FormatOpt,
    FunctionOpt,
    ModuleReOpt,
    PathsArg,
    Stage,
    StageOpt,
    StrictOpt,
    rows_kept,
    selection,
    show,
    user_errors,
)
from xlainspect.cli.progress import progress_bars
from xlainspect.cli.render import OutputFormat, note
from xlainspect.report.cost_html import write_cost_html
from xlainspect.report.views.cost import cost_document

commands = commands_of("cost")

COST_OPS_SHOWN = 10
"""Ops per module a table lists without `--top`."""

ChipOpt = Annotated[
    str | None,
    typer.Option(
        "--chip",
        help="The chip the roofline is drawn for: h100, h200, b200, "
        "a100, tpu-v4, tpu-v5e, tpu-v5p or tpu-v6e (default: the chip the dump "
        "was compiled for, where its files say; else counts without times).",
    ),
]
PeakFlopsOpt = Annotated[float | None, typer.Option("--peak-flops", help="Peak FLOP/s, for every dtype.")]
HbmOpt = Annotated[float | None, typer.Option("--hbm-bandwidth", help="HBM bytes/s.")]
IciOpt = Annotated[
    float | None, typer.Option("--ici-bandwidth", help="Interconnect bytes/s a chip sends on one collective axis.")
]


@commands.command()
def cost(
    paths: PathsArg,
    function: FunctionOpt = None,
    module_re: ModuleReOpt = None,
    stage: StageOpt = Stage.after,
    top: Annotated[
        int | None,
        typer.Option(
            "--top",
            min=0,
            help="Ops to list per module, slowest first (0: all; default: 10 in a table, all in JSON/CSV).",
        ),
    ] = None,
    chip: ChipOpt = None,
    peak_flops: PeakFlopsOpt = None,
    hbm_bandwidth: HbmOpt = None,
    ici_bandwidth: IciOpt = None,
    html: Annotated[Path | None, typer.Option("--html", help="Also write a self-contained roofline page.")] = None,
    fmt: FormatOpt = OutputFormat.table,
    strict: StrictOpt = False,
) -> None:
    """FLOPs, transcendentals, bytes and roofline time per op and module for one call as executed (loops
    times their trip counts, cuBLAS/cuDNN custom calls counted), XLA's HloCostAnalysis figures beside."""
    figures = ChipChoice(chip, peak_flops, hbm_bandwidth, ici_bandwidth)
    rows = rows_kept(top, fmt, COST_OPS_SHOWN)
    kept = None if html is not None else rows  # the page draws every op
    with user_errors(), progress_bars() as progress:
        report = cost_report(paths, selection(function, module_re, stage), figures, top=kept, progress=progress)
        if html is not None:
            write_cost_html(report.modules, html)
            note(f"wrote {html}")
    show(cost_document(report, rows), fmt, report.skipped, strict)
