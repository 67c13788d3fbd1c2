"""`report`: one report of a whole dump, composed of each topic's section from the facts the analyses
found (`report_of`).

A report is a list of sections (`report.sections.Section`), each made by one function of
`SECTION_BUILDERS` from the same `DumpFacts`: the dump and, per module, the `ModuleFacts` the analyses
found in its files. Each builder lives in its topic's view (`report.views.*`), beside the view of the
topic's own command, so a topic is worded in one place. A new analysis joins the report by adding its
facts to `ModuleFacts` (or `DumpFacts`) and appending one builder to `SECTION_BUILDERS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from xlainspect.analysis.commands.report import DumpFacts, report_of
from xlainspect.analysis.runner import remembered
from xlainspect.analysis.tabular import Tabular
from xlainspect.dump.directory import Dump
from xlainspect.dump.module import SkippedFile
from xlainspect.progress import Progress, silent
from xlainspect.report.document import Table
from xlainspect.report.sections import Finding, Section, rank
from xlainspect.report.views.compiles import compiles_section, recompiles_section
from xlainspect.report.views.graph import collectives_section, copies_section, fusions_section
from xlainspect.report.views.hosts import hosts_section
from xlainspect.report.views.kernels import kernels_section, memory_over_time_section, source_section
from xlainspect.report.views.layouts import padding_section
from xlainspect.report.views.memory import memory_section
from xlainspect.report.views.profile_diff import compared_section
from xlainspect.report.views.time import roofline_section, time_section


@dataclass
class DumpReport(Tabular):
    """One report of a whole dump: the modules table and each section."""

    root: str
    modules: Table
    sections: list[Section]
    skipped: list[SkippedFile]

    def findings(self) -> list[Finding]:
        """Every section's findings, costliest first (`sections.rank`)."""
        return sorted((f for s in self.sections for f in s.findings), key=rank)


def dump_report(facts: DumpFacts) -> DumpReport:
    """Every section builder run on the facts of a dump (`xlainspect.report_of`)."""
    sections = [section for build in SECTION_BUILDERS if (section := build(facts)) is not None]
    return DumpReport(str(facts.dump.root), _modules_table(facts.dump), sections, facts.skipped)


@remembered("path", "profile", "log", "baseline")
def report_at(
    path: str | Path,
    *,
    profile: str | Path | None = None,
    log: str | Path | None = None,
    baseline: str | Path | None = None,
    strict: bool = False,
    progress: Progress = silent,
) -> DumpReport:
    """`dump_report(report_of(path, ...))`, what the `report` command writes, answered from the command
    cache while the inputs are unchanged."""
    return dump_report(report_of(path, profile=profile, log=log, baseline=baseline, strict=strict, progress=progress))


def _modules_table(dump: Dump) -> Table:
    rows = tuple((m.label, m.name or "", m.platform_tag or m.platform or "", ", ".join(m.stages)) for m in dump.modules)
    return Table("modules", ("module", "function", "platform", "stages"), rows)


SECTION_BUILDERS: list[Callable[[DumpFacts], Section | None]] = [
    time_section,
    compared_section,
    hosts_section,
    roofline_section,
    kernels_section,
    source_section,
    compiles_section,
    recompiles_section,
    memory_section,
    memory_over_time_section,
    padding_section,
    fusions_section,
    copies_section,
    collectives_section,
]
"""The report's sections in page order. Append a builder to add a section (e.g. cost/roofline); a
builder returning None leaves its section out (no buffer assignment: no memory section)."""
