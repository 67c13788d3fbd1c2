"""The dump report as one self-contained HTML page or as Markdown (a pull-request comment, a wiki page).

The HTML page is made of `memory_html`'s pieces (page skeleton, style, sortable tables, the memory
curves) and links each function to its modules, and each module name in any table to its row in the
modules table. Stdlib only.
"""

from __future__ import annotations

import dataclasses
import html

from xlainspect.report.document import Table, cell_text, is_numeric, markdown_table
from xlainspect.report.dump_report import DumpReport, Finding, Section
from xlainspect.report.memory_html import module_section, page

_STYLE = """nav a{margin-right:1em}.finding td{vertical-align:top}.note{color:#666;font-style:italic}
.intro{max-width:70em}td a{color:#0b5394}tr:target{background:#fff3b0}"""


PAGE_LIMIT = 5_000_000
"""Bytes a page may take; past it memory curves (a point per program point) are left out, with a note."""


def render_html(report: DumpReport, limit: int = PAGE_LIMIT) -> str:
    """The whole page: summary of ranked findings, one section per builder, then the modules table.
    A page over `limit` bytes is drawn again with half the curves until it fits (or has none)."""
    curves = max((len(s.memory) for s in report.sections), default=0)
    while True:
        text = _page(report, curves)
        if len(text.encode()) <= limit or curves == 0:
            return text
        curves //= 2


def _page(report: DumpReport, curves: int) -> str:
    known = {row[0] for row in report.modules.rows}
    nav = " ".join(f"<a href='#{s.key}'>{html.escape(s.title)}</a>" for s in report.sections)
    body = [
        f"<h1>xlainspect report: {html.escape(report.root)}</h1>",
        f"<nav>{nav} <a href='#modules'>Modules</a></nav>",
        _summary_html(report),
    ]
    body += [_section_html(s, known, curves) for s in report.sections]
    body.append(
        f"<section id='modules'><h2>Modules</h2>{_table_html(report.modules, known, anchor='module')}</section>"
    )
    return page(f"xlainspect report: {report.root}", "\n".join(body), _STYLE)


def _summary_html(report: DumpReport) -> str:
    findings = report.findings()
    rows = "".join(
        f"<tr class='finding'><td>{i}</td><td class='l'><a href='#{f.section}'>{f.section}</a></td>"
        f"<td>{_cost(f)}</td><td class='l'>{html.escape(f.text)}</td></tr>"
        for i, f in enumerate(findings, 1)
    )
    skipped = (
        (
            f"<p class='note'>{len(report.skipped)} file(s) could not be analysed and were skipped: "
            + html.escape(", ".join(str(s.path) for s in report.skipped[:10]))
            + "</p>"
        )
        if report.skipped
        else ""
    )
    if not findings:
        return f"<section id='summary'><h2>Summary</h2><p>Nothing to fix found.</p>{skipped}</section>"
    return (
        f"<section id='summary'><h2>Summary</h2><p class='intro'>{len(report.modules.rows):,} modules. "
        "Findings, costliest first: extra compiles first, then bytes.</p>"
        "<table><thead><tr><th>#</th><th class='l'>section</th><th>cost</th><th class='l'>finding</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>{skipped}</section>"
    )


def _cost(finding: Finding) -> str:
    return f"{finding.cost:,} {'extra compile' + 's' * (finding.cost != 1) if finding.unit == 'compiles' else 'bytes'}"


def _section_html(section: Section, known: set[str], curves: int) -> str:
    parts = [
        f"<section id='{section.key}'><h2>{html.escape(section.title)}</h2>",
        f"<p class='intro'>{html.escape(section.intro)}</p>",
    ]
    for tab in section.tables:
        anchor = "function" if section.key == "recompiles" else None
        parts.append(f"<h3>{html.escape(tab.title)}</h3>{_table_html(tab, known, anchor)}")
    parts += [module_section(m) for m in section.memory[:curves]]
    if len(section.memory) > curves:
        parts.append(
            f"<p class='note'>{len(section.memory) - curves} more memory curves left out to keep the page "
            f"under {PAGE_LIMIT // 1_000_000} MB; xlainspect memory DIR --html draws them all.</p>"
        )
    return "".join(parts) + "</section>"


def _table_html(tab: Table, known: set[str], anchor: str | None = None) -> str:
    """A sortable table; with `anchor`, each row is the target of links to its first cell (`#function-NAME`)."""
    numeric = {c for i, c in enumerate(tab.columns) if is_numeric(tab, i)}
    head = "".join(f"<th{'' if c in numeric else ' class=l'}>{html.escape(c)}</th>" for c in tab.columns)
    body = "".join(_row_html(row, tab.columns, numeric, known, anchor) for row in tab.rows)
    note = f"<p class='note'>{html.escape(tab.note)}</p>" if tab.note else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}"


def _row_html(row: tuple, columns: tuple[str, ...], numeric: set[str], known: set[str], anchor: str | None) -> str:
    target = f" id='{anchor}-{html.escape(str(row[0]))}'" if anchor else ""
    cells = "".join(
        f"<td{'' if c in numeric else ' class=l'}>{_cell_html(c, v, known)}</td>" for c, v in zip(columns, row)
    )
    return f"<tr{target}>{cells}</tr>"


def _cell_html(column: str, value: object, known: set[str]) -> str:
    """Module names link to the modules table, function names to their recompiles row."""
    if column in ("module", "modules"):
        names = value if isinstance(value, tuple) else (value,)
        return ", ".join(_link("module", n) if n in known else html.escape(str(n)) for n in names)
    if column == "function" and value:
        return _link("function", str(value))
    return html.escape(cell_text(value))


def _link(kind: str, name: str) -> str:
    return f"<a href='#{kind}-{html.escape(name)}'>{html.escape(name)}</a>"


def render_markdown(report: DumpReport) -> str:
    """The summary and every section's tables as GitHub-flavoured Markdown (no curves)."""
    lines = [f"# xlainspect report: {report.root}", "", "## Summary", ""]
    lines += [f"{i}. **{_cost(f)}** ({f.section}): {f.text}" for i, f in enumerate(report.findings(), 1)] or [
        "Nothing to fix found."
    ]
    for section in report.sections:
        lines += ["", f"## {section.title}", "", section.intro]
        for tab in section.tables:
            lines += [
                "",
                markdown_table(dataclasses.replace(tab, note=f"_{tab.note}_" if tab.note else "")).rstrip("\n"),
            ]
    return "\n".join(lines) + "\n"
