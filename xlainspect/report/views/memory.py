"""`memory`: allocations, the peak and the buffers live there; the report's memory section."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xlainspect.analysis.commands.report import DumpFacts
from xlainspect.report.document import Block, Document, record, table
from xlainspect.report.sections import Finding, Section, largest
from xlainspect.report.sections import table as section_table

if TYPE_CHECKING:
    from xlainspect.analysis.commands.memory import MemoryReport
    from xlainspect.analysis.memory import ModuleMemory, PeakBuffer


_MEMORY_COLUMNS = (
    "module",
    "function",
    "total_bytes",
    "reported_total_bytes",
    "parameter",
    "output",
    "temporary",
    "preallocated-temp",
    "thread-local",
    "constant",
    "peak_bytes",
    "peak_time",
    "peak_instruction",
)


_MEMORY_COMPACT = (
    "module",
    "total_bytes",
    "parameter",
    "output",
    "preallocated-temp",
    "peak_bytes",
    "peak_instruction",
)


_PEAK_COLUMNS = ("name", "shape", "bytes", "logical_bytes", "kind", "live_from", "live_to", "op_name", "source")


def memory_document(report: MemoryReport) -> Document:
    """Per module, bytes by allocation kind and the peak; then the buffers live at each peak (bars on a
    terminal, every column in Markdown)."""
    summaries = [_memory_summary(r) for r in report.modules]
    title = "Memory per module (bytes)"
    data = {"modules": [memory_record(r) for r in report.modules]}
    blocks: list[Block] = [table(title, summaries, _MEMORY_COMPACT)]
    markdown: list[Block] = [table(title, summaries, _MEMORY_COLUMNS)]
    for row in report.modules:
        if row.top:
            peak = f"{row.module}: live at the peak (point {row.peak_time}, {row.peak_instruction or 'end'})"
            blocks.append(table(peak, _bars(row.top), ("buffer", "shape", "bytes", "", "op_name")))
            markdown.append(table(peak, row.top, _PEAK_COLUMNS))
    return Document(data, blocks, csv=table(title, summaries, _MEMORY_COLUMNS), markdown=markdown)


def _memory_summary(row: ModuleMemory) -> dict[str, object]:
    return {
        "module": row.module,
        "function": row.function,
        "total_bytes": row.total_bytes,
        "reported_total_bytes": row.reported_total_bytes,
        **row.by_kind,
        "peak_bytes": row.peak_bytes,
        "peak_time": row.peak_time,
        "peak_instruction": row.peak_instruction,
    }


def memory_record(row: ModuleMemory) -> dict[str, Any]:
    document: dict[str, Any] = record(row)
    document.pop("sequence")
    document.pop("curve")
    document.pop("unparsed")  # a skipped file: the command lists it with the others
    return document


def _bars(buffers: tuple[PeakBuffer, ...]) -> list[dict[str, object]]:
    """The biggest buffers live at the peak as horizontal bars, sized against the biggest."""
    biggest = max(b.bytes for b in buffers) or 1
    return [
        {
            "buffer": b.name,
            "shape": b.shape,
            "bytes": b.bytes,
            "": "█" * max(1, round(30 * b.bytes / biggest)),
            "op_name": b.op_name,
        }
        for b in buffers
    ]


# ---- the report's section


MAX_CURVES = 12
"""Memory curves drawn, for the modules with the highest peaks."""


def memory_section(source: DumpFacts) -> Section | None:
    """memory: totals and peak per module, the curve and top buffers of the highest peaks."""
    rows = [f.memory for f in source.facts if f.memory is not None]
    if not rows:
        return None
    peaks = sorted(rows, key=lambda r: -(r.peak_bytes or 0))
    tab = section_table(
        "memory per module (bytes)",
        ("module", "function", "total_bytes", "peak_bytes", "peak_instruction"),
        [(r.module, r.function, r.total_bytes, r.peak_bytes, r.peak_instruction or "") for r in peaks],
        "xlainspect memory lists every module",
    )
    findings = [
        Finding(
            "memory",
            f"{r.module} peaks at {r.peak_bytes:,} bytes at {r.peak_instruction or 'the end'}",
            r.peak_bytes or 0,  # `largest` keeps nonzero peaks only
            "bytes",
        )
        for r in largest(peaks, lambda r: r.peak_bytes or 0)
    ]
    curves = [r for r in peaks if r.curve][:MAX_CURVES]
    drawable = sum(1 for r in rows if r.curve)
    intro = f"{len(rows):,} modules with a buffer assignment; curves of the {len(curves)} highest peaks" + (
        f" of {drawable:,} with live ranges (xlainspect memory DIR --html draws every one)."
        if len(curves) < drawable
        else "."
    )
    return Section("memory", "Memory", intro, [tab], findings, curves)
