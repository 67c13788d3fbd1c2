"""`xlainspect memory DIR|FILE`: allocation totals, the peak and the biggest buffers live there."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from xlainspect.cli.app import DumpPath, FormatOpt, FunctionOpt, app, note_skipped, user_errors
from xlainspect.cli.progress import progress
from xlainspect.cli.render import OutputFormat, emit_frame, emit_json, stderr_console, stdout_console

_SUMMARY = [
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
]
_COMPACT = ["module", "total_bytes", "parameter", "output", "preallocated-temp", "peak_bytes", "peak_instruction"]
_TOP = ["name", "shape", "bytes", "logical_bytes", "kind", "live_from", "live_to", "op_name", "source"]


@app.command()
def memory(
    path: DumpPath,
    function: FunctionOpt = None,
    top: Annotated[int, typer.Option("--top", help="Buffers to list per module, biggest first.")] = 10,
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write a self-contained page with the memory curve.")
    ] = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Memory per compiled module from the buffer assignment, memory-usage report and live ranges: bytes by
    allocation kind, the peak (program point and instruction) and the biggest buffers live at the peak."""
    from xlainspect.analysis.memory import module_memory
    from xlainspect.dump.directory import load_dump, select_dump_modules
    from xlainspect.errors import DumpError, XlaInspectError

    with user_errors():
        dump = load_dump(path.parent if path.is_file() else path)
        chosen = [
            m
            for m in select_dump_modules(dump, function=function)
            if not path.is_file() or any(f.path.resolve() == path.resolve() for f in m.files)
        ]
        rows = []
        with progress("reading buffer assignments", total=len(chosen)) as advance:
            for dump_module in chosen:
                advance(1)
                try:
                    row = module_memory(dump_module, top)
                except XlaInspectError as error:  # report and skip, like a truncated file
                    dump.skip(dump_module.file(kind="buffer-assignment").path, error)
                    continue
                if row is not None:
                    rows.append(row)
        note_skipped(dump)
        if not rows:
            raise DumpError(
                f"no *buffer-assignment.txt for the selected modules under {path} (XLA writes it "
                "after optimizations, with --xla_dump_to and text dumps)"
            )
    if html is not None:
        from xlainspect.report.memory_html import write_memory_html

        write_memory_html(rows, html)
        stderr_console().print(f"wrote {html}", markup=False, highlight=False)
    _emit(rows, fmt)


def _emit(rows: list, fmt: OutputFormat) -> None:
    import dataclasses

    import pandas as pd

    if fmt is OutputFormat.json:
        emit_json({"modules": [_document(r) for r in rows]})
        return
    columns = _COMPACT if fmt is OutputFormat.table else _SUMMARY
    summary = pd.DataFrame([_summary(r) for r in rows], columns=_SUMMARY)[columns]
    emit_frame(summary, fmt, "Memory per module (bytes)")
    if fmt is OutputFormat.csv:
        return
    for row in rows:
        if not row.top:
            continue
        frame = pd.DataFrame([dataclasses.asdict(b) for b in row.top], columns=_TOP)
        title = f"{row.module}: live at the peak (point {row.peak_time}, {row.peak_instruction or 'end'})"
        if fmt is OutputFormat.table:
            _bar_chart(row, title)
        else:
            emit_frame(frame, fmt, title)


def _summary(row) -> dict:
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


def _document(row) -> dict:
    import dataclasses

    document = dataclasses.asdict(row)
    document.pop("sequence")
    document.pop("curve")
    return document


def _bar_chart(row, title: str) -> None:
    """The biggest buffers live at the peak as horizontal bars (rich), sized against the biggest."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, title_justify="left")
    for column in ("buffer", "shape", "bytes", "", "op_name"):
        table.add_column(column, justify="right" if column == "bytes" else "left", overflow="fold")
    biggest = max(b.bytes for b in row.top) or 1
    for buffer in row.top:
        bar = "█" * max(1, round(30 * buffer.bytes / biggest))
        table.add_row(
            Text(buffer.name),
            Text(buffer.shape),
            f"{buffer.bytes:,}",
            Text(bar, style="cyan"),
            Text(buffer.op_name or ""),
        )
    stdout_console().print(table)
