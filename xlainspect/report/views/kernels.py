"""`profile`'s kernel stats, allocators' memory and time by op_name and source line, in words and tables
(the analyses: `analysis/profile/kernels.py`, `allocators.py`, `by_source.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from xlainspect.report.document import Block, Lines, Table, record, table
from xlainspect.report.units import byte_size
from xlainspect.report.views.cost import duration, readable

if TYPE_CHECKING:
    from xlainspect.analysis.profile import ProfileReport
    from xlainspect.analysis.profile.model import AllocatorMemory, KernelStat, SourceTime

By = Literal["op_name", "source"]
"""What `profile --by` groups the ops' time by."""

KERNEL_COLUMNS = (
    "kernel",
    "module",
    "op",
    "registers_per_thread",
    "static_shared_bytes",
    "dynamic_shared_bytes",
    "block",
    "grid",
    "occupancy",
    "limited_by",
    "waves",
    "tensor_cores",
    "count",
    "total_seconds",
    "seconds_per_step",
)
_SOURCE_COLUMNS = ("ops", "kernels", "total_seconds", "seconds_per_step", "share", "flops")
_ALLOCATOR_COLUMNS = (
    "name",
    "peak_bytes_in_use",
    "peak_bytes_in_trace",
    "peak_time_seconds",
    "peak_step",
    "bytes_allocated",
    "fragmentation",
    "live",
    "made_before_trace_bytes",
)
KERNELS_SHOWN = 20
"""Kernel rows a table lists."""
KERNEL_NAME_CHARS = 60
"""A kernel's name in a table (cuDNN's run to hundreds of characters; JSON keeps them whole)."""


def details_data(report: ProfileReport) -> dict[str, object]:
    """The JSON keys: `kernels`, `kernels_skipped`, `memory` {allocators}, `by_op_name`, `by_source`."""
    return {
        "kernels": [record(k) for k in report.kernels],
        "kernels_skipped": [record(k) for k in report.kernels_skipped],
        "memory": {"allocators": [record(a) for a in report.memory]},
        "by_op_name": [source_record(row, "op_name") for row in report.by_op_name],
        "by_source": [source_record(row, "source") for row in report.by_source],
    }


def source_record(row: SourceTime, by: By) -> dict[str, object]:
    """A row of `by_op_name` or `by_source`: its key named for what it is."""
    found: dict[str, object] = record(row)
    if by == "op_name":
        del found["text"]
    return {by: found.pop("name"), **found}


def by_table(report: ProfileReport, by: By) -> Table:
    """The ops' time by op_name or source line, most first; the rows add up to every op's time."""
    rows = report.by_op_name if by == "op_name" else report.by_source
    total = sum(row.total_seconds for row in rows)
    title = f"device time by {by}: {len(rows)} rows, {duration(total)} in all (every op's kernels)"
    people = [_source_row(row, by) for row in rows]
    return table(title, people, (by, *_SOURCE_COLUMNS, *(("text",) if by == "source" else ())))


def _source_row(row: SourceTime, by: By) -> dict[str, object]:
    found: dict[str, object] = readable(source_record(row, by))
    return found | {by: found[by] or f"(no {by})", "share": f"{row.share:.1%}"}


def detail_blocks(report: ProfileReport) -> list[Block]:
    """The kernel table (most time first) and a line per allocator; nothing where the trace has neither.
    What needs the dump is said once: a CUDA graph's kernels sit on their command buffer without it."""
    blocks: list[Block] = []
    if report.kernels:
        rows = [_kernel_row(k) for k in report.kernels[:KERNELS_SHOWN]]
        more = len(report.kernels) - len(rows)
        note = f"and {more} more (JSON has them all)" if more > 0 else ""
        title = f"{len(report.kernels)} kernel launches of the compiled functions, most time first"
        blocks.append(table(title, rows, KERNEL_COLUMNS, note))
        if any(k.op.startswith("command_buffer") for k in report.kernels):
            blocks.append(
                Lines("kernels run in CUDA graphs stay on their command buffer: --dump places them on their op")
            )
    for skipped in report.kernels_skipped:
        blocks.append(
            Lines(f"kernel_details not read ({skipped.reason}) on {skipped.count} kernels: {skipped.details!r}")
        )
    blocks += [Lines(allocator_line(a)) for a in report.memory]
    return blocks


def _kernel_row(kernel: KernelStat) -> dict[str, object]:
    row: dict[str, object] = readable(record(kernel))
    name = kernel.kernel if len(kernel.kernel) <= KERNEL_NAME_CHARS else kernel.kernel[: KERNEL_NAME_CHARS - 3] + "..."
    return row | {
        "kernel": name,
        "block": ",".join(map(str, kernel.block)),
        "grid": ",".join(map(str, kernel.grid)),
        "occupancy": f"{kernel.occupancy:.1%}",
        "limited_by": ", ".join(kernel.limited_by),
        "waves": f"{kernel.waves:.2f}" if kernel.waves is not None else "",
    }


def allocator_line(allocator: AllocatorMemory) -> str:
    """`GPU_0_bfc: peak 260 MiB in use (the allocator's own, since the process began); in the trace 241 MiB
    at 1.19 s (step 4), fragmentation 9.1%, 12 allocations live ...`."""
    step = f" (step {allocator.peak_step})" if allocator.peak_step is not None else " (outside the steps)"
    largest = ", ".join(byte_size(a.bytes) + (f" {a.op}" if a.op else "") for a in allocator.live[:3])
    before = allocator.made_before_trace_bytes
    return (
        f"memory {allocator.name}: peak {byte_size(allocator.peak_bytes_in_use)} in use (the allocator's own, since "
        f"the process began); in the trace {byte_size(allocator.peak_bytes_in_trace)} at "
        f"{duration(allocator.peak_time_seconds)}{step}, fragmentation {allocator.fragmentation:.1%}, "
        f"{len(allocator.live)} allocation(s) of the trace live there ({largest})"
        + (f" and {byte_size(before)} made before it" if before else "")
    )


def allocator_table(report: ProfileReport) -> Table:
    """Every allocator's peak, for Markdown."""
    rows = [readable(record(a)) | {"live": len(a.live)} for a in report.memory]
    return table("memory by allocator (from the trace's allocation events)", rows, _ALLOCATOR_COLUMNS)
