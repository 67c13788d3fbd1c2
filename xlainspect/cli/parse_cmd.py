"""`xlainspect parse FILE`: check that HLO text parses and summarise its modules."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from xlainspect.analysis.commands.parse import parse_report
from xlainspect.cli.app import commands_of
from xlainspect.cli.options import FormatOpt, readable, show, user_errors
from xlainspect.cli.render import OutputFormat
from xlainspect.report.views.parse import parse_document

commands = commands_of("parse")


@commands.command()
def parse(
    files: Annotated[
        list[Path], typer.Argument(help="HLO text files (paths or URLs).", show_default=False, parser=readable)
    ],
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Parse HLO text files with the grammar; list modules, computations and instruction counts."""
    with user_errors():
        report = parse_report(files)
    show(parse_document(report), fmt)
