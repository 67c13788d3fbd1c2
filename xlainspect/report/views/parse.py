"""`parse`: the modules, computations and instruction counts of HLO text files."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlainspect import __version__
from xlainspect.report.document import Document, records, table

if TYPE_CHECKING:
    from xlainspect.analysis.commands.parse import ParseReport


def parse_document(report: ParseReport) -> Document:
    columns = ("file", "module", "computations", "instructions", "entry")
    rows = table(None, report.modules, columns)
    notes: list[str] = []
    if report.unknown_opcodes:  # a newer XLA's opcodes parse and are kept as written; not an error
        notes.append(
            f"note: opcodes unknown to xlainspect {__version__} (kept as written): " + ", ".join(report.unknown_opcodes)
        )
    return Document(records(report.modules), [rows], csv=rows, notes=notes)


# --- layout, layouts -----------------------------------------------------------------------------------
