"""`xlainspect report DIR --html FILE [--markdown FILE]`: one report of a whole dump."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from xlainspect.cli.app import DumpPath, StrictOpt, app, note_skipped, user_errors
from xlainspect.cli.progress import progress_bars
from xlainspect.cli.render import note
from xlainspect.errors import XlaInspectError

OutFile = Annotated[Path | None, typer.Option(help="Write the report here ('-' for stdout).", show_default=False)]


@app.command()
def report(path: DumpPath, html: OutFile = None, markdown: OutFile = None, strict: StrictOpt = False) -> None:
    """One report of a whole dump: recompiles, memory, padding, fusions, copies and collectives, findings
    ranked by cost on top. --html writes one self-contained page (every table sortable),
    --markdown a Markdown document."""
    from xlainspect.report.dump_report import report_of
    from xlainspect.report.page import render_html, render_markdown

    with user_errors(), progress_bars() as progress:
        if html is None and markdown is None:
            raise XlaInspectError("report: say where to write it: --html FILE and/or --markdown FILE ('-': stdout)")
        built = report_of(path, strict=strict, progress=progress)
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
