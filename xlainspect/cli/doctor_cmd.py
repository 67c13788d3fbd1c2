"""`xlainspect doctor DIR`: what to know about a dump before trusting any count made from it."""

from __future__ import annotations

from xlainspect.cli.app import DumpPath, FormatOpt, app, user_errors
from xlainspect.cli.render import OutputFormat, emit_frame, emit_json, stdout_console


@app.command()
def doctor(path: DumpPath, fmt: FormatOpt = OutputFormat.table) -> None:
    """Dump health: crashed compiles, module id collisions, the dump cap, per-pass files, truncated
    files, mixed platforms, proto-only dumps. Findings are information (exit 0); no dump is exit 2."""
    from xlainspect.analysis.doctor import Finding, diagnose
    from xlainspect.report.table import to_frame, to_records

    with user_errors():
        health = diagnose(path)
    if fmt is OutputFormat.json:
        emit_json(
            {
                "root": str(health.root),
                "modules": health.modules,
                "files": health.files,
                "findings": to_records(health.findings),
            }
        )
        return
    verdict = f"{len(health.findings)} findings" if health.findings else "no findings: the dump looks healthy"
    title = f"{health.root}: {health.modules} modules, {health.files} files, {verdict}"
    if not health.findings and fmt is not OutputFormat.csv:  # a sentence, not an empty table
        stdout_console().print(title, markup=False, highlight=False, soft_wrap=True)
        return
    emit_frame(to_frame(health.findings, Finding), fmt, title)
