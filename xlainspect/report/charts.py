"""The report's time charts as inline SVG (no script, font or URL from outside the page).

* `step_breakdown_svg`: one horizontal bar per function, its step time split by op kind.
* `compile_timeline_svg`: one lane per function, each compile a bar at its start, recompiles in red.
* `step_bars_svg`: a column per step, its wall by category.
* `memory_curve_svg`: an allocator's bytes in use over the run, the steps as bands, the peak marked.
* the roofline is `cost_html.roofline_svg`.

Every mark carries its numbers as `data-*` attributes (seconds, not pixels), which the browser test
reads back and compares with the JSON of `cost` and `profile`. Stdlib only.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING

from xlainspect.analysis.timing import CompileMark, FunctionTiming
from xlainspect.report.units import byte_size
from xlainspect.report.views.cost import duration

if TYPE_CHECKING:
    from xlainspect.analysis.profile.model import StepTime

CHART_STYLE = """.kind0{fill:#1f6feb}.kind1{fill:#bf8700}.kind2{fill:#1a7f37}.kind3{fill:#8250df}.kind4{fill:#cf222e}
.kind5{fill:#0598bc}.kind6{fill:#9a6700}.kind7{fill:#6e7781}.compile{fill:#1f6feb}.compile.recompile{fill:#d1242f}
.legend{font-size:12px;fill:#333}.value{font-size:11px;fill:#222}"""

_WIDTH, _BAR, _LEFT, _RIGHT = 900, 22, 190, 90
KINDS_DRAWN = 5
"""Op kinds with their own colour per bar; the rest of a bar is "other"."""


def step_breakdown_svg(functions: list[FunctionTiming]) -> str:
    """Stacked bars, one per function (the longest first, to scale with each other), split by op kind."""
    drawn = [f for f in functions if f.seconds]
    longest = max(max(f.seconds or 0.0, sum(f.by_kind.values())) for f in drawn)  # kinds may sum past a measured total
    kinds = _top_kinds(drawn)
    names = [*kinds, "other"]
    classes = [f"kind{i if k in kinds else KINDS_DRAWN}" for i, k in enumerate(names)]
    legend, legend_rows = _legend(names, classes, _BAR * len(drawn) + 24)
    height = _BAR * len(drawn) + 16 + legend_rows * _LEGEND_ROW
    scale = (_WIDTH - _LEFT - _RIGHT) / longest
    parts: list[str] = []
    for row, timing in enumerate(drawn):
        y = 10 + row * _BAR
        parts.append(_label(timing.function, y + 14))
        x = float(_LEFT)
        for kind, seconds in _split(timing, kinds):
            width = seconds * scale
            css = f"kind{kinds.index(kind)}" if kind in kinds else f"kind{KINDS_DRAWN}"
            tip = f"{timing.function}: {kind} {duration(seconds)} a step"
            parts.append(
                f"<rect class='{css}' x='{x:.1f}' y='{y}' width='{max(width, 0.5):.1f}' height='{_BAR - 6}' "
                f"data-function='{html.escape(timing.function)}' data-kind='{html.escape(kind)}' "
                f"data-seconds='{seconds!r}'><title>{html.escape(tip)}</title></rect>"
            )
            x += width
        parts.append(
            f"<text class='value' x='{x + 4:.1f}' y='{y + 14}' data-function='{html.escape(timing.function)}' "
            f"data-step-seconds='{timing.seconds!r}'>{duration(timing.seconds or 0.0)}</text>"
        )
    return _svg(height, [*parts, *legend], "step-breakdown")


_LEGEND_ROW, _LEGEND_CHAR = 18, 7.0
"""A legend line's height, and the width a legend character takes at most (12 px system-ui)."""
_LABEL_CHARS = 28
"""Characters of a function's name left of its bar; the whole name is its tooltip."""


def _label(name: str, y: float) -> str:
    """A lane's name left of its bar, cut to fit, the whole name as its tooltip."""
    shown = name if len(name) <= _LABEL_CHARS else name[: _LABEL_CHARS - 1] + "…"
    return f"<text class='label' x='4' y='{y}'><title>{html.escape(name)}</title>{html.escape(shown)}</text>"


def _legend(names: list[str], classes: list[str], top: float) -> tuple[list[str], int]:
    """Each name whole beside its colour, flowed into as many lines as the chart's width needs (two kinds
    that share a prefix, `__cudnn$convBackwardFilter` and `__cudnn$convBackwardInput`, stay apart)."""
    parts: list[str] = []
    x, row = 8.0, 0
    for name, css in zip(names, classes):
        width = 14 + _LEGEND_CHAR * len(name) + 18
        if x > 8 and x + width > _WIDTH - 8:
            x, row = 8.0, row + 1
        y = top + row * _LEGEND_ROW
        parts.append(
            f"<rect class='{css}' x='{x:.0f}' y='{y - 10:.0f}' width='10' height='10'/>"
            f"<text class='legend' x='{x + 14:.0f}' y='{y:.0f}'>"
            f"{html.escape(name)}</text>"
        )
        x += width
    return parts, row + 1


def _top_kinds(functions: list[FunctionTiming]) -> list[str]:
    totals: dict[str, float] = {}
    for timing in functions:
        for kind, seconds in timing.by_kind.items():
            totals[kind] = totals.get(kind, 0.0) + seconds
    return sorted(totals, key=lambda k: -totals[k])[:KINDS_DRAWN]


def _split(timing: FunctionTiming, kinds: list[str]) -> list[tuple[str, float]]:
    """The bar's pieces: each drawn kind, then the rest as "other" (the step time less the kinds drawn)."""
    pieces = [(k, s) for k, s in timing.by_kind.items() if k in kinds and s > 0]
    rest = (timing.seconds or 0.0) - sum(s for _, s in pieces)
    return pieces + ([("other", rest)] if rest > (timing.seconds or 0.0) * 1e-9 else [])


def compile_timeline_svg(marks: list[CompileMark], source: str) -> str:
    """One lane per function (in first-compile order); a bar per compile from its start, red for a
    recompile; without seconds (the dump alone) each compile is one slot of the order."""
    lanes = list(dict.fromkeys(m.function for m in marks))
    timed = all(m.seconds is not None for m in marks)
    end = max(m.start_seconds + (m.seconds or 1.0 if timed else 1.0) for m in marks) or 1.0
    start = min(m.start_seconds for m in marks) if timed else 0.0
    span = (end - start) or 1.0
    scale = (_WIDTH - _LEFT - 20) / span
    height = _BAR * len(lanes) + 50
    parts = [f"<text class='label' x='{_LEFT}' y='{height - 8}'>{html.escape(_axis_title(source))}</text>"]
    parts += _ticks(start, end, scale, height - 38) if timed else []
    for row, lane in enumerate(lanes):
        parts.append(_label(lane, 10 + row * _BAR + 14))
    rows = {lane: row for row, lane in enumerate(lanes)}
    for mark in marks:
        seconds = mark.seconds if timed else 1.0
        x = _LEFT + (mark.start_seconds - start) * scale
        css = "compile recompile" if mark.recompile else "compile"
        said = f"{mark.seconds:.3f} s" if mark.seconds is not None else "seconds unknown"
        tip = f"{mark.function}: {'recompile' if mark.recompile else 'first compile'}, {said}"
        data_seconds = "" if mark.seconds is None else f" data-seconds='{mark.seconds!r}'"
        parts.append(
            f"<rect class='{css}' x='{x:.1f}' y='{10 + rows[mark.function] * _BAR}' "
            f"width='{max((seconds or 0.0) * scale, 2.0):.1f}' height='{_BAR - 6}' "
            f"data-function='{html.escape(mark.function)}' data-start='{mark.start_seconds!r}'{data_seconds} "
            f"data-recompile='{'yes' if mark.recompile else 'no'}'><title>{html.escape(tip)}</title></rect>"
        )
    return _svg(height, parts, "compile-timeline")


def _axis_title(source: str) -> str:
    if source == "profile":
        return "seconds on the profile's clock (red: a recompile)"
    if source == "log_clock":
        return "seconds from the first compile, by the jax log's times (red: a recompile)"
    if source == "log_order":
        return "compile seconds, back to back in the jax log's order: its lines carry no time (red: a recompile)"
    return "compile order (module ids; the dump holds no times: pass --log or --profile) (red: a recompile)"


def _ticks(start: float, end: float, scale: float, y: float) -> list[str]:
    """About six round ticks along the time axis, labelled in seconds."""
    step = 10 ** math.floor(math.log10((end - start) / 6 or 1.0))
    step *= next(m for m in (1, 2, 5, 10) if (end - start) / (step * m) <= 8)
    parts: list[str] = []
    tick = math.ceil(start / step) * step
    while tick <= end:
        x = _LEFT + (tick - start) * scale
        parts.append(
            f"<line class='grid' x1='{x:.1f}' y1='0' x2='{x:.1f}' y2='{y:.1f}'/>"
            f"<text class='label' x='{x - 8:.1f}' y='{y + 12:.1f}'>{tick:.3g} s</text>"
        )
        tick += step
    return parts


def _svg(height: int, parts: list[str], chart: str) -> str:
    return (
        f"<svg class='chart' data-chart='{chart}' viewBox='0 0 {_WIDTH} {height}' width='{_WIDTH}' "
        f"height='{height}'>{''.join(parts)}</svg>"
    )


STEP_STYLE = """.cat-compute{fill:#1f6feb}.cat-collectives{fill:#8250df}.cat-copies{fill:#0598bc}
.cat-compile{fill:#d1242f}.cat-autotune{fill:#9a6700}.cat-input{fill:#e6c229}.cat-launch{fill:#e16f24}.cat-host{fill:#8c959f}
.median{font-size:11px;fill:#222;font-weight:bold}.cut{stroke:#fff;stroke-width:2}"""
"""A colour per category of a step's wall: the device's work in cool colours, its idle causes in warm ones
and the host in grey."""

_STEP_PLOT, _STEP_TOP, _STEP_AXIS = 170, 18, 34
"""Height of the columns' area, the space above it (a cut column's label) and below it (step numbers)."""
STEP_CAP = 2.0
"""Columns are drawn to this many times the longest step without a compile; a longer one (a compile
inside it) is cut there, its wall written above it."""


def step_bars_svg(steps: list[StepTime], categories: dict[str, str], median_step: int | None) -> str:
    """A column per step (`StepTime`: its `breakdown` of `wall_seconds`), stacked in the order of
    `categories` ({category: its legend words}), to one scale; a step far longer than the others (a
    compile inside it) is cut at `STEP_CAP` times the longest of the rest, its wall said above it."""
    plain = [s.wall_seconds for s in steps if not s.compiles] or [s.wall_seconds for s in steps]
    cap = min(max(s.wall_seconds for s in steps), STEP_CAP * max(plain)) or 1.0
    scale = _STEP_PLOT / cap
    slot = (_WIDTH - _LEFT_AXIS - 10) / max(len(steps), 1)
    width = max(min(slot * 0.8, 48.0), 1.0)
    bottom = _STEP_TOP + _STEP_PLOT
    parts = _step_axis(cap, bottom)
    every = max(1, round(len(steps) / 30))
    for index, step in enumerate(steps):
        x = _LEFT_AXIS + index * slot + (slot - width) / 2
        parts += _step_column(step, categories, x, width, bottom, scale, cap)
        if index % every == 0 or step.number == median_step:
            median = step.number == median_step
            parts.append(
                f"<text class='{'median' if median else 'label'}' x='{x + width / 2:.1f}' y='{bottom + 14}' "
                f"text-anchor='middle'>{step.number}{' median' if median else ''}</text>"
            )
    parts.append(
        f"<text class='label' x='{_LEFT_AXIS}' y='{bottom + 28}'>step (the median step of those without a "
        "compile is the headline's)</text>"
    )
    present = [c for c in categories if any(s.breakdown.get(c) for s in steps)]
    legend, rows = _legend([categories[c] for c in present], [f"cat-{c}" for c in present], bottom + _STEP_AXIS + 12)
    height = int(bottom + _STEP_AXIS + rows * _LEGEND_ROW + 4)
    return _svg(height, [*parts, *legend], "steps")


_LEFT_AXIS = 64
"""Room left of the step columns for the seconds axis."""


def _step_axis(cap: float, bottom: float) -> list[str]:
    """Three gridlines with their durations: none, half the cap, the cap."""
    parts: list[str] = []
    for share in (0.0, 0.5, 1.0):
        y = bottom - share * _STEP_PLOT
        parts.append(
            f"<line class='grid' x1='{_LEFT_AXIS}' y1='{y:.1f}' x2='{_WIDTH - 8}' y2='{y:.1f}'/>"
            f"<text class='label' x='4' y='{y + 4:.1f}'>{duration(cap * share) if share else '0'}</text>"
        )
    return parts


def _step_column(
    step: StepTime, categories: dict[str, str], x: float, width: float, bottom: float, scale: float, cap: float
) -> list[str]:
    """One step's stacked pieces, bottom up, cut at `cap` (a white line and its wall above a cut one)."""
    parts: list[str] = []
    drawn = 0.0
    for category in categories:
        seconds = step.breakdown.get(category, 0.0)
        if seconds <= 0:
            continue
        shown = min(seconds, cap - drawn)
        if shown > 0:
            y = bottom - (drawn + shown) * scale
            tip = f"step {step.number}: {categories[category]} {duration(seconds)} of {duration(step.wall_seconds)}"
            parts.append(
                f"<rect class='cat-{category}' x='{x:.1f}' y='{y:.1f}' width='{width:.1f}' "
                f"height='{max(shown * scale, 0.5):.1f}' data-step='{step.number}' data-category='{category}' "
                f"data-seconds='{seconds!r}'><title>{html.escape(tip)}</title></rect>"
            )
        drawn += shown
    parts.append(
        f"<text class='value' x='{x + width / 2:.1f}' y='{bottom - drawn * scale - 3:.1f}' text-anchor='middle' "
        f"data-step='{step.number}' data-wall-seconds='{step.wall_seconds!r}' data-bound='{step.bound or ''}' "
        f"data-compiles='{step.compiles}'>{duration(step.wall_seconds) if step.wall_seconds > cap else ''}</text>"
    )
    if step.wall_seconds > cap:
        y = bottom - _STEP_PLOT + 6
        parts.append(f"<line class='cut' x1='{x:.1f}' y1='{y:.1f}' x2='{x + width:.1f}' y2='{y - 4:.1f}'/>")
    return parts


MEMORY_STYLE = """.used{fill:none;stroke:#1f6feb;stroke-width:1.5}.peak{fill:#d1242f}.band{fill:#f0f0f0}
.band.odd{fill:#e6ecf5}"""
_MEMORY_PLOT, _MEMORY_TOP = 160, 20
"""Height of the curve's area and the space above it (the peak's label)."""


def memory_curve_svg(points: list[tuple[float, int]], peak: tuple[float, int], steps: list[StepTime]) -> str:
    """Bytes in use over time as a step line (the level holds until the next event), from the first event
    or step to the last, each step a band numbered under it, the peak a red dot with its bytes above it."""
    start = min([points[0][0], *(s.start_seconds for s in steps)])
    end = max([points[-1][0], *(s.start_seconds + s.wall_seconds for s in steps)])
    scale = (_WIDTH - _LEFT_AXIS - 10) / ((end - start) or 1.0)
    top = max(peak[1], 1)
    bottom = _MEMORY_TOP + _MEMORY_PLOT

    def x(seconds: float) -> float:
        return _LEFT_AXIS + (seconds - start) * scale

    def y(used: int) -> float:
        return bottom - used / top * _MEMORY_PLOT

    parts: list[str] = []
    for step in steps:
        left, right = x(step.start_seconds), x(step.start_seconds + step.wall_seconds)
        parts.append(
            f"<rect class='band{' odd' if step.number % 2 else ''}' x='{left:.1f}' y='{_MEMORY_TOP}' "
            f"width='{max(right - left, 0.5):.1f}' height='{_MEMORY_PLOT}' data-step='{step.number}' "
            f"data-start='{step.start_seconds!r}' data-wall-seconds='{step.wall_seconds!r}'><title>step "
            f"{step.number}: {duration(step.wall_seconds)}</title></rect>"
            f"<text class='label' x='{left + 2:.1f}' y='{bottom + 14}'>{step.number}</text>"
        )
    for share in (0.0, 0.5, 1.0):
        parts.append(
            f"<line class='grid' x1='{_LEFT_AXIS}' y1='{y(int(top * share)):.1f}' x2='{_WIDTH - 8}' "
            f"y2='{y(int(top * share)):.1f}'/><text class='label' x='4' y='{y(int(top * share)) + 4:.1f}'>"
            f"{byte_size(int(top * share)) if share else '0'}</text>"
        )
    line = [f"{x(points[0][0]):.1f},{y(points[0][1]):.1f}"]
    for (_, before), (seconds, used) in zip(points, points[1:]):
        line.append(f"{x(seconds):.1f},{y(before):.1f} {x(seconds):.1f},{y(used):.1f}")
    parts.append(f"<polyline class='used' points='{' '.join(line)}' data-points='{len(points)}'/>")
    tip = f"peak {byte_size(peak[1])} in use at {duration(peak[0])}"
    parts.append(
        f"<circle class='peak' cx='{x(peak[0]):.1f}' cy='{y(peak[1]):.1f}' r='4' data-peak-bytes='{peak[1]}' "
        f"data-peak-seconds='{peak[0]!r}'><title>{html.escape(tip)}</title></circle>"
        f"<text class='value' x='{min(x(peak[0]) + 6, _WIDTH - 200):.1f}' y='{_MEMORY_TOP - 6}'>"
        f"{html.escape(tip)}</text>"
        f"<text class='label' x='{_LEFT_AXIS}' y='{bottom + 30}'>seconds on the profile's clock "
        f"({duration(start)} to {duration(end)}); bands: the steps</text>"
    )
    return _svg(bottom + 38, parts, "memory")
