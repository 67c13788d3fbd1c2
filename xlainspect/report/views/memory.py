"""`memory`: allocations, the peak and the buffers live there."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlainspect.report.document import Document, record, table

if TYPE_CHECKING:
    from xlainspect.analysis.commands.memory import MemoryReport


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
    blocks: list = [table(title, summaries, _MEMORY_COMPACT)]
    markdown: list = [table(title, summaries, _MEMORY_COLUMNS)]
    for row in report.modules:
        if row.top:
            peak = f"{row.module}: live at the peak (point {row.peak_time}, {row.peak_instruction or 'end'})"
            blocks.append(table(peak, _bars(row.top), ("buffer", "shape", "bytes", "", "op_name")))
            markdown.append(table(peak, row.top, _PEAK_COLUMNS))
    return Document(data, blocks, csv=table(title, summaries, _MEMORY_COLUMNS), markdown=markdown)


def _memory_summary(row) -> dict:
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


def memory_record(row) -> dict:
    document = record(row)
    document.pop("sequence")
    document.pop("curve")
    return document


def _bars(buffers) -> list[dict]:
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


# --- diff -----------------------------------------------------------------------------------------------
