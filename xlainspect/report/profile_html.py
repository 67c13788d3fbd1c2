"""`profile --html FILE`: one self-contained page (inline SVG and CSS, no URLs) of a jax.profiler trace.

* The whole trace: steps as bands, one lane per thread that ran ops (ops as bars), compiles marked in
  red on their own lane; a compile after the first steps is what the recompilation checklist asks for.
* The typical step (the one of median duration) alone, where the ops are wide enough to see.
* The roofline of each module that has one (`--dump` and a chip): each op twice, at its roofline
  (blue, as `cost --html` draws it) and as measured (red: FLOPs over measured time per execution).
* The kernels that leave SMs short of work or tensor cores unused (the report's kernel findings), each
  allocator's bytes in use over the run (`charts.memory_curve_svg`) and device time by source line.
Stdlib only.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from xlainspect.report.charts import CHART_STYLE, MEMORY_STYLE, memory_curve_svg
from xlainspect.report.cost_html import STYLE, Point, roofline_svg
from xlainspect.report.page import table_html
from xlainspect.report.views.cost import duration
from xlainspect.report.views.kernels import by_table, kernel_findings, thinned
from xlainspect.report.views.profile import step_source_text

if TYPE_CHECKING:
    from xlainspect.analysis.profile.compiles import CompilePhases
    from xlainspect.analysis.profile.model import ProfileReport, StepTime

_WIDTH, _LANE, _PAD = 1100, 22, 150

TIMELINE_STYLE = """.bar{fill:#1f6feb}.compile{fill:#d1242f}
.mark{stroke:#d1242f;stroke-dasharray:4 3}table{border-collapse:collapse;font-size:13px}
td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}td.l,th.l{text-align:left}"""


def write_profile_html(report: ProfileReport, path: str | Path) -> None:
    """Write the page for a ProfileReport."""
    sections = [
        _timeline_section("Timeline: the whole trace", report, None),
        typical_step(report),
        _roofline_section(report),
        _kernels_section(report),
        *(_memory_section(report, k) for k in range(len(report.memory))),
        _source_section(report),
    ]
    page = (
        f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>xlainspect profile</title>"
        f"<style>{STYLE}\n{TIMELINE_STYLE}\n{CHART_STYLE}\n{MEMORY_STYLE}</style></head><body><h1>Profile</h1>"
        f"<p>{html.escape(', '.join(report.paths))}: {len(report.steps)} steps "
        f"({html.escape(step_source_text(report))}), "
        f"{report.placed[1]:,} op events ({report.placed[0]:,} on an HLO op), {len(report.compiles)} compiles"
        f"{_autotuning_note(report)}</p>\n" + "\n".join(s for s in sections if s) + "\n</body></html>\n"
    )
    Path(path).write_text(page, encoding="utf-8")


def _autotuning_note(report: ProfileReport) -> str:
    tuning = report.autotuning
    if tuning is None:
        return ""
    return f"; autotuning apart: {tuning.kernels:,} kernels, {tuning.seconds * 1e3:.3g} ms"


def typical_step(report: ProfileReport) -> str:
    if not report.steps:
        return ""
    step = sorted(report.steps, key=lambda s: s.wall_seconds)[len(report.steps) // 2]
    return _timeline_section(f"Step {step.number} (the median step, {step.wall_seconds * 1e3:.3g} ms)", report, step)


def _timeline_section(title: str, report: ProfileReport, step: StepTime | None) -> str:
    start, end = _window(report, step)
    ops = report.op_events
    began = ops.start_ns / 1e9 if ops is not None else np.zeros(0)
    events = np.flatnonzero((began >= start) & (began <= end))
    compiles = [c for c in report.compiles if c.start_seconds <= end and c.start_seconds + c.seconds >= start]
    lanes = sorted({ops.text(c) for c in ops.line[events].tolist()}) if ops is not None else []
    height = _LANE * (len(lanes) + 2) + 30
    x = _linear(start, end)
    parts = [
        _band(x, s, height)
        for s in report.steps
        if s.start_seconds <= end and s.start_seconds + s.wall_seconds >= start
    ]
    for row, lane in enumerate(lanes, start=1):
        parts.append(f"<text class='label' x='4' y='{row * _LANE + 15}'>{html.escape(lane[:24])}</text>")
    rows = {lane: row for row, lane in enumerate(lanes, start=1)}
    for k in events.tolist() if ops is not None else []:
        assert ops is not None
        seconds, at = float(ops.duration_ns[k]) / 1e9, float(ops.start_ns[k]) / 1e9
        tip = f"{ops.text(int(ops.function[k]))} {ops.text(int(ops.hlo_op[k]))}: {seconds * 1e6:.3g} us at {at:.6f} s"
        parts.append(_bar("bar", x(at), x(at + seconds), rows[ops.text(int(ops.line[k]))] * _LANE + 3, tip))
    compile_row = (len(lanes) + 1) * _LANE + 3
    parts.append(f"<text class='label' x='4' y='{compile_row + 12}'>compiles</text>")
    for event in compiles:
        tip = f"{event.name} {event.module or event.function}: {event.seconds:.3f} s in step {event.step}"
        tip += _phases_tip(event.phases)
        parts.append(
            f"<line class='mark' x1='{x(event.start_seconds):.1f}' y1='0' x2='{x(event.start_seconds):.1f}' "
            f"y2='{height}'/>"
            + _bar("compile", x(event.start_seconds), x(event.start_seconds + event.seconds), compile_row, tip)
        )
    svg = f"<svg viewBox='0 0 {_WIDTH} {height}' width='{_WIDTH}' height='{height}'>{''.join(parts)}</svg>"
    return f"<section><h2>{html.escape(title)}</h2>{svg}</section>"


def _phases_tip(phases: CompilePhases | None) -> str:
    """A compile's time by phase, for its bar's tooltip."""
    if phases is None:
        return ""
    jax = f"jax {phases.jax_seconds:.3f} s, " if phases.jax_seconds is not None else ""
    return (
        f" ({jax}XLA passes {phases.passes_seconds:.3f} s, autotuning {phases.autotuning_seconds:.3f} s, "
        f"codegen and the rest {phases.codegen_seconds:.3f} s)"
    )


def _window(report: ProfileReport, step: StepTime | None) -> tuple[float, float]:
    if step is not None:
        return step.start_seconds, step.start_seconds + step.wall_seconds
    ops = report.op_events
    ends: list[float] = (ops.start_ns / 1e9 + ops.duration_ns / 1e9).tolist() if ops is not None else []
    ends += [c.start_seconds + c.seconds for c in report.compiles] + [
        s.start_seconds + s.wall_seconds for s in report.steps
    ]
    return 0.0, max(ends, default=1.0) or 1.0


def _linear(start: float, end: float) -> Callable[[float], float]:
    span = (end - start) or 1.0
    return lambda seconds: _PAD + (min(max(seconds, start), end) - start) / span * (_WIDTH - _PAD - 10)


def _band(x: Callable[[float], float], step: StepTime, height: int) -> str:
    left, right = x(step.start_seconds), x(step.start_seconds + step.wall_seconds)
    odd = " odd" if step.number % 2 else ""
    return (
        f"<rect class='band{odd}' x='{left:.1f}' y='0' width='{max(right - left, 0.5):.1f}' height='{height}'>"
        f"<title>step {step.number}: {step.wall_seconds * 1e3:.3g} ms</title></rect>"
        f"<text class='label' x='{left + 2:.1f}' y='{height - 4}'>{step.number}</text>"
    )


def _bar(css: str, left: float, right: float, y: float, tip: str) -> str:
    return (
        f"<rect class='{css}' x='{left:.1f}' y='{y:.1f}' width='{max(right - left, 0.5):.1f}' "
        f"height='{_LANE - 6}'><title>{html.escape(tip)}</title></rect>"
    )


def _roofline_section(report: ProfileReport) -> str:
    """Predicted and measured points per op with FLOPs; a note where no chip was given."""
    points: list[Point] = []
    for op in report.ops:
        flops, moved, roofline, measured = op.flops, op.bytes_accessed, op.roofline_seconds, op.seconds_per_execution
        if not (flops and flops > 0 and moved and roofline and measured):
            continue
        intensity = flops / moved
        label = f"{op.module} {op.name} ({op.kind}): {op.op_name or ''}"
        points.append(
            Point(intensity, flops / roofline, roofline, f"op {op.bound}", f"{label}; roofline {roofline:.3e} s")
        )
        points.append(
            Point(
                intensity,
                flops / measured,
                measured,
                "measured",
                f"{label}; measured {measured:.3e} s an execution, efficiency {op.efficiency:.3g}",
            )
        )
    if not points or report.chip is None:  # an op's roofline time needs a chip
        return (
            "<section><h2>Roofline</h2><p>No op with FLOPs and a roofline time: pass --dump, and on CPU a "
            "chip (--chip, or --peak-flops with --hbm-bandwidth).</p></section>"
        )
    return (
        f"<section><h2>Roofline: each op at its roofline (blue) and as measured (red)</h2>"
        f"{roofline_svg(report.chip, points)}</section>"
    )


def _kernels_section(report: ProfileReport) -> str:
    """The report's kernel findings (`views.kernels.kernel_findings`), each with its device time a step."""
    found = kernel_findings(report)
    if not found:
        return ""
    items = "".join(
        f"<li><b>{html.escape(duration(f.cost))} a step</b>: {html.escape(f.text)}"
        + (f" <span class='src'>{html.escape(f.source)}</span>" if f.source else "")
        + "</li>"
        for f in found
    )
    return f"<section id='kernels'><h2>Kernels that leave the GPU short of work</h2><ol>{items}</ol></section>"


def _memory_section(report: ProfileReport, index: int) -> str:
    """One allocator's bytes in use over the run, the steps as bands, the peak marked."""
    allocator = report.memory[index]
    points = thinned(allocator.timeline)
    peak = (allocator.peak_time_seconds, allocator.peak_bytes_in_trace)
    return (
        f"<section><h2 data-allocator='{html.escape(allocator.name)}'>{html.escape(allocator.name)}: bytes in use "
        f"over the run ({len(points):,} of its {allocator.events:,} events drawn)</h2>"
        f"{memory_curve_svg(points, peak, report.steps)}</section>"
    )


def _source_section(report: ProfileReport) -> str:
    """Device time by the user's source line, as `profile --by source` lists it."""
    if not report.by_source:
        return ""
    found = by_table(report, "source")
    return f"<section id='source'><h2>{html.escape(found.title or '')}</h2>{table_html(found, set())}</section>"
