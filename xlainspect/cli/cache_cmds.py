"""`xlainspect cache DIR` (what jax's persistent compilation cache holds) and `xlainspect cache-misses A B`
(why run B missed it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from xlainspect.analysis.commands.cache import cache_misses_report, cache_report
from xlainspect.cli.app import commands_of
from xlainspect.cli.options import FormatOpt, LogOpt, readable, show, user_errors
from xlainspect.cli.render import OutputFormat
from xlainspect.report.views.cache import cache_document, cache_misses_document

commands = commands_of("cache")


@commands.command()
def cache(
    path: Annotated[Path, typer.Argument(help="A jax_compilation_cache_dir.", show_default=False)],
    dump: Annotated[
        Path | None,
        typer.Option(
            "--dump",
            help="A dump directory: say which of its compiles have an entry.",
            show_default=False,
            parser=readable,
            metavar="<path>",
        ),
    ] = None,
    log: LogOpt = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Per function: cache entries, bytes, the compile seconds stored in them, oldest and newest write, the
    programs they hold; functions holding one program under several keys (keys that changed between runs,
    or change every run: jax #21159). Damaged or foreign files are named on stderr."""
    with user_errors():
        report = cache_report(path, dump=dump, log=log)
    show(cache_document(report, str(path), str(dump)), fmt, report.skipped)


@commands.command("cache-misses")
def cache_misses_cmd(
    a: Annotated[
        Path,
        typer.Argument(
            help="The earlier run: a jax log, or a folder holding jax.log (a capture dump directory).",
            show_default=False,
        ),
    ],
    b: Annotated[Path, typer.Argument(help="The run that missed: the same.", show_default=False)],
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Per function of run B: hit, miss or not written (and why), and for a miss of a function A compiled
    too, the cache-key components whose hashes changed (computation, XLA flags with the flags added or
    removed, compile_options, jax_lib version, backend version, accelerator_config, compression)."""
    with user_errors():
        rows = cache_misses_report(a, b)
    show(cache_misses_document(rows, str(a), str(b)), fmt, rows.skipped)
