"""A module's cost per call and its op rows: every op of the entry and of the computations it runs as
control flow (fusions as one op), what one execution costs times its executions per call, XLA's
static count beside it, and its roofline time on a chip."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeAlias

from xlainspect.analysis.chips import Chip
from xlainspect.analysis.collectives import collectives
from xlainspect.analysis.cost.executed import Executed, run_callees
from xlainspect.analysis.cost.handlers import static_analysis
from xlainspect.analysis.cost.model import NO_COST, Cost, Loop, ModuleCost, OpCost
from xlainspect.analysis.cost.roofline import Times, module_time, op_times
from xlainspect.analysis.cost.static import Analysis
from xlainspect.analysis.lookup import control_flow_computations, instruction_index, module_label
from xlainspect.hlo.attributes import backend_config_kind
from xlainspect.hlo.model import Computation, Instruction, Module
from xlainspect.hlo.shape import Shape

#: Ops whose cost is that of the computations they run; their insides are rows of their own.
CONTAINERS = frozenset({"while", "conditional", "call", "async-start", "async-update", "async-done"})

_Timed: TypeAlias = tuple[Times, Computation, Instruction, Cost, int | None, int, int | None, dict[str, Instruction]]
"""An op timed for the module's roofline: (times, computation, instruction, cost of one execution, bytes
it sends, executions, trip count, the computation's instruction index): `_row`'s arguments after the module's."""


def module_cost(module: Module, chip: Chip | None, top: int | None = None) -> ModuleCost:
    """Totals per call and the `top` slowest ops (all with None) of one module (definitions in the
    package docstring). Every op is timed for the module's roofline; rows are built for the top ones
    only, since a big module has hundreds of thousands of ops."""
    static = static_analysis(module)
    executed = Executed(static)
    total, xla = executed.computation(module.entry), static.computation(module.entry)
    runs, trips = executed.executions(), _innermost_trip_counts(executed)
    sent = _collective_bytes(module)
    timed: list[_Timed] = []
    for name in control_flow_computations(module):
        computation = module.computations_by_name[name]
        index = static.index(computation)
        for instruction in computation.instructions:
            if instruction.opcode in CONTAINERS:
                continue
            cost = executed.instruction(instruction, index)
            if cost == NO_COST and instruction.name not in sent and instruction.opcode != "custom-call":
                continue
            bytes_sent = sent.get(instruction.name)
            times = runs.get(name, 0)
            seconds = op_times(cost, bytes_sent, _dtype(instruction.shape), chip, times)
            timed.append((seconds, computation, instruction, cost, bytes_sent, times, trips.get(name, 1), index))
    timed.sort(key=lambda t: (-(t[0][3] or 0), -t[3].flops * t[5], -t[3].padded_bytes * t[5]))
    seconds, bound = module_time([t[0] for t in timed], chip)
    label = module_label(module)
    rows = [_row(module, static, label, *entry) for entry in (timed[:top] if top is not None else timed)]
    return ModuleCost(
        label,
        module.name,
        total.flops,
        total.transcendentals,
        total.bytes,
        total.padded_bytes,
        xla.flops,
        xla.transcendentals,
        xla.bytes,
        seconds,
        bound,
        chip.key if chip else None,
        chip,
        rows,
        _loops(executed, runs),
        dict(executed.branches),
        dict(executed.not_counted),
    )


def op_executions(module: Module) -> dict[str, tuple[int, Cost]]:
    """Instruction name -> (executions per call, the cost of one execution) of every op `cost` counts
    (outside fusion bodies): what a profile's kernel counts per step are checked against."""
    static = static_analysis(module)
    executed = Executed(static)
    executed.computation(module.entry)
    runs = executed.executions()
    result: dict[str, tuple[int, Cost]] = {}
    for name in control_flow_computations(module):
        computation = module.computations_by_name[name]
        index = static.index(computation)
        for instruction in computation.instructions:
            if instruction.opcode not in CONTAINERS:
                result[instruction.name] = (runs.get(name, 0), executed.instruction(instruction, index))
    return result


def control_flow_costs(
    module: Module, wanted: Callable[[Instruction], bool]
) -> Iterator[tuple[Computation, Instruction, Cost]]:
    """XLA's cost of each instruction `wanted` selects outside fusion bodies (the entry and the
    computations it runs as control flow): (computation, instruction, Cost), each counted once."""
    return static_analysis(module).control_flow_costs(wanted)


def _innermost_trip_counts(executed: Executed) -> dict[str, int | None]:
    """Computation -> the trip count of the innermost while loop it runs in (1 outside loops; None when a
    loop on its chain has no known count)."""
    trips: dict[str, int | None] = {}

    def visit(computation: Computation, trip: int | None, unknown: bool) -> None:
        if computation.name in trips:
            return
        trips[computation.name] = None if unknown else trip
        for instruction in computation.instructions:
            for callee in run_callees(instruction):
                inner, lost = trip, unknown
                if instruction.opcode == "while":
                    inner = executed.trip_counts.get(instruction.name)
                    lost = unknown or inner is None
                visit(executed.static.named(callee), inner, lost)

    visit(executed.module.entry, 1, False)
    return trips


def _loops(executed: Executed, runs: dict[str, int]) -> list[Loop]:
    loops: list[Loop] = []
    for name in control_flow_computations(executed.module):
        for instruction in executed.module.computations_by_name[name].instructions:
            if instruction.opcode == "while" and instruction.name in executed.trip_counts:
                trip = executed.trip_counts[instruction.name]
                loops.append(Loop(instruction.name, name, trip, runs.get(name, 0), instruction.op_name))
    return loops


def _collective_bytes(module: Module) -> dict[str, int]:
    """Instruction name -> bytes each device sends; an async wrapper's inner collective is named too."""
    sent: dict[str, int] = {}
    for row in collectives(module, count_executions=False):
        if row.bytes_per_device is None:
            continue
        sent[row.name] = row.bytes_per_device
        if row.opcode == "async-start":
            start = instruction_index(module.computations_by_name[row.computation])[row.name]
            root = module.called_root(start)
            if root is not None:
                sent[root.name] = row.bytes_per_device
    return sent


def _row(
    module: Module,
    static: Analysis,
    label: str,
    times: Times,
    computation: Computation,
    instruction: Instruction,
    cost: Cost,
    sent: int | None,
    executions: int,
    trip: int | None,
    index: dict[str, Instruction],
) -> OpCost:
    compute, memory, collective, roofline, bound = times
    moved = cost.padded_bytes
    xla = static.instruction(instruction, index)
    return OpCost(
        module=label,
        computation=computation.name,
        name=instruction.name,
        opcode=instruction.opcode,
        kind=_kind(instruction),
        dtype=_dtype(instruction.shape),
        executions=executions,
        trip_count=trip,
        flops=cost.flops * executions,
        transcendentals=cost.transcendentals * executions,
        bytes_read=(cost.bytes - cost.written) * executions,
        bytes_written=cost.written * executions,
        padded_bytes_read=(cost.padded_bytes - cost.padded_written) * executions,
        padded_bytes_written=cost.padded_written * executions,
        flops_per_execution=cost.flops,
        bytes_per_execution=cost.bytes,
        xla_flops=xla.flops,
        xla_transcendentals=xla.transcendentals,
        xla_bytes_accessed=xla.bytes,
        arithmetic_intensity=cost.flops / moved if moved > 0 else None,
        collective_bytes=sent,
        compute_seconds=compute,
        memory_seconds=memory,
        collective_seconds=collective if sent is not None else None,
        roofline_seconds=roofline,
        bound=bound,
        op_name=instruction.op_name,
        source=module.source_of(instruction),
        shape=instruction.shape.without_layout() if instruction.shape is not None else "",
    )


def _kind(instruction: Instruction) -> str:
    if instruction.opcode == "fusion":
        attributes = instruction.attributes
        return backend_config_kind(attributes.get("backend_config")) or attributes.get("kind", "fusion")
    if instruction.opcode == "custom-call":
        return instruction.custom_call_target or "custom-call"
    return instruction.opcode.removesuffix("-start")


def _dtype(shape: Shape | None) -> str:
    if shape is not None and not shape.is_tuple:
        return shape.dtype
    leaf = next((s for s in shape.leaves() if s.is_array), None) if shape is not None else None
    return leaf.dtype if leaf is not None else ""
