"""`report_of` and `dump_report` in a notebook: a whole dump's facts as the commands' JSON tables, and
the report's own tables.

The `report` command writes pages, not JSON: its facts (`DumpFacts`) are tabled here as the commands
that find the same facts write them (count-recompiles' functions, memory's modules, fusions', copies'
and collectives' rows, layouts' padding values), with the time section's step time per function and
ops as their dataclasses' fields; the page's tables are those of `dump_report`.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from xlainspect.report.document import Block, Document, Heading, Lines, records
from xlainspect.report.dump_report import dump_report
from xlainspect.report.views.compiles import function_record
from xlainspect.report.views.graph import json_record
from xlainspect.report.views.memory import memory_record

if TYPE_CHECKING:
    from xlainspect.analysis.commands.report import DumpFacts
    from xlainspect.report.dump_report import DumpReport


def facts_document(facts: DumpFacts) -> Document:
    """JSON: where the time goes (`functions`: step time per function, `ops`), then the rows of
    count-recompiles, memory, layouts, fusions, copies and collectives over every readable module;
    tables: the report's."""
    modules = facts.facts
    data: dict[str, Any] = {
        "functions": records(facts.timing.functions),
        "ops": records(facts.timing.ops),
        "recompiles": [function_record(r) for r in facts.recompiles],
        "memory": [memory_record(m.memory) for m in modules if m.memory is not None],
        "padding": records(r for m in modules for r in m.padding),
        "fusions": [json_record(r) for r in records(f for m in modules for f in m.fusions)],
        "copies": [json_record(r) for r in records(c for m in modules for c in m.copies)],
        "collectives": [json_record(r) for r in records(c for m in modules for c in m.collectives)],
        "skipped": [{"path": str(s.path), "reason": s.reason} for s in facts.skipped],
    }
    return Document(data, report_document(dump_report(facts)).blocks)


def report_document(report: DumpReport) -> Document:
    """JSON: each of the page's tables (its first rows, as the page words them) by its title, the
    section's key before a title two sections share; tables: each section's intro and tables."""
    titled = [("modules", report.modules)]
    blocks: list[Block] = [report.modules]
    for section in report.sections:
        headline = [Lines(section.headline)] if section.headline else []
        blocks += [Heading(section.title), *headline, Lines(section.intro), *section.tables]
        titled += [(t.title or section.key, t) for t in section.tables]
    counts = Counter(title for title, _ in titled)
    data: dict[str, list[dict[str, object]]] = {}
    for section_key, (title, tab) in zip(_keys(report), titled):
        name = title if counts[title] == 1 else f"{section_key}: {title}"
        data[name] = [dict(zip(tab.columns, row)) for row in tab.rows]
    return Document(data, blocks)


def _keys(report: DumpReport) -> list[str]:
    return ["modules", *(s.key for s in report.sections for _ in s.tables)]
