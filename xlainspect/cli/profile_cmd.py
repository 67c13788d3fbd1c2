"""`xlainspect profile TRACE [--dump DIR]`: measured time per op beside its roofline, and compiles on the timeline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from xlainspect.analysis.commands.cost import ChipChoice
from xlainspect.analysis.commands.profile import profile_report
from xlainspect.analysis.profile import compiles_after
from xlainspect.cli.app import commands_of
from xlainspect.cli.cost_cmd import ChipOpt, HbmOpt, IciOpt, PeakFlopsOpt
from xlainspect.cli.options import (
    FormatOpt,
    FunctionOpt,
    SchedulerOpt,
    StrictOpt,
    readable,
    readable_here,
    rows_kept,
    show,
    user_errors,
)
from xlainspect.cli.render import OutputFormat, note
from xlainspect.report.profile_html import write_profile_html
from xlainspect.report.views.hosts import with_hosts
from xlainspect.report.views.kernels import By
from xlainspect.report.views.profile import profile_document

commands = commands_of("profile")

PROFILE_OPS_SHOWN = 20
"""Ops a table lists without `--top`."""

TraceArg = Annotated[
    str,
    typer.Argument(
        help="What jax.profiler.trace(log_dir) wrote: the log dir, a run folder or a *.xplane.pb file "
        "(a path or a URL; with --scheduler the workers fetch a URL's traces).",
        show_default=False,
    ),
]


@commands.command()
def profile(
    trace: TraceArg,
    dump: Annotated[
        Path | None,
        typer.Option(
            "--dump",
            help="The same run's --xla_dump_to directory: each op's "
            "kind, op_name, source line, FLOPs and roofline time.",
            parser=readable,
            metavar="<path>",
        ),
    ] = None,
    function: FunctionOpt = None,
    top: Annotated[
        int | None,
        typer.Option(
            "--top", min=0, help="Ops to list, most time lost first (0: all; default: 20 in a table, all in JSON/CSV)."
        ),
    ] = None,
    step_function: Annotated[
        str | None,
        typer.Option(
            "--step-function",
            help="The function whose executions are the steps (default: the step markers, else the "
            "function with the most device time).",
        ),
    ] = None,
    compile_phases: Annotated[
        bool,
        typer.Option(
            "--compile-phases", help="Show each compile's time by phase: jax, XLA passes, autotuning, codegen."
        ),
    ] = False,
    max_compiles_after_step: Annotated[
        int | None,
        typer.Option(
            "--max-compiles-after-step", help="Fail (exit 1) when a function compiles in a step after step N."
        ),
    ] = None,
    chip: ChipOpt = None,
    peak_flops: PeakFlopsOpt = None,
    hbm_bandwidth: HbmOpt = None,
    ici_bandwidth: IciOpt = None,
    launch_seconds: Annotated[
        float | None,
        typer.Option(
            "--launch-seconds",
            min=0.0,
            help="The least time a kernel takes, a floor under each op's roofline time (default: the "
            "chip's, 1e-6 on NVIDIA GPUs, from XLA's GPU cost model).",
        ),
    ] = None,
    by: Annotated[
        By | None,
        typer.Option(
            "--by",
            help="Instead of the ops: their device time by jax op_name, or by the user's source line "
            "(file:line), with FLOPs where the cost is known.",
        ),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html", help="Also write a self-contained page: the step timeline and the roofline with measured points."
        ),
    ] = None,
    scheduler: SchedulerOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    strict: StrictOpt = False,
) -> None:
    """Measured time per HLO op (total, per step, min/median/max, share of the steps' device-busy time)
    from a jax.profiler trace; steps, device time per function, autotuning apart; with --dump its
    roofline time, efficiency and time lost, and GPU kernels run in CUDA graphs placed on their op;
    every compile with its function, step and time by phase. Needs the profile extra: pip install
    'xlainspect[profile]'."""
    with user_errors():
        figures = ChipChoice(chip, peak_flops, hbm_bandwidth, ici_bandwidth, launch_seconds)
        where = readable_here(trace, scheduler)  # a URL on a cluster: the workers fetch its traces
        report = profile_report(
            where, dump, figures, function=function, strict=strict, step_function=step_function, scheduler=scheduler
        )
        if html is not None:
            write_profile_html(report, html)
            note(f"wrote {html}")
    after = max_compiles_after_step
    late = compiles_after(report.compiles, after) if after is not None else []
    rows = rows_kept(top, fmt, PROFILE_OPS_SHOWN)
    document = with_hosts(profile_document(report, rows, late, after or 0, compile_phases, by), report)
    show(document, fmt, report.skipped, strict)
