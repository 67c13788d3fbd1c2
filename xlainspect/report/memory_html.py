"""`memory --html FILE`: one self-contained page, the memory-over-time curve of each module as inline SVG.

No server, no external URL: the page is plain HTML with inline CSS, SVG and a few lines of inline JS
(hover shows the program point, its instruction and the live bytes; a click on a column heading sorts
the table), so it opens offline. Stdlib only. `report --html` builds its page from the same pieces:
`page`, `module_section` and the style and script.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from xlainspect.analysis.memory import ModuleMemory
from xlainspect.report.units import byte_size

_WIDTH, _HEIGHT, _PAD = 900, 260, 50

STYLE = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}
section{margin-bottom:2.5em}svg{background:#fafafa;border:1px solid #ddd}
.curve{fill:none;stroke:#1f6feb;stroke-width:1.5}.peak{fill:#d1242f}
.axis{stroke:#888}.grid{stroke:#e4e4e4}.label{font-size:11px;fill:#555}#tip{font-family:monospace;min-height:1.3em}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}
td.l,th.l{text-align:left}thead th{cursor:pointer;background:#f3f3f3}"""

SCRIPT = """function sortBy(th){
  var table=th.closest('table'),body=table.tBodies[0],col=th.cellIndex,up=th.dataset.dir!=='up';
  var rows=Array.from(body.rows),key=function(r){var t=r.cells[col]?r.cells[col].textContent:'';
    var n=Number(t.replace(/,/g,''));return t!==''&&!isNaN(n)?n:t.toLowerCase();};
  rows.sort(function(a,b){var x=key(a),y=key(b);if(typeof x!==typeof y){x=String(x);y=String(y);}
    return (x<y?-1:x>y?1:0)*(up?1:-1);});
  th.dataset.dir=up?'up':'down';rows.forEach(function(r){body.appendChild(r);});
}
document.querySelectorAll('table thead th').forEach(function(th){
  th.title='sort';th.addEventListener('click',function(){sortBy(th);});});
function binary(n){var u=['bytes','KiB','MiB','GiB','TiB'],i=0;while(n>=1024&&i<u.length-1){n/=1024;i++;}
  return i?(n>=100?n.toFixed(0):String(Number(n.toPrecision(3))))+' '+u[i]:n+' bytes';}
document.querySelectorAll('svg[data-curve]').forEach(function(svg){
  var d=JSON.parse(svg.dataset.curve),tip=svg.parentNode.querySelector('.tip');
  svg.addEventListener('mousemove',function(e){
    var r=svg.getBoundingClientRect(),x=(e.clientX-r.left)*svg.viewBox.baseVal.width/r.width;
    var t=Math.round((x-d.pad)/d.step);if(t<0||t>=d.bytes.length)return;
    tip.textContent='point '+t+': '+(d.seq[t]||'(end of program)')+' - '+binary(d.bytes[t])+' live ('+
      d.bytes[t].toLocaleString()+' bytes)';});
});
document.body.dataset.ready='1';"""


def write_memory_html(modules: list[ModuleMemory], path: str | Path) -> None:
    """Write the page for `modules` (those without live ranges get their totals only)."""
    body = "\n".join(module_section(m) for m in modules)
    Path(path).write_text(page("xlainspect memory", f"<h1>Memory over time</h1>\n{body}"), encoding="utf-8")


def page(title: str, body: str, style: str = "") -> str:
    """A whole page: `body` with the shared style (plus `style`) and script inline. The script marks the
    body `data-ready` once it has run, which the browser test checks."""
    return (
        f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}{style}</style></head><body>\n{body}\n<script>{SCRIPT}</script></body></html>\n"
    )


def module_section(memory: ModuleMemory) -> str:
    """One module: its totals, the curve (when it has live ranges) and the buffers live at the peak."""
    title = html.escape(f"{memory.module} ({memory.function})")
    summary = (
        f"<p>allocations {_sized(memory.total_bytes)} (XLA: {_sized(memory.reported_total_bytes)}); "
        f"peak {_sized(memory.peak_bytes)} at point {_or_dash(memory.peak_time)} "
        f"{html.escape(memory.peak_instruction or '')}</p>"
    )
    chart = _chart(memory) if memory.curve else "<p>No live ranges in this dump (no *-live-range.txt).</p>"
    section_id = f"memory-{html.escape(memory.module)}"
    return f"<section id='{section_id}'><h2>{title}</h2>{summary}{chart}{_top_table(memory)}</section>"


def _chart(memory: ModuleMemory) -> str:
    curve = memory.curve
    top = max(curve) or 1
    step = (_WIDTH - 2 * _PAD) / max(len(curve) - 1, 1)
    points = " ".join(f"{_PAD + t * step:.1f},{_y(b, top):.1f}" for t, b in enumerate(curve))
    data = json.dumps({"bytes": list(curve), "seq": list(memory.sequence), "pad": _PAD, "step": step})
    peak = memory.peak_time or 0
    return (
        f"<svg viewBox='0 0 {_WIDTH} {_HEIGHT}' width='{_WIDTH}' height='{_HEIGHT}' data-curve='{html.escape(data)}'>"
        f"<line class='axis' x1='{_PAD}' y1='{_HEIGHT - _PAD}' x2='{_WIDTH - _PAD}' y2='{_HEIGHT - _PAD}'/>"
        f"<line class='axis' x1='{_PAD}' y1='{_PAD / 2}' x2='{_PAD}' y2='{_HEIGHT - _PAD}'/>"
        f"<line class='grid' x1='{_PAD}' y1='{_y(top, top):.1f}' x2='{_WIDTH - _PAD}' y2='{_y(top, top):.1f}'/>"
        f"<line class='grid' x1='{_PAD}' y1='{_y(top / 2, top):.1f}' x2='{_WIDTH - _PAD}' y2='{_y(top / 2, top):.1f}'/>"
        f"<text class='label' x='2' y='{_y(top, top) + 4:.1f}'>{byte_size(top)}</text>"
        f"<text class='label' x='2' y='{_y(top / 2, top) + 4:.1f}'>{byte_size(top // 2)}</text>"
        f"<text class='label' x='{_PAD}' y='{_HEIGHT - _PAD + 16}'>0</text>"
        f"<text class='label' x='{_WIDTH - _PAD}' y='{_HEIGHT - _PAD + 16}'>{len(curve) - 1}</text>"
        f"<text class='label' x='{_WIDTH / 2}' y='{_HEIGHT - 8}'>program point (live bytes, memory space 0)</text>"
        f"<polyline class='curve' points='{points}'/>"
        f"<circle class='peak' cx='{_PAD + peak * step:.1f}' cy='{_y(curve[peak], top):.1f}' r='4'/></svg>"
        f"<div class='tip'>hover the curve</div>"
    )


def _y(value: float, top: int) -> float:
    return _HEIGHT - _PAD - value / top * (_HEIGHT - 1.5 * _PAD)


def _top_table(memory: ModuleMemory) -> str:
    if not memory.top:
        return ""
    head = (
        "<thead><tr><th class='l'>buffer</th><th class='l'>shape</th><th>bytes</th><th>logical</th>"
        "<th class='l'>kind</th><th class='l'>op_name</th></tr></thead>"
    )
    rows = "".join(
        f"<tr><td class='l'>{html.escape(b.name)}</td><td class='l'>{html.escape(b.shape)}</td><td>{b.bytes:,}</td>"
        f"<td>{b.logical_bytes:,}</td><td class='l'>{b.kind}</td><td class='l'>{html.escape(b.op_name or '')}</td></tr>"
        for b in memory.top
    )
    return f"<h3>Live at the peak</h3><table>{head}<tbody>{rows}</tbody></table>"


def _sized(count: int | None) -> str:
    """`1.5 MiB (1,572,864 bytes)`: the unit a person reads, the count a search finds."""
    if count is None:
        return "-"
    return f"{count:,} bytes" if count < 1024 else f"{byte_size(count)} ({count:,} bytes)"


def _or_dash(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"
