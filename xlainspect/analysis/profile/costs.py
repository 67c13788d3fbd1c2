"""The costs/roofline join: each op's measured time beside its cost row (dump, else the trace's HLO)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path
from statistics import median

from xlainspect.analysis.chips import Chip
from xlainspect.analysis.cost import OpCost, module_cost
from xlainspect.analysis.profile.events import dump_label, module_label, traced_modules
from xlainspect.analysis.profile.model import OpTime, ProfileNote
from xlainspect.analysis.profile.steps import Spread
from xlainspect.analysis.runner import analyse_each
from xlainspect.dump.directory import Dump
from xlainspect.dump.module import DumpModule, SkippedFile
from xlainspect.dump.xplane import Trace, embedded_hlo_text
from xlainspect.errors import XlaInspectError
from xlainspect.hlo.model import Module
from xlainspect.hlo.parser import parse_hlo
from xlainspect.workers import OWNED


def dump_costs(
    dump: Dump, labels: set[str], chip: Chip | None, skipped: list[SkippedFile]
) -> dict[str, dict[str, OpCost]]:
    """The op costs of each traced label's after-optimizations module in the dump, by the per-module
    runner (answered from the results cache while its file is unchanged); files that do not parse are
    added to `skipped`."""
    found = analyse_each(
        traced_modules(dump, labels),
        lambda module: op_costs(module.module("after"), chip),
        inputs=DumpModule.hlo_path,
        key=lambda _: f"profile-costs:{chip!r}",  # the chip by every figure: `--peak-flops` chips are `custom`
        blame=DumpModule.hlo_path,
        advance=lambda _: None,
        only_input=False,  # the trace was read: a dump none of whose modules parse leaves ops without costs
    )
    skipped += found.skipped
    return {dump_label(module): costs for module, costs in zip(found.modules, found.results)}


def unjoined_note(dump: Dump, where: str, labels: set[str], skipped: list[SkippedFile]) -> ProfileNote:
    """Why no traced module has costs: the dump holds none of them (ids and names differ), or it holds
    them and their files did not read (named: those of `skipped` that are the traced modules' HLO)."""
    paths = {m.hlo_path() for m in traced_modules(dump, labels)}
    unread = [Path(s.path).name for s in skipped if s.path in paths]
    if unread:
        return ProfileNote("dump_unreadable", where, ", ".join(unread))
    return ProfileNote("dump_not_joined", where)


def op_costs(module: Module, chip: Chip | None) -> dict[str, OpCost]:
    return {row.name: row for row in module_cost(module, chip).ops}


def embedded_modules(trace: Trace, labels: set[str], notes: list[ProfileNote]) -> dict[str, Module]:
    """The HLO modules the trace embeds (XLA's optimized HLO, with the names the op events carry)."""
    modules: dict[str, Module] = {}
    for program_id, (name, proto) in sorted(trace.hlo_protos.items()):
        label = module_label(program_id, name)
        if label not in labels:
            continue
        try:
            modules[label] = parse_hlo(embedded_hlo_text(proto), label, runner=OWNED)[0]
        except XlaInspectError as error:
            notes.append(ProfileNote("embedded_hlo", label, str(error)))
            break  # the same reason (no jax) holds for every module
    return modules


def op_time(
    key: tuple[str, str, str],
    durations: list[float],
    in_steps: list[bool],
    module_steps: int,
    by_device: Spread | None,
    busy: float,
    cost: OpCost | None,
    launch_seconds: float,
) -> OpTime:
    """One op's measured time from its events' `durations` (ns, on every device; `in_steps`: which fell in
    a step): in all, the sum; a step, one device's over `module_steps`, the steps its module ran in
    (`by_device`: per device, over the devices that ran it in steps); beside `cost` (None: no cost row)
    with a roofline no less than `launch_seconds`."""
    label, function, name = key
    seconds = [d / 1e9 for d in durations]
    stepped = [d for d, inside in zip(durations, in_steps) if inside]
    devices = by_device.devices if by_device is not None else 1
    per_step = sum(stepped) / 1e9 / module_steps / devices if module_steps else None
    measured = OpTime(
        label,
        function,
        name,
        len(seconds),
        sum(seconds),
        per_step,
        by_device.median if by_device is not None else None,
        by_device.max if by_device is not None else None,
        devices,
        by_device.slowest if by_device is not None else None,
        min(seconds),
        median(seconds),
        max(seconds),
        sum(stepped) / 1e9 / devices / busy if busy else None,
        module_steps,
        len(stepped) / module_steps / devices if module_steps else None,
    )
    return measured if cost is None else _with_cost(measured, cost, launch_seconds)


def _module_runs(ops: list[OpTime]) -> dict[str, int]:
    """How many times each module ran in the trace: the kernels per execution most of its ops show. XLA
    launches one kernel per execution of a fusion or op; a library call (cuDNN, cuBLAS) may launch
    several, so its own count over its executions is no measure of the runs."""
    ratios: dict[str, Counter[int]] = defaultdict(Counter)
    for op in ops:
        if op.executions_per_call:
            ratios[op.module][round(op.kernels / op.executions_per_call)] += 1
    return {module: counts.most_common(1)[0][0] for module, counts in ratios.items()}


def per_module_run(ops: list[OpTime]) -> list[OpTime]:
    """Efficiency and time lost over the op's executions in the trace (its module's runs times its
    executions per run), not over its kernels: a cuDNN convolution of several kernels is one execution."""
    runs = _module_runs(ops)
    return [
        _over_executions(op, runs[op.module] * op.executions_per_call) if op.executions_per_call else op for op in ops
    ]


def _over_executions(op: OpTime, ran: float) -> OpTime:
    """`op` with its measured time per execution beside its cost: one device's time a step over its
    executions a step (`ran` executions in the trace, in the share its kernels a step are of its kernels),
    so that a compile's step, whose first runs are slower, is left out as in the figures a step; over
    every execution in the trace where it ran in no step."""
    per_run = op.total_seconds / ran if ran else 0.0
    if op.seconds_per_step is not None and op.kernels_per_step and ran:
        per_run = op.seconds_per_step / (op.kernels_per_step * ran / op.kernels)
    moved, roofline = op.bytes_accessed, op.roofline_seconds
    efficiency = roofline / per_run if roofline is not None and per_run > 0 else None
    per_step = op.seconds_per_step
    return replace(
        op,
        executions_in_trace=ran,
        seconds_per_execution=per_run if ran else None,
        measured_bytes_per_second=moved / per_run if moved is not None and per_run > 0 else None,
        efficiency=efficiency,
        lost_seconds=op.total_seconds - roofline * ran if roofline is not None else None,
        lost_seconds_per_step=per_step * (1 - efficiency) if per_step is not None and efficiency is not None else None,
    )


def _with_cost(measured: OpTime, cost: OpCost, launch_seconds: float) -> OpTime:
    """The op's measured time beside one execution's cost: `cost` gives figures per call of the module
    (an op in a loop body runs its trip count times a call). The roofline time of an execution is at
    least `launch_seconds`, the chip's cost of launching a kernel (`Chip.launch_seconds`): a tiny eager
    op cannot run faster than its launch."""
    runs = cost.executions
    moved = round((cost.padded_bytes_read + cost.padded_bytes_written) / runs) if runs else None
    roofline = max(cost.roofline_seconds / runs, launch_seconds) if cost.roofline_seconds is not None and runs else None
    return replace(
        measured,
        kind=cost.kind,
        executions_per_call=runs,
        flops=cost.flops_per_execution,
        bytes_accessed=moved,
        roofline_seconds=roofline,
        bound=cost.bound,
        op_name=cost.op_name,
        source=cost.source,
        opcode=cost.opcode,
        shape=cost.shape,
    )
