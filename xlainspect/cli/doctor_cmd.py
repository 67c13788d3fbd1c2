"""`xlainspect doctor DIR`: what to know about a dump before trusting any count made from it."""

from __future__ import annotations

from xlainspect.cli.app import DumpPath, FormatOpt, app, show, user_errors
from xlainspect.cli.progress import progress_bars
from xlainspect.cli.render import OutputFormat


@app.command()
def doctor(path: DumpPath, fmt: FormatOpt = OutputFormat.table) -> None:
    """Dump health: crashed compiles, module id collisions, the dump cap, per-pass files, truncated
    files, mixed platforms, proto-only dumps. Findings are information (exit 0); no dump is exit 2."""
    from xlainspect.analysis.doctor import diagnose
    from xlainspect.report.views import doctor_document

    with user_errors(), progress_bars() as progress:
        health = diagnose(path, progress)
    show(doctor_document(health), fmt)
