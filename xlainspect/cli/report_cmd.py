"""`xlainspect report DIR --html FILE [--markdown FILE]`: one report of a whole dump."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from xlainspect.cli.app import commands_of
from xlainspect.cli.options import DumpPath, StrictOpt, note_skipped, user_errors
from xlainspect.cli.progress import progress_bars
from xlainspect.cli.render import note
from xlainspect.errors import XlaInspectError
from xlainspect.report.dump_report import report_at
from xlainspect.report.page import render_html, render_markdown

commands = commands_of("report")

OutFile = Annotated[Path | None, typer.Option(help="Write the report here ('-' for stdout).", show_default=False)]


LOG_HELP = "jax log of the same run: compile seconds (default: the jax.log in the dump)."


@commands.command()
def report(
    path: DumpPath,
    html: OutFile = None,
    markdown: OutFile = None,
    profile: Annotated[
        Path | None, typer.Option(help="jax.profiler trace of the same run: measured step times.", show_default=False)
    ] = None,
    log: Annotated[
        Path | None,
        typer.Option(
            help="jax log of the same run: compile seconds (default: the dump's jax.log).", show_default=False
        ),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            help="jax.profiler trace of another run (before a change): the profile compared with it, as diff A B.",
            show_default=False,
        ),
    ] = None,
    strict: StrictOpt = False,
) -> None:
    """One report of a whole dump: where the time goes (step time per function, measured with --profile,
    else the roofline estimate; the ops that lose the most; compile time), then recompiles, memory,
    padding, fusions, copies and collectives, findings ranked by time on top. --html writes one
    self-contained page (charts as inline SVG, every table sortable), --markdown a Markdown document."""
    with user_errors(), progress_bars() as progress:
        if html is None and markdown is None:
            raise XlaInspectError("report: say where to write it: --html FILE and/or --markdown FILE ('-': stdout)")
        built = report_at(path, profile=profile, log=log, baseline=baseline, strict=strict, progress=progress)
        for target, render in ((html, render_html), (markdown, render_markdown)):
            if target is not None:
                _write(target, render(built))
    note_skipped(built.skipped, strict)


def _write(target: Path, text: str) -> None:
    if str(target) == "-":
        typer.echo(text, nl=False)
        return
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as error:
        raise XlaInspectError(f"{target}: cannot write the report: {error.strerror}") from None
    note(f"wrote {target} ({len(text.encode()):,} bytes)")
