"""The roofline: an op's time on a chip is the largest of its compute, memory and collective times, and
that one names its bound; a module's time is its ops' times summed."""

from __future__ import annotations

from typing import TypeAlias

from xlainspect.analysis.chips import Chip
from xlainspect.analysis.cost.model import Cost

Times: TypeAlias = tuple[float | None, float | None, float | None, float | None, str | None]
"""(compute, memory, collective, roofline, bound), each None without a chip."""
UNTIMED: Times = (None, None, None, None, None)


def op_times(cost: Cost, sent: int | None, dtype: str, chip: Chip | None, executions: float = 1) -> Times:
    """Seconds per call at the chip's peak FLOP/s for the output dtype, its HBM and its interconnect
    bandwidth, for `executions` runs; the roofline is the largest and names the bound."""
    if chip is None or cost.flops < 0 or cost.bytes < 0:
        return UNTIMED
    compute = cost.flops * executions / chip.peak_flops(dtype)
    memory = cost.padded_bytes * executions / chip.hbm_bandwidth
    collective = sent * executions / chip.ici_bandwidth if sent is not None else 0.0
    if compute >= memory and compute >= collective:
        return compute, memory, collective, compute, "compute"
    if memory >= collective:
        return compute, memory, collective, memory, "memory"
    return compute, memory, collective, collective, "collective"


def module_time(times: list[Times], chip: Chip | None) -> tuple[float | None, str | None]:
    """The ops' roofline times summed, and the bound that holds the most of it."""
    if chip is None:
        return None, None
    by_bound: dict[str, float] = {}
    for _, _, _, seconds, bound in times:
        if bound is not None and seconds is not None:  # both or neither (`op_times`)
            by_bound[bound] = by_bound.get(bound, 0.0) + seconds
    if not by_bound:
        return 0.0, None
    return sum(by_bound.values()), max(by_bound, key=by_bound.__getitem__)
