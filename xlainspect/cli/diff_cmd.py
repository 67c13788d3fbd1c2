"""`xlainspect diff A B`: what XLA did differently between two dumps, per function; a CI gate on increases."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from xlainspect.analysis.commands.diff import diff_report, profile_diff_report, profiles_given
from xlainspect.cli.app import commands_of
from xlainspect.cli.options import StrictOpt, readable, show, user_errors
from xlainspect.cli.progress import progress_bars
from xlainspect.cli.render import OutputFormat
from xlainspect.report.views.diff import diff_document
from xlainspect.report.views.profile_diff import profile_diff_document

commands = commands_of("diff")


_SIDE = (
    "A --xla_dump_to directory or an HLO text file, or a jax.profiler trace (its log dir or *.xplane.pb); "
    "a path or a URL (gs://, s3://, ...)."
)
_JOIN = "With two profiles: the --xla_dump_to directory of the run that traced {}, joined with its ops."


@commands.command()
def diff(
    a: Annotated[Path, typer.Argument(help=f"Before: {_SIDE}", show_default=False, parser=readable)],
    b: Annotated[Path, typer.Argument(help=f"After: {_SIDE}", show_default=False, parser=readable)],
    fmt: Annotated[
        OutputFormat,
        typer.Option(
            "--format",
            "-f",
            help="table, json, csv (every function's metrics) or markdown (for a pull-request comment).",
        ),
    ] = OutputFormat.table,
    max_increase: Annotated[
        list[str] | None,
        typer.Option(
            "--max-increase",
            help="METRIC=N (absolute) or METRIC=N% (relative to A): the largest increase allowed "
            "(repeatable), e.g. peak_memory=5%, collective_bytes=0; of two profiles step_seconds, busy_seconds, "
            "host_seconds or compile_seconds (seconds), failing only where the increase is significant.",
        ),
    ] = None,
    fail_on_regression: Annotated[
        bool,
        typer.Option(
            "--fail-on-regression",
            help="Exit 1 when a metric of a function grows beyond its --max-increase (without any, beyond 0).",
        ),
    ] = False,
    show_all: Annotated[bool, typer.Option("--all", help="Also show unchanged functions.")] = False,
    chip: Annotated[
        str | None,
        typer.Option(
            "--chip",
            help="The chip roofline_seconds is for (default: the GPU a dump names; none for TPU and CPU dumps).",
        ),
    ] = None,
    dump_a: Annotated[Path | None, typer.Option(help=_JOIN.format("A"), show_default=False, parser=readable)] = None,
    dump_b: Annotated[Path | None, typer.Option(help=_JOIN.format("B"), show_default=False, parser=readable)] = None,
    strict: StrictOpt = False,
) -> None:
    """Per function (matched by HloModule name): module count, op histogram, fusions by kind, custom-call
    targets, copies, collectives and their bytes, peak memory, padding waste, and the entry signature
    (parameter shapes, dtypes, layouts, shardings, donation, result). Functions on one side are listed.
    Of two profiles: the median step before and after and whether it changed beyond a rerun's noise, the
    step breakdown, and every op matched across the runs, told the program's change from the machine's."""
    gated = {"max_increase": max_increase or (), "any_growth": fail_on_regression, "strict": strict}
    with user_errors(), progress_bars() as progress:
        if profiles_given(a, b, dump_a, dump_b):
            found = profile_diff_report(a, b, dump_a=dump_a, dump_b=dump_b, **gated)
            document, skipped = profile_diff_document(found, gate=fail_on_regression), found.skipped
        else:
            report = diff_report(a, b, chip=chip, progress=progress, **gated)
            document, skipped = diff_document(report, show_all=show_all, gate=fail_on_regression), report.skipped
    show(document, fmt, skipped, strict)
