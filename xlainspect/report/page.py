"""The dump report as one self-contained HTML page or as Markdown (a pull-request comment, a wiki page).

The HTML page is made of `memory_html`'s pieces (page skeleton, style, sortable tables, the memory
curves) and links each function to its modules, and each module name in any table to its row in the
modules table. Stdlib only.
"""

from __future__ import annotations

import dataclasses
import html
from typing import cast

from xlainspect.analysis.timing import OpTiming
from xlainspect.report.charts import (
    CHART_STYLE,
    MEMORY_STYLE,
    STEP_STYLE,
    compile_timeline_svg,
    memory_curve_svg,
    step_bars_svg,
    step_breakdown_svg,
)
from xlainspect.report.cost_html import ROOFLINE_STYLE, Point, roofline_svg
from xlainspect.report.document import Table, cell_text, is_numeric, markdown_table
from xlainspect.report.dump_report import DumpReport
from xlainspect.report.memory_html import module_section, page
from xlainspect.report.sections import (
    A_RUN,
    A_STEP,
    CompileTimeline,
    Finding,
    HostBars,
    MemoryCurve,
    OpDetail,
    Roofline,
    Section,
    StepBars,
    StepBreakdown,
)
from xlainspect.report.views.cost import duration

_STYLE = (
    """nav a{margin-right:1em}.finding td{vertical-align:top}.note{color:#666;font-style:italic}
.intro{max-width:70em}td a{color:#0b5394}tr:target{background:#fff3b0}.chart{display:block;margin:.8em 0}
pre.hlo{background:#f6f8fa;border:1px solid #ddd;padding:.5em;overflow-x:auto;font-size:12px}
pre.hlo b{background:#fff3b0}details.op:target{outline:2px solid #bf8700}.src{font-family:monospace}"""
    + """h1{font-size:1.4em}.headline{font-size:1.15em;font-weight:bold;margin:.4em 0}
ul.brief{margin:.3em 0;padding-left:1.4em}"""
    + ROOFLINE_STYLE
    + CHART_STYLE
    + STEP_STYLE
    + MEMORY_STYLE
)


FIRST_SCREEN = "time"
"""The section the page opens with, above the summary of every finding: where the time goes."""
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
    known = {f"module-{row[0]}" for row in report.modules.rows}
    known |= {f"function-{row[0]}" for s in report.sections if s.key == "recompiles" for row in s.tables[0].rows}
    nav = " ".join(f"<a href='#{s.key}'>{html.escape(s.title)}</a>" for s in report.sections)
    first = [s for s in report.sections if s.key == FIRST_SCREEN]
    body = [
        f"<h1>xlainspect report: {html.escape(report.root)}</h1>",
        f"<nav>{nav} <a href='#summary'>Summary</a> <a href='#modules'>Modules</a></nav>",
        *(_section_html(s, known, curves) for s in first),
        _summary_html(report),
    ]
    body += [_section_html(s, known, curves) for s in report.sections if s.key != FIRST_SCREEN]
    body.append(f"<section id='modules'><h2>Modules</h2>{table_html(report.modules, known, anchor='module')}</section>")
    return page(f"xlainspect report: {report.root}", "\n".join(body), _STYLE)


def _summary_html(report: DumpReport) -> str:
    findings = report.findings()
    rows = "".join(
        f"<tr class='finding'><td>{i}</td><td class='l'><a href='#{f.section}'>{f.section}</a></td>"
        f"<td>{_cost(f)}</td><td class='l'>{_finding_text(f)}</td></tr>"
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
        "Findings, costliest first, in one currency: seconds the traced run paid, whether each step pays them "
        "(an op's time lost, the host's idle time) or the run once (compiling); then seconds a step where the "
        "run's steps are unknown (no profile), extra compiles where no time is known, then bytes.</p>"
        "<table><thead><tr><th>#</th><th class='l'>section</th><th>cost</th><th class='l'>finding</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>{skipped}</section>"
    )


def _cost(finding: Finding) -> str:
    """`1.2 ms a step (0.84 s a run)`, `10.81 s a run`: what each step or the run pays, the run's figure
    (what the summary ranks by) beside a step's."""
    if finding.unit == A_STEP:
        run = f" ({duration(finding.run_seconds)} a run)" if finding.run_seconds is not None else ""
        return f"{duration(finding.cost)} a step{run}"
    if finding.unit == A_RUN:
        return f"{duration(finding.cost)} a run"
    if finding.unit == "compiles":
        return f"{finding.cost:,} extra compile{'s' * (finding.cost != 1)}"
    return f"{finding.cost:,} bytes"


def _finding_text(finding: Finding) -> str:
    """The finding, linked to its op's HLO neighbourhood, with the source line behind it."""
    text = html.escape(finding.text)
    if finding.op:  # "module op (kind): what to do": the op links to its HLO neighbourhood
        where, _, advice = finding.text.partition(": ")
        text = f"<a href='#{html.escape(finding.op)}'>{html.escape(where)}</a>: {html.escape(advice)}"
    if finding.source:
        text += f" <span class='src'>{html.escape(finding.source)}</span>"
    return text


def _section_html(section: Section, known: set[str], curves: int) -> str:
    parts = [f"<section id='{section.key}'><h2>{html.escape(section.title)}</h2>"]
    if section.headline:
        parts.append(f"<p class='headline' data-first='headline'>{html.escape(section.headline)}</p>")
    first = [chart for chart in section.charts if isinstance(chart, (HostBars, StepBars))]  # under the headline
    parts += [_chart_html(chart) for chart in first]
    if section.brief:
        items = "".join(f"<li><a href='#{html.escape(a)}'>{html.escape(text)}</a></li>" for text, a in section.brief)
        parts.append(f"<ul class='brief' data-first='recompiles'>{items}</ul>")
    parts.append(f"<p class='intro'>{html.escape(section.intro)}</p>")
    if section.links:
        links = " · ".join(f"<a href='#{html.escape(a)}'>{html.escape(text)}</a>" for text, a in section.links)
        parts.append(f"<p>See: {links}</p>")
    parts += [_chart_html(chart) for chart in section.charts if chart not in first]
    if section.findings and section.key == FIRST_SCREEN:
        parts.append(_findings_html(section.findings))
    for tab in section.tables:
        anchor = "function" if section.key == "recompiles" else None
        parts.append(f"<h3>{html.escape(tab.title or '')}</h3>{table_html(tab, known, anchor)}")
    parts += [_detail_html(d) for d in section.details]
    parts += [module_section(m) for m in section.memory[:curves]]
    if len(section.memory) > curves:
        parts.append(
            f"<p class='note'>{len(section.memory) - curves} more memory curves left out to keep the page "
            f"under {PAGE_LIMIT // 1_000_000} MB; xlainspect memory DIR --html draws them all.</p>"
        )
    return "".join(parts) + "</section>"


def _findings_html(findings: list[Finding]) -> str:
    """The first screen's list: the idle time and the ops that lose the most, what to do, linked to its HLO."""
    items = "".join(f"<li><b>{_cost(f)}</b>: {_finding_text(f)}</li>" for f in findings)
    return f"<h3>What loses the most time (idle causes, ops), and what to do</h3><ol>{items}</ol>"


def _chart_html(chart: object) -> str:
    """A section's chart as inline SVG, with a heading saying what it shows."""
    if isinstance(chart, StepBreakdown):
        shown = f" (the {len(chart.functions)} slowest of {chart.of:,})" if chart.of > len(chart.functions) else ""
        return f"<h3>Device time a step per function, by op kind{shown}</h3>" + step_breakdown_svg(chart.functions)
    if isinstance(chart, Roofline):
        return (
            "<h3>Roofline (blue: compute bound, amber: memory bound, purple: collective; area: the op's time)</h3>"
            + roofline_svg(chart.chip, [_point(op) for op in chart.ops])
        )
    if isinstance(chart, StepBars):
        return (
            f"<div data-first='steps'><h3>Each step's wall time: the {html.escape(chart.device)} busy by kind, "
            f"idle by cause</h3>{step_bars_svg(chart.steps, chart.categories, chart.median_step)}</div>"
        )
    if isinstance(chart, HostBars):
        return (
            "<div data-first='hosts'><h3>Median step per host (# waiting in collectives, = other device work, "
            f". idle)</h3><pre class='bars'>{html.escape(chr(10).join(chart.lines))}</pre></div>"
        )
    if isinstance(chart, MemoryCurve):
        drawn = (
            f", {len(chart.points):,} of its {chart.events:,} events drawn" if len(chart.points) < chart.events else ""
        )
        return (
            f"<h3 data-allocator='{html.escape(chart.allocator)}'>{html.escape(chart.allocator)}: bytes in use over "
            f"the run{drawn}</h3>" + memory_curve_svg(chart.points, chart.peak, chart.steps)
        )
    if isinstance(chart, CompileTimeline):
        return "<h3>Compile timeline</h3>" + compile_timeline_svg(chart.marks, chart.source)
    raise TypeError(f"no drawing for {type(chart).__name__}")


def _point(op: OpTiming) -> Point:
    """A roofline dot: the op at its achieved (measured) FLOP/s, else at its roofline's."""
    seconds, intensity, attained = op.measured_seconds or op.roofline_seconds, op.intensity, op.flops_per_second
    assert seconds and intensity and attained, "the roofline draws the ops with FLOPs, bytes and a time"
    said = "measured" if op.measured_seconds else "roofline"
    tip = (
        f"{op.module} {op.name} ({op.kind}): {intensity:.3g} FLOP/B, {attained:.3g} FLOP/s "
        f"({said}), {duration(seconds)} per run, {op.bound or '?'} bound; {op.op_name or ''}"
    )
    data: dict[str, object] = {
        "module": op.module,
        "op": op.name,
        "intensity": intensity,
        "flops-per-second": attained,
        "seconds": seconds,
        "time": said,
        "bound": op.bound or "",
    }
    return Point(intensity, attained, seconds, f"op {op.bound or ''}".strip(), tip, data)


def _detail_html(detail: OpDetail) -> str:
    """The op's HLO lines and its neighbourhood (`graph --around`), the op in bold, with its source line."""
    lines = "\n".join(
        f"{number:>6}  " + (f"<b>{html.escape(text)}</b>" if centre else html.escape(text))
        for number, text, centre in detail.lines
    )
    source = f" from <span class='src'>{html.escape(detail.source)}</span>" if detail.source else ""
    return (
        f"<details class='op' id='{html.escape(detail.anchor)}' open><summary>{html.escape(detail.module)} "
        f"{html.escape(detail.name)}{source}: <span class='src'>{html.escape(detail.path)}</span> "
        f"(xlainspect graph FILE --around {html.escape(detail.name)})</summary><pre class='hlo'>{lines}</pre></details>"
    )


def table_html(tab: Table, known: set[str], anchor: str | None = None) -> str:
    """A sortable table; with `anchor`, each row is the target of links to its first cell (`#function-NAME`)."""
    numeric = {c for i, c in enumerate(tab.columns) if is_numeric(tab, i)}
    head = "".join(f"<th{'' if c in numeric else ' class=l'}>{html.escape(c)}</th>" for c in tab.columns)
    body = "".join(_row_html(row, tab.columns, numeric, known, anchor) for row in tab.rows)
    note = f"<p class='note'>{html.escape(tab.note)}</p>" if tab.note else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}"


def _row_html(
    row: tuple[object, ...], columns: tuple[str, ...], numeric: set[str], known: set[str], anchor: str | None
) -> str:
    target = f" id='{anchor}-{html.escape(str(row[0]))}'" if anchor else ""
    cells = "".join(
        f"<td{'' if c in numeric else ' class=l'}>{_cell_html(c, v, known)}</td>" for c, v in zip(columns, row)
    )
    return f"<tr{target}>{cells}</tr>"


def _cell_html(column: str, value: object, known: set[str]) -> str:
    """Module names link to the modules table, function names to their recompiles row (`known`: the
    anchors the page has)."""
    if column in ("module", "modules"):
        names = cast("tuple[object, ...]", value) if isinstance(value, tuple) else (value,)
        return ", ".join(_link("module", str(n)) if f"module-{n}" in known else html.escape(str(n)) for n in names)
    if column == "function" and f"function-{value}" in known:
        return _link("function", str(value))
    return html.escape(cell_text(_words(value)))


def _words(value: object) -> object:
    """A yes/no for a boolean: the page speaks English, not Python."""
    return ("yes" if value else "no") if isinstance(value, bool) else value


def _link(kind: str, name: str) -> str:
    return f"<a href='#{kind}-{html.escape(name)}'>{html.escape(name)}</a>"


def render_markdown(report: DumpReport) -> str:
    """The summary and every section's tables as GitHub-flavoured Markdown (no curves)."""
    lines = [f"# xlainspect report: {report.root}", "", "## Summary", ""]
    lines += [
        f"{i}. **{_cost(f)}** ({f.section}): {f.text}" + (f" (`{f.source}`)" if f.source else "")
        for i, f in enumerate(report.findings(), 1)
    ] or ["Nothing to fix found."]
    for section in report.sections:
        lines += ["", f"## {section.title}", ""]
        lines += [f"**{section.headline}**", ""] if section.headline else []
        bars = [line for chart in section.charts if isinstance(chart, HostBars) for line in chart.lines]
        lines += ["```", *bars, "```", ""] if bars else []
        lines.append(section.intro)
        lines += ["", *(f"- {text}" for text, _ in section.brief)] if section.brief else []
        for tab in section.tables:
            rows = tuple(tuple(_words(v) for v in row) for row in tab.rows)
            shown = dataclasses.replace(tab, rows=rows, note=f"_{tab.note}_" if tab.note else "")
            lines += ["", markdown_table(shown).rstrip("\n")]
        for detail in section.details:
            hlo = "\n".join(f"{number:>6}  {text}" for number, text, _ in detail.lines)
            lines += [
                "",
                f"**{detail.module} {detail.name}** ({detail.source or 'no source line'})",
                "",
                "```",
                hlo,
                "```",
            ]
    return "\n".join(lines) + "\n"
