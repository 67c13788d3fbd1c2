"""Every collective of a module, counted once, with its groups and the bytes each device sends.

Counted once: a sync collective is its own row; an async pair (`all-gather-start`/`-done`, or an
`async-start` wrapping a collective, sugared or not) is one row named after the start, and the
collective inside the wrapped computation is not counted again. `send`/`recv` are rows, their
`-done`s are not.

Bytes: `payload_bytes` is the larger of the operand and result data (logical bytes, no tile
padding): the full buffer for all-reduce, the gathered result for all-gather, the unscattered
operand for reduce-scatter. `bytes_per_device` applies the usual ring factors to it with group
size n: all-reduce 2(n-1)/n, all-gather, reduce-scatter and all-to-all (n-1)/n,
collective-permute, collective-broadcast and send 1, recv 0. `executions` is how often the
instruction runs per run of the entry computation (the product of `known_trip_count`s of the
enclosing while loops; None when a loop's count is unknown).

`is_spmd_generated`: True when the collective carries a `channel_id` (it runs across partitions,
as a partitioned program's collectives do) and its `op_name` does not end in one of jax's
collective primitives (`psum`, `all_gather`, `ppermute`...). Collectives the user wrote inside
`shard_map` keep the primitive's name; those the SPMD partitioner inserts carry the op they were
partitioned from (`reduce_sum`, `dot_general`) or no metadata at all. Without a `channel_id`
(cross-replica, e.g. pmap) it is False.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from xlainspect.analysis.lookup import instruction_index, module_label, operand_shapes, users
from xlainspect.analysis.rows import group_sums
from xlainspect.errors import HloParseError
from xlainspect.hlo.attributes import (
    ReplicaGroups,
    decode_channel_id,
    decode_replica_groups,
    decode_source_target_pairs,
    known_trip_count,
    op_name_scopes,
)
from xlainspect.hlo.model import Computation, Instruction, Module

KINDS = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "ragged-all-to-all",
    "collective-permute",
    "collective-broadcast",
    "collective-reduce",
    "send",
    "recv",
)

#: Fraction of the payload each device sends, by kind, as a function of the group size n.
SEND_FACTORS: dict[str, Callable[[int], float]] = {
    "all-reduce": lambda n: 2 * (n - 1) / n,
    "all-gather": lambda n: (n - 1) / n,
    "reduce-scatter": lambda n: (n - 1) / n,
    "all-to-all": lambda n: (n - 1) / n,
    "ragged-all-to-all": lambda n: (n - 1) / n,
    "collective-reduce": lambda n: (n - 1) / n,
    "collective-permute": lambda n: 1,
    "collective-broadcast": lambda n: 1,
    "send": lambda n: 1,
    "recv": lambda n: 0,
}

#: Last op_name components of jax's collective primitives (written by the user, not the partitioner).
JAX_COLLECTIVE_PRIMITIVES = frozenset(
    {
        "psum",
        "pmax",
        "pmin",
        "pmean",
        "psum_invariant",
        "all_gather",
        "all_gather_invariant",
        "psum_scatter",
        "reduce_scatter",
        "all_to_all",
        "ragged_all_to_all",
        "ppermute",
        "pshuffle",
        "pbroadcast",
        "axis_index",
    }
)


@dataclass(slots=True)
class Collective:
    """One collective of a module, counted once however it is printed (sync, `-start`/`-done`, async)."""

    module: str
    computation: str
    name: str
    opcode: str
    kind: str
    """The collective without `-start`/`-done` (`all-gather` for `all-gather-start`)."""
    is_async: bool
    done: str | None
    """The matching `-done` instruction of an async pair."""
    dtype: str
    shape: str
    payload_bytes: int
    replica_groups: str | None
    """Raw text as printed; `group_form` says which spelling it is."""
    group_form: str | None
    num_groups: int | None
    group_size: int | None
    source_target_pairs: int | None
    bytes_per_device: int | None
    channel_id: int | None
    use_global_device_ids: bool
    is_spmd_generated: bool
    executions: int | None
    bytes_per_step: int | None
    """`bytes_per_device` times `executions`."""
    op_name: str | None


@dataclass(slots=True)
class CollectiveTotal:
    """A module's collectives of one kind: count, payload and bytes per step."""

    module: str
    kind: str
    count: int
    payload_bytes: int
    bytes_per_step: int | None


def collectives(module: Module, *, count_executions: bool = True) -> list[Collective]:
    """Every collective of the module, in printed order (definitions in the module docstring).
    `count_executions=False` leaves `executions` None and skips the call graph."""
    wrapped = _async_wrapped_computations(module)
    counts: dict[str, int | None] | None = None  # the call graph is built at the first collective: most have none
    rows: list[Collective] = []
    for computation in module.computations:
        if computation.name in wrapped:
            continue
        index: dict[str, Instruction] | None = None
        uses: dict[str, list[Instruction]] | None = None
        for instruction in computation.instructions:
            kind = _kind(module, instruction)
            if kind is None:
                continue
            if counts is None:
                counts = execution_counts(module) if count_executions else {}
            index = index if index is not None else instruction_index(computation)
            uses = uses if uses is not None else users(computation)
            executions = counts.get(computation.name)
            row = functools.partial(_row, module, computation, instruction, kind, index, uses, executions)
            rows.append(_at_line(module, instruction, row))
    return rows


def _at_line(module: Module, instruction: Instruction, read: Callable[[], Collective]) -> Collective:
    """`read()`, where an attribute XLA's parser would reject (`channel_id=x`, a replica group that is not
    integers: the decoders' ValueError) is an input error at the instruction's line, not a bug."""
    try:
        return read()
    except ValueError as error:
        raise HloParseError(
            f"cannot read {instruction.name} ({instruction.opcode}): {error}", module.path, instruction.line
        ) from None


def _kind(module: Module, instruction: Instruction) -> str | None:
    """The collective an instruction starts or is (None for -done halves and everything else)."""
    opcode = instruction.opcode
    if opcode in KINDS:
        return opcode
    if opcode == "async-start":
        root = module.called_root(instruction)
        return root.opcode if root is not None and root.opcode in KINDS else None
    if opcode.endswith("-start") and opcode.removesuffix("-start") in KINDS:
        return opcode.removesuffix("-start")
    return None


def _async_wrapped_computations(module: Module) -> set[str]:
    return {
        callee
        for instruction in module.instructions()
        if instruction.opcode == "async-start"
        for callee in instruction.called_computations
    }


def _row(
    module: Module,
    computation: Computation,
    instruction: Instruction,
    kind: str,
    index: dict[str, Instruction],
    uses: dict[str, list[Instruction]],
    executions: int | None,
) -> Collective:
    is_async = instruction.opcode != kind
    done = _done(instruction, uses) if is_async or kind in ("send", "recv") else None
    result = done.shape if done is not None and done.shape is not None else instruction.shape
    operands = operand_shapes(instruction, index)
    if kind in ("collective-permute", "ragged-all-to-all"):
        operands = operands[:1]  # the in-place forms add output buffers and offsets
    operand_bytes = sum(s.logical_bytes for s in operands if s)
    payload = max(operand_bytes, result.logical_bytes if result else 0)
    attributes = _collective_attributes(module, instruction)
    groups_text = attributes.get("replica_groups")
    groups = decode_replica_groups(groups_text) if kind not in ("collective-permute", "send", "recv") else None
    channel = decode_channel_id(attributes.get("channel_id"))
    global_ids = attributes.get("use_global_device_ids") == "true"
    group_size = _group_size(module, groups, channel is not None, global_ids) if groups else None
    pairs = decode_source_target_pairs(attributes.get("source_target_pairs")) if kind == "collective-permute" else ()
    sent = _bytes_sent(kind, payload, group_size)
    leaves = result.leaves() if result else ()
    return Collective(
        module=module_label(module),
        computation=computation.name,
        name=instruction.name,
        opcode=instruction.opcode,
        kind=kind,
        is_async=is_async,
        done=done.name if done is not None else None,
        dtype=",".join(dict.fromkeys(s.dtype for s in leaves if s.is_array and s.dtype not in ("u32", "token"))),
        shape=str(result) if result else "",
        payload_bytes=payload,
        replica_groups=groups_text,
        group_form=groups.form if groups else None,
        num_groups=groups.num_groups if groups else None,
        group_size=group_size,
        source_target_pairs=len(pairs) if kind == "collective-permute" else None,
        bytes_per_device=sent,
        channel_id=channel,
        use_global_device_ids=global_ids,
        is_spmd_generated=_is_spmd_generated(channel, instruction.op_name),
        executions=executions,
        bytes_per_step=sent * executions if sent is not None and executions is not None else None,
        op_name=instruction.op_name,
    )


def _done(start: Instruction, uses: dict[str, list[Instruction]]) -> Instruction | None:
    """Follow users through `async-update`s to the `-done` that ends this start."""
    current = start
    for _ in range(16):
        following = [u for u in uses.get(current.name, ()) if u.opcode.endswith(("-done", "-update"))]
        if not following:
            return None
        current = following[0]
        if current.opcode.endswith("-done"):
            return current
    return None


def _collective_attributes(module: Module, instruction: Instruction) -> dict[str, str]:
    """The attributes that describe the collective; an unsugared async-start keeps them on the wrapped root."""
    if instruction.opcode != "async-start":
        return instruction.attributes
    root = module.called_root(instruction)
    return {**(root.attributes if root else {}), **instruction.attributes}


def _group_size(module: Module, groups: ReplicaGroups, has_channel: bool, global_ids: bool) -> int | None:
    """Devices per group; `{}` means all devices of the collective's mode (reference §1.8 group modes)."""
    if groups.group_size is not None:
        return groups.group_size
    if groups.form != "empty":
        return None
    if not has_channel:
        return module.replica_count
    if global_ids:
        return module.replica_count * module.num_partitions
    return module.num_partitions


def _bytes_sent(kind: str, payload: int, group_size: int | None) -> int | None:
    if kind in ("collective-permute", "collective-broadcast", "send", "recv"):
        return round(payload * SEND_FACTORS[kind](1))
    if not group_size:
        return None
    return round(payload * SEND_FACTORS[kind](group_size))


def _is_spmd_generated(channel_id: int | None, op_name: str | None) -> bool:
    if channel_id is None:
        return False
    scopes = op_name_scopes(op_name)
    return (scopes[-1] if scopes else "") not in JAX_COLLECTIVE_PRIMITIVES


def execution_counts(module: Module) -> dict[str, int | None]:
    """Computation -> runs per run of the entry: the product of enclosing known while trip counts.

    A computation called from several places sums its callers; a `while` without a known trip
    count makes its body and condition (and all they call) None. Conditional branches count as
    running once (an upper bound). The callers are gathered here rather than with `graph.call_graph`:
    importing networkx costs more than the whole analysis of a dump's typical module.
    """
    callers: dict[str, list[tuple[str, Instruction]]] = {}
    for computation in module.computations:
        for instruction in computation.instructions:
            for callee in instruction.called_computations:
                callers.setdefault(callee, []).append((computation.name, instruction))

    @functools.cache
    def count(name: str) -> int | None:
        if name == module.entry.name:
            return 1
        total = 0
        for caller, instruction in callers.get(name, ()):
            caller_count = count(caller) if caller != name else None
            config = instruction.attributes.get("backend_config")
            factor = known_trip_count(config) if instruction.opcode == "while" else 1
            if caller_count is None or factor is None:
                return None
            total += caller_count * factor
        return total

    return {c.name: count(c.name) for c in module.computations}


def collective_totals(rows: list[Collective]) -> list[CollectiveTotal]:
    """Count, payload and per-step bytes per module and kind (bytes_per_step None when any is unknown)."""
    totals = group_sums(rows, lambda r: (r.module, r.kind), ["payload_bytes", "bytes_per_step"])
    # cast: the count and payload_bytes are never None (only bytes_per_step may be unknown)
    return [
        CollectiveTotal(module, kind, cast(int, count), cast(int, payload), per_step)
        for (module, kind), (count, payload, per_step) in totals.items()
    ]
