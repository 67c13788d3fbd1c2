"""`xlainspect doctor DIR`: what to know about a dump before trusting any count made from it."""

from __future__ import annotations

from xlainspect.analysis.doctor import diagnose
from xlainspect.cli.app import commands_of
from xlainspect.cli.options import FleetPath, FormatOpt, SchedulerOpt, readable_here, show, user_errors
from xlainspect.cli.progress import progress_bars
from xlainspect.cli.render import OutputFormat
from xlainspect.report.views.doctor import doctor_document

commands = commands_of("doctor")


@commands.command()
def doctor(path: FleetPath, fmt: FormatOpt = OutputFormat.table, scheduler: SchedulerOpt = None) -> None:
    """Dump health: crashed compiles, module id collisions, the dump cap, per-pass files, truncated
    files, mixed platforms, proto-only dumps. Findings are information (exit 0); no dump is exit 2."""
    with user_errors():
        where = readable_here(path, scheduler)
    with user_errors(), progress_bars() as progress:
        health = diagnose(where, progress, scheduler)
    show(doctor_document(health), fmt)
