"""`xlainspect modules DIR`, `xlainspect count-recompiles DIR` (with a CI gate) and `xlainspect capture -- CMD`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from xlainspect.analysis.commands.compiles import (
    capture_report,
    modules_report,
    named_budgets,
    read_baseline,
    recompiles_report,
    write_baseline,
)
from xlainspect.analysis.recompiles import Budget
from xlainspect.cli.app import commands_of
from xlainspect.cli.options import (
    EXIT_USAGE,
    DumpPath,
    FleetPath,
    FormatOpt,
    LogOpt,
    SchedulerOpt,
    StrictOpt,
    readable,
    readable_here,
    show,
    user_errors,
)
from xlainspect.cli.progress import progress_bars
from xlainspect.cli.render import OutputFormat, note
from xlainspect.errors import XlaInspectError
from xlainspect.report.views.compiles import capture_notes, modules_document, recompiles_document

commands = commands_of("dump")


@commands.command()
def modules(path: DumpPath, fmt: FormatOpt = OutputFormat.table, log: LogOpt = None, strict: StrictOpt = False) -> None:
    """List the modules (compiles) of a dump: id, function, platform, stages, instruction count, size, and
    compile seconds when the run's jax log is there."""
    with user_errors(), progress_bars() as progress:
        report = modules_report(path, log=log, strict=strict, progress=progress)
    show(modules_document(report), fmt, report.skipped, strict)


MaxPerFunctionOpt = Annotated[
    int | None, typer.Option("--max-per-function", help="Fail (exit 1) when a function compiles more often.")
]
MaxNamedOpt = Annotated[
    list[str] | None,
    typer.Option("--max", help="NAME=N: the budget of one function (repeatable; overrides --max-per-function)."),
]
MaxTotalOpt = Annotated[int | None, typer.Option("--max-total", help="Fail when all compiles together exceed N.")]
IgnoreEagerOpt = Annotated[
    bool,
    typer.Option("--ignore-eager", help="Leave eager single-op modules (jit_add, ...) out of the gate and the table."),
]
BaselineOpt = Annotated[
    Path | None,
    typer.Option(
        "--baseline",
        help="JSON of per-function compile counts; fail when a function compiles more often than there "
        "(one not there: more than --max-per-function, else 1).",
    ),
]
UpdateBaselineOpt = Annotated[
    bool, typer.Option("--update-baseline", help="Write the counts to --baseline instead of checking them.")
]


@commands.command("count-recompiles")
def count_recompiles_cmd(
    path: FleetPath,
    fmt: FormatOpt = OutputFormat.table,
    max_per_function: MaxPerFunctionOpt = None,
    max_named: MaxNamedOpt = None,
    max_total: MaxTotalOpt = None,
    ignore_eager: IgnoreEagerOpt = False,
    baseline: BaselineOpt = None,
    update_baseline: UpdateBaselineOpt = False,
    log: LogOpt = None,
    profile: Annotated[
        Path | None,
        typer.Option(
            "--profile",
            help="The run's jax.profiler trace: the measured seconds of each compile (needs xlainspect[profile]).",
            show_default=False,
            parser=readable,
            metavar="<path>",
        ),
    ] = None,
    scheduler: SchedulerOpt = None,
    strict: StrictOpt = False,
) -> None:
    """Count compiles per function and explain every recompile (shape, dtype, layout, sharding, donation,
    body, identical module, flags); with budgets it is a CI gate (exit 1 naming each function over it)."""
    with user_errors():
        where = readable_here(path, scheduler)
    with user_errors(), progress_bars() as progress:
        if update_baseline and baseline is None:
            raise XlaInspectError("--update-baseline needs --baseline FILE")
        budget = _budget(max_per_function, max_named, max_total, ignore_eager, None if update_baseline else baseline)
        report = recompiles_report(
            where, budget, log=log, trace=profile, strict=strict, progress=progress, scheduler=scheduler
        )
    if update_baseline and baseline is not None:  # (without --baseline it stopped above)
        write_baseline(baseline, report, ignore_eager)
        note(f"wrote {baseline}")
    show(recompiles_document(report, ignore_eager=ignore_eager), fmt, report.skipped, strict)


def _budget(
    max_per_function: int | None,
    max_named: list[str] | None,
    max_total: int | None,
    ignore_eager: bool,
    baseline: Path | None,
) -> Budget:
    """The gate's budgets from the options (a baseline file is read here: a bad one is an input error)."""
    baseline_counts = read_baseline(baseline) if baseline is not None else None
    return Budget(max_per_function, named_budgets(max_named or []), max_total, ignore_eager, baseline_counts)


@commands.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def capture(
    command: Annotated[list[str], typer.Argument(help="The program to run, after `--`.", show_default=False)],
    dump_dir: Annotated[
        Path | None,
        typer.Option(
            "--dump-dir", help="Where XLA writes the dump (default: a new folder in the temporary directory, kept)."
        ),
    ] = None,
    fmt: FormatOpt = OutputFormat.table,
    max_per_function: MaxPerFunctionOpt = None,
    max_named: MaxNamedOpt = None,
    max_total: MaxTotalOpt = None,
    ignore_eager: IgnoreEagerOpt = False,
    baseline: BaselineOpt = None,
) -> None:
    """Run a program with XLA_FLAGS extended by --xla_dump_to and jax's compile log saved as jax.log in the
    dump, then print its count-recompiles report with compile seconds, gated like count-recompiles. The
    program's own non-zero exit status is passed on, else the gate's."""
    with user_errors():
        run = capture_report(command, dump_dir, _budget(max_per_function, max_named, max_total, ignore_eager, baseline))
    for line in capture_notes(run):
        note(line)
    status = run.status or (EXIT_USAGE if run.recompiles is None else 0)
    try:
        if run.recompiles is not None:
            show(recompiles_document(run.recompiles, ignore_eager=ignore_eager), fmt, run.recompiles.skipped)
    except typer.Exit as done:  # the program's own status wins over ours
        status = status or done.exit_code
    if status:
        raise typer.Exit(status)
