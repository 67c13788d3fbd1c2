"""`cost --html FILE`: one self-contained page with the roofline of each module as inline SVG.

Log-log axes: arithmetic intensity (FLOPs per byte moved) against attained FLOP/s (FLOPs over the
op's roofline time); the ceiling is min(peak, intensity x HBM bandwidth) at the chip's bf16 and f32
peaks; one point per op, its area proportional to its roofline time. No URLs, no server. Stdlib only.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xlainspect.analysis.chips import Chip
    from xlainspect.analysis.cost import ModuleCost, OpCost

from xlainspect.report.units import rate

_WIDTH, _HEIGHT, _PAD = 900, 420, 60

ROOFLINE_STYLE = """.roof{fill:none;stroke:#d1242f;stroke-width:1.5}.roof.f32{stroke-dasharray:5 3}.grid{stroke:#e4e4e4}
.op{fill:#1f6feb;fill-opacity:.45;stroke:#1f6feb}.op.memory{fill:#bf8700;stroke:#bf8700}
.op.collective{fill:#8250df;stroke:#8250df}.ridge{stroke:#d1242f;stroke-dasharray:2 3}.label{font-size:11px;fill:#555}
.measured{fill:#d1242f;fill-opacity:.45;stroke:#d1242f}.ceiling{font-size:11px;fill:#b31d28}"""
"""The roofline chart's classes (the `report` page draws it too)."""
STYLE = (
    """body{font-family:system-ui,sans-serif;margin:2em;color:#222}
section{margin-bottom:2.5em}svg{background:#fafafa;border:1px solid #ddd}
"""
    + ROOFLINE_STYLE
)


def write_cost_html(modules: list[ModuleCost], path: str | Path) -> None:
    """Write the page for `modules` (ModuleCost rows); modules without a chip get their totals only."""
    body = "\n".join(module_roofline(m) for m in modules)
    page = (
        f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>xlainspect roofline</title>"
        f"<style>{STYLE}</style></head><body><h1>Roofline</h1>\n{body}\n</body></html>\n"
    )
    Path(path).write_text(page, encoding="utf-8")


def module_roofline(module: ModuleCost) -> str:
    title = html.escape(f"{module.module} ({module.function})")
    seconds = "-" if module.roofline_seconds is None else f"{module.roofline_seconds:.3e} s ({module.bound})"
    summary = (
        f"<p>Per call, as executed: {module.flops:,.0f} FLOPs, {module.transcendentals:,.0f} transcendentals, "
        f"{module.bytes_accessed:,} bytes ({module.padded_bytes_accessed:,} with tile padding); "
        f"roofline {seconds} on {html.escape(module.chip or 'no chip (pass --chip)')}. "
        f"XLA's static count (loop bodies once, custom calls unknown): {module.xla_flops:,.0f} FLOPs, "
        f"{module.xla_bytes_accessed:,} bytes.</p>"
    )
    dots = [dot for op in module.ops if (dot := _dot(op)) is not None]
    chart = (
        roofline_svg(module.chip_figures, dots)
        if module.chip and module.chip_figures and dots
        else "<p>No op with FLOPs and a roofline time.</p>"
    )
    return f"<section><h2>{title}</h2>{summary}{chart}</section>"


def _dot(op: OpCost) -> Point | None:
    """The op's dot on its module's roofline; None for one without FLOPs or a roofline time."""
    intensity, seconds = op.arithmetic_intensity, op.roofline_seconds
    if not (seconds and intensity and op.flops > 0):
        return None
    tip = (
        f"{op.name} ({op.kind}) x {op.executions:g} per call: {op.flops:,.0f} FLOPs, {intensity:.2f} FLOP/B, "
        f"{seconds:.3e} s, {op.bound} bound; {op.op_name or ''}"
    )
    return Point(intensity, op.flops / seconds, seconds, f"op {op.bound}", tip)


@dataclass(slots=True)
class Point:
    """One dot of a roofline: FLOPs per padded byte, attained FLOP/s, a weight its area grows with."""

    intensity: float
    flops_per_second: float
    weight: float
    css_class: str
    tip: str
    data: dict[str, object] = field(default_factory=dict[str, object])
    """`data-*` attributes of the dot: its numbers, for scripts and tests to read back."""


def roofline_svg(chip: Chip, points: list[Point]) -> str:
    """Log-log roofline of `chip` (its bf16 and f32 ceilings) with `points` (`cost` and `profile` pages)."""
    intensities = [p.intensity for p in points]
    attained = [p.flops_per_second for p in points]
    peaks = {dtype: chip.peak_flops(dtype) for dtype in ("bf16", "f32")}
    x_range = (math.floor(math.log10(min(intensities))) - 1, math.ceil(math.log10(max(intensities))) + 1)
    y_range = (math.floor(math.log10(min(attained))) - 1, math.ceil(math.log10(max([*attained, *peaks.values()]))))
    scale = _Scale(x_range, y_range)
    parts = [scale.axes()]
    for dtype, peak in peaks.items():
        ridge = peak / chip.hbm_bandwidth
        xs = [10 ** x_range[0], ridge, 10 ** x_range[1]]
        line = " ".join(f"{scale.x(x):.1f},{scale.y(min(peak, x * chip.hbm_bandwidth)):.1f}" for x in xs)
        parts.append(
            f"<polyline class='roof {dtype}' points='{line}'><title>{dtype} peak {peak:.3g} FLOP/s, "
            f"HBM {chip.hbm_bandwidth:.3g} B/s</title></polyline>"
            f"<line class='ridge' x1='{scale.x(ridge):.1f}' y1='{_PAD}' x2='{scale.x(ridge):.1f}' "
            f"y2='{_HEIGHT - _PAD}' data-ridge='{ridge!r}'><title>{dtype} ridge: {ridge:.3g} FLOPs per byte "
            f"(left of it memory bound, right of it compute bound)</title></line>"
            f"<text class='ceiling' x='{_WIDTH - _PAD - 4}' y='{scale.y(peak) + (-4 if dtype == 'bf16' else 12):.1f}' "
            f"text-anchor='end'>{dtype} peak {rate(peak, 'FLOP/s')}</text>"
            f"<text class='ceiling' x='{scale.x(ridge) - 3:.1f}' y='{_HEIGHT - _PAD - 4}' "
            f"transform='rotate(-90 {scale.x(ridge) - 3:.1f} {_HEIGHT - _PAD - 4})'>{dtype} ridge {ridge:.3g} FLOP/B"
            "</text>"
        )
    parts.append(_bandwidth_label(scale, chip.hbm_bandwidth, min(peaks.values()) / chip.hbm_bandwidth))
    heaviest = max(p.weight for p in points)
    for point in points:
        radius = 3 + 12 * math.sqrt(point.weight / heaviest)
        parts.append(
            f"<circle class='{point.css_class}' cx='{scale.x(point.intensity):.1f}' "
            f"cy='{scale.y(point.flops_per_second):.1f}' r='{radius:.1f}'{_data(point.data)}>"
            f"<title>{html.escape(point.tip)}</title></circle>"
        )
    return (
        f"<svg class='chart' data-chart='roofline' viewBox='0 0 {_WIDTH} {_HEIGHT}' width='{_WIDTH}' "
        f"height='{_HEIGHT}'>{''.join(parts)}</svg>"
    )


def _bandwidth_label(scale: _Scale, bandwidth: float, ridge: float) -> str:
    """`HBM 4.8 TB/s` along the sloped ceiling, halfway (in decades) from where it enters the chart to the
    lower ridge, away from the peaks' labels."""
    low = max(10 ** scale.x_range[0], 10 ** scale.y_range[0] / bandwidth)
    at = math.sqrt(low * ridge)
    if at >= ridge:
        return ""
    x, y = scale.x(at), scale.y(at * bandwidth)
    angle = math.degrees(math.atan2(scale.y(10 * at * bandwidth) - y, scale.x(10 * at) - x))
    return (
        f"<text class='ceiling' x='{x:.1f}' y='{y - 4:.1f}' transform='rotate({angle:.1f} {x:.1f} {y:.1f})'>"
        f"HBM {rate(bandwidth, 'B/s')}</text>"
    )


def _data(values: dict[str, object]) -> str:
    return "".join(f" data-{k}='{html.escape(v if isinstance(v, str) else repr(v))}'" for k, v in values.items())


class _Scale:
    """Log10 axes from decades `x_range` and `y_range` to SVG coordinates."""

    def __init__(self, x_range: tuple[int, int], y_range: tuple[int, int]) -> None:
        self.x_range, self.y_range = x_range, (y_range[0], max(y_range[1], y_range[0] + 1))

    def x(self, value: float) -> float:
        low, high = self.x_range
        return _PAD + (math.log10(value) - low) / (high - low) * (_WIDTH - 2 * _PAD)

    def y(self, value: float) -> float:
        low, high = self.y_range
        return _HEIGHT - _PAD - (math.log10(value) - low) / (high - low) * (_HEIGHT - 2 * _PAD)

    def axes(self) -> str:
        parts: list[str] = []
        for decade in range(self.x_range[0], self.x_range[1] + 1):
            x = self.x(10**decade)
            parts.append(
                f"<line class='grid' x1='{x:.1f}' y1='{_PAD}' x2='{x:.1f}' y2='{_HEIGHT - _PAD}'/>"
                f"<text class='label' x='{x - 10:.1f}' y='{_HEIGHT - _PAD + 15}'>1e{decade}</text>"
            )
        for decade in range(self.y_range[0], self.y_range[1] + 1):
            y = self.y(10**decade)
            parts.append(
                f"<line class='grid' x1='{_PAD}' y1='{y:.1f}' x2='{_WIDTH - _PAD}' y2='{y:.1f}'/>"
                f"<text class='label' x='8' y='{y + 4:.1f}'>1e{decade}</text>"
            )
        parts.append(
            f"<text class='label' x='{_WIDTH / 2 - 120}' y='{_HEIGHT - 12}'>arithmetic intensity "
            f"(FLOPs per byte moved, padded)</text><text class='label' x='8' y='20'>attained FLOP/s</text>"
        )
        return "".join(parts)
