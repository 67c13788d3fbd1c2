"""`doctor`: a dump's findings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlainspect.analysis.doctor import Finding
from xlainspect.report.document import Document, Lines, fields, records, table

if TYPE_CHECKING:
    from xlainspect.analysis.doctor import DumpHealth


def doctor_document(health: DumpHealth) -> Document:
    data = {"root": str(health.root), "modules": health.modules, "files": health.files}
    data["findings"] = records(health.findings)
    verdict = f"{len(health.findings)} findings" if health.findings else "no findings: the dump looks healthy"
    title = f"{health.root}: {health.modules} modules, {health.files} files, {verdict}"
    rows = table(title, health.findings, fields(Finding))
    return Document(data, [rows] if health.findings else [Lines(title)], csv=rows)  # a sentence, not an empty table
