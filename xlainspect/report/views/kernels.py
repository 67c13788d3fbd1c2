"""`profile`'s kernel stats, allocators' memory and time by op_name and source line, in words and tables
(the analyses: `analysis/profile/kernels.py`, `allocators.py`, `by_source.py`); and the report's
sections of them: the kernels that leave SMs idle or tensor cores unused as findings, each allocator's
bytes in use over the run, device time by source line."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np

from xlainspect.analysis.commands.report import DumpFacts
from xlainspect.analysis.profile.kernels import LATENCY_WARPS
from xlainspect.report.document import Block, Lines, Table, record, table
from xlainspect.report.sections import A_STEP, Finding, MemoryCurve, Section, rank
from xlainspect.report.sections import table as section_table
from xlainspect.report.units import byte_size
from xlainspect.report.views.cost import duration, readable

if TYPE_CHECKING:
    from xlainspect.analysis.profile import ProfileReport
    from xlainspect.analysis.profile.model import (
        AllocatorMemory,
        CudaCoreContraction,
        KernelIdle,
        KernelStat,
        OpTime,
        SourceTime,
    )

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


KERNELS_FOUND = 10
"""Kernel launches that leave SMs short of work which become findings (the most time a step first)."""
MEMORY_BUCKETS = 400
"""Equal spans of the run a memory curve keeps two points of (its lowest and highest): a page draws
at most twice as many points however many allocations the run made, and no peak or trough is lost."""
_LIMITS = {
    "registers": "registers ({registers} a thread)",
    "shared_memory": "shared memory ({shared:,} bytes a block)",
    "block_size": "block size ({threads} threads)",
    "blocks": "the SM's most blocks ({threads} threads a block)",
}
"""Each `KernelStat.limited_by` resource, worded with the launch's figure."""
_MORE_WARPS = {
    "registers": "fewer registers a thread (a smaller tile)",
    "shared_memory": "less shared memory a block (a smaller tile, or 16-bit operands)",
    "block_size": "more threads a block",
    "blocks": "more threads a block",
}


def kernels_section(facts: DumpFacts) -> Section | None:
    """The kernel launches of the profile (most time first) and, as findings ranked with the others,
    those that leave SMs short of work and the matmuls and convolutions without tensor cores; None
    without a profile's kernels."""
    found = facts.profile
    if found is None or not found.kernels:
        return None
    findings = kernel_findings(found)
    rows = [_kernel_row(k) for k in found.kernels]
    intro = (
        f"{len(found.kernels):,} kernel launches of the compiled functions (distinct kernel, block, grid, "
        f"registers and shared memory per op), as the trace's kernel_details gives them. A launch is a finding "
        f"where an SM holds fewer than {LATENCY_WARPS} of its warps (what hides arithmetic latency: CUDA C++ "
        "Programming Guide, Multiprocessor Level) or its grid fills the GPU's SMs less than once; a matmul or "
        "convolution is one where none of its kernels runs on tensor cores."
    )
    tab = section_table("kernel launches, most time first", KERNEL_COLUMNS, rows, "xlainspect profile lists them all")
    return Section("kernels", "Kernels", intro, [tab], findings)


def kernel_findings(report: ProfileReport) -> list[Finding]:
    """The `KERNELS_FOUND` launches that leave SMs short of work with the most time a step, and every
    matmul or convolution without tensor cores, each costed at its device time a step; ranked as the
    report's summary ranks findings."""
    ops = {(op.module, op.name): op for op in report.ops}
    idle = [
        _idle_finding(k, ops.get((k.kernel.module, k.kernel.op)))
        for k in report.kernels_idle
        if k.kernel.seconds_per_step
    ]
    idle = sorted(idle, key=lambda f: -f.cost)[:KERNELS_FOUND]
    found = idle + [_contraction_finding(c) for c in report.cuda_core_contractions if c.op.seconds_per_step]
    return sorted(found, key=rank)


def _idle_finding(idle: KernelIdle, op: OpTime | None) -> Finding:
    """`module op: kernel K holds 12 warps an SM (occupancy 18.8%, limited by ...); its grid ...: what to do`."""
    kernel = idle.kernel
    why: list[str] = []
    fix: list[str] = []
    if idle.resident_warps is not None:
        figures = {
            "registers": kernel.registers_per_thread,
            "shared": kernel.static_shared_bytes + kernel.dynamic_shared_bytes,
            "threads": int(np.prod(kernel.block)),
        }
        limits = " and ".join(_LIMITS[r].format(**figures) for r in kernel.limited_by) or "its launch"
        why.append(
            f"holds {idle.resident_warps:.3g} warps an SM (occupancy {kernel.occupancy:.1%}, limited by {limits}), "
            f"under the {LATENCY_WARPS} that hide arithmetic latency"
        )
        fix += [_MORE_WARPS[r] for r in kernel.limited_by]
    if idle.waves is not None:
        why.append(
            f"its grid of {int(np.prod(kernel.grid)):,} blocks fills {idle.waves:.0%} of what the GPU's SMs "
            "hold at once (under one wave)"
        )
        fix.append("more blocks a launch (more work per call: a larger batch)")
    text = (
        f"{kernel.module} {kernel.op}: kernel {_short(kernel.kernel)} {'; '.join(why)}: "
        f"{', or '.join(dict.fromkeys(fix))} would keep the SMs busy"
    )
    return Finding(
        "kernels",
        text,
        kernel.seconds_per_step or 0.0,
        A_STEP,
        source=(op and op.source) or "",
        run_seconds=kernel.total_seconds,
    )


def _contraction_finding(found: CudaCoreContraction) -> Finding:
    op = found.op
    kernels = ", ".join(_short(k) for k in found.kernels)
    text = (
        f"{op.module} {op.name} ({op.kind}): a matmul or convolution on CUDA cores, no kernel of it on tensor "
        f"cores ({kernels}): tensor-core kernels need bf16/f16 operands or f32 allowed as TF32 (precision "
        "DEFAULT), and dimensions in multiples of 8 (NVIDIA's Deep Learning Performance guide)"
    )
    return Finding(
        "kernels", text, op.seconds_per_step or 0.0, A_STEP, source=op.source or "", run_seconds=op.total_seconds
    )


def _short(kernel: str) -> str:
    return kernel if len(kernel) <= KERNEL_NAME_CHARS else kernel[: KERNEL_NAME_CHARS - 3] + "..."


def memory_over_time_section(facts: DumpFacts) -> Section | None:
    """Each allocator's bytes in use over the run, the steps as bands and the peak marked; None where the
    trace records no allocations."""
    found = facts.profile
    if found is None or not found.memory:
        return None
    curves = [
        MemoryCurve(
            a.name,
            thinned(a.timeline),
            (a.peak_time_seconds, a.peak_bytes_in_trace),
            a.events,
            found.steps,
        )
        for a in found.memory
    ]
    intro = (
        "Bytes in use (allocated and reserved) of each allocator the profiler traced, from its allocation and "
        "deallocation events (XProf's memory_profile), over the run, with the steps as bands."
    )
    return Section(
        "memory-over-time", "Device memory over the run", intro, [allocator_table(found)], charts=list(curves)
    )


def thinned(points: list[tuple[float, int]], buckets: int = MEMORY_BUCKETS) -> list[tuple[float, int]]:
    """`points` (in time order) cut to the lowest and highest of each of `buckets` equal spans of time,
    in time order, and the first and last (the curve spans the run): at most twice `buckets` points and
    two; the highest point of all (the last of equal ones, as the allocator's peak is) kept exactly."""
    if len(points) <= 2 * buckets + 2:
        return points
    seconds = np.array([p[0] for p in points])
    used = np.array([p[1] for p in points])
    span = float(seconds[-1] - seconds[0]) or 1.0
    bucket = np.minimum(((seconds - seconds[0]) / span * buckets).astype(np.int64), buckets - 1)
    order = np.lexsort((np.arange(len(points)), used, bucket))  # by bucket, then bytes, then time
    ends = np.flatnonzero(np.diff(bucket[order])) + 1
    lowest, highest = order[np.r_[0, ends]], order[np.r_[ends - 1, len(order) - 1]]
    kept = np.unique(np.concatenate([[0, len(points) - 1], lowest, highest]))
    return [points[k] for k in kept.tolist()]


def source_section(facts: DumpFacts) -> Section | None:
    """Device time by the line of the user's program the ops came from (`by_source`), with the line's
    text where the file is readable here; None without a profile's ops."""
    found = facts.profile
    if found is None or not found.by_source:
        return None
    rows = [_source_row(row, "source") for row in found.by_source]
    columns = ("source", "text", "total_seconds", "seconds_per_step", "share", "flops")
    intro = (
        "Each line of the program the profiled ops came from (the HLO metadata's source file and line), the "
        "device time of its ops' kernels and their FLOPs where the cost is known; the rows add up to every op's time."
    )
    tab = section_table("device time by source line", columns, rows, "xlainspect profile --by source lists them all")
    return Section("source", "Device time by source line", intro, [tab])
