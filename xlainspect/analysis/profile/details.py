"""What a profile adds from the trace beside its ops and steps: kernel stats, allocators' memory, and
the ops' time by op_name and source line (XProf's kernel_stats, memory_profile and framework_op_stats,
`kernels.py`, `allocators.py`, `by_source.py`)."""

from __future__ import annotations

from dataclasses import replace

from xlainspect.analysis.profile.allocators import allocators
from xlainspect.analysis.profile.by_source import by_key
from xlainspect.analysis.profile.kernels import cuda_core_contractions, device_limits, kernel_stats, kernels_idle
from xlainspect.analysis.profile.model import ProfileReport
from xlainspect.dump.xplane import Trace


def with_details(report: ProfileReport, trace: Trace) -> ProfileReport:
    """`report` with its kernels (and those that leave SMs idle or tensor cores unused), memory and time by
    op_name and by source line."""
    kernels, skipped = kernel_stats(trace, report.op_events, report.ops) if report.op_events is not None else ([], [])
    return replace(
        report,
        kernels=kernels,
        kernels_skipped=skipped,
        memory=allocators(trace.allocations, report.steps),
        by_op_name=by_key(report.ops, lambda op: op.op_name),
        by_source=by_key(report.ops, lambda op: op.source, text=True),
        kernels_idle=kernels_idle(kernels, device_limits(trace)),
        cuda_core_contractions=cuda_core_contractions(report.ops, kernels),
    )
