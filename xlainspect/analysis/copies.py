"""Copies and layout changes: what each one moves, from which layout and memory space to which.

Rows: every `copy`; every `copy-start`/`copy-done` pair (one row named after the start); every
`transpose`; fusions whose fused root is a `copy` or `transpose` (GPU and TPU fuse relayouts);
and the host-offload custom calls `MoveToHost`/`MoveToDevice`. The source is the operand (its
shape read from the defining instruction, since long text prints operand names only); the
destination is the result (`copy-done`'s shape for a pair). `bytes` is the destination's size
with tile padding (what is written). `relayout` marks copies that change the physical layout
(minor_to_major, tiles or element size) of the same dtype and dims, whatever the memory spaces;
`layout_only` those among them that stay in one memory space: the retiling copies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from xlainspect.analysis.lookup import instruction_index, module_label, operand_shapes, users
from xlainspect.analysis.rows import group_sums
from xlainspect.hlo.model import Computation, Instruction, Module
from xlainspect.hlo.shape import Shape
from xlainspect.layout import Layout, Tile, format_layout, memory_space_name

HOST_OFFLOAD_TARGETS = ("MoveToHost", "MoveToDevice")


@dataclass(slots=True)
class Copy:
    """One copy, transpose or relayout fusion: layouts on both sides, memory spaces, bytes, producer and users."""

    module: str
    computation: str
    name: str
    opcode: str
    kind: str
    """copy, async copy, transpose, copy fusion, transpose fusion or host offload."""
    from_shape: str
    to_shape: str
    from_layout: str | None
    to_layout: str | None
    memory_space_change: str | None
    """`S(0)->S(5) (host memory)` when the copy crosses memory spaces."""
    bytes: int
    relayout: bool
    layout_only: bool
    producer: str | None
    """`name (opcode)` of the operand's defining instruction."""
    consumers: tuple[str, ...]
    op_name: str | None


@dataclass(slots=True)
class CopyTotal:
    """A module's copies of one kind: count and bytes."""

    module: str
    kind: str
    count: int
    bytes: int
    relayout: int
    """How many of them change the physical layout."""
    layout_only: int
    """How many of them only change the layout (no memory space change)."""


def copies(module: Module, platform: str | None = None) -> list[Copy]:
    """Every copy and layout-changing op of the module, in printed order (see the module docstring)."""
    rows: list[Copy] = []
    for computation in module.computations:
        index: dict[str, Instruction] | None = None
        uses: dict[str, list[Instruction]] = {}
        for instruction in computation.instructions:
            kind = _kind(module, instruction)
            if kind is None:
                continue
            if index is None:
                index, uses = instruction_index(computation), users(computation)
            rows.append(_row(module, computation, instruction, kind, index, uses, platform))
    return rows


def _kind(module: Module, instruction: Instruction) -> str | None:
    opcode = instruction.opcode
    if opcode in ("copy", "transpose"):
        return opcode
    if opcode == "copy-start":
        return "async copy"
    if instruction.custom_call_target in HOST_OFFLOAD_TARGETS:
        return "host offload"
    if opcode == "fusion":
        root = module.called_root(instruction)
        if root is not None and root.opcode in ("copy", "transpose"):
            return f"{root.opcode} fusion"
    return None


def _row(
    module: Module,
    computation: Computation,
    instruction: Instruction,
    kind: str,
    index: dict[str, Instruction],
    uses: dict[str, list[Instruction]],
    platform: str | None,
) -> Copy:
    last = instruction
    if kind == "async copy":
        last = next((u for u in uses.get(instruction.name, ()) if u.opcode == "copy-done"), instruction)
    source = next(iter(operand_shapes(instruction, index)), None)
    destination = last.shape
    if last is instruction and kind == "async copy" and destination and destination.is_tuple:
        destination = destination.tuple_shapes[0]  # copy-start is (destination, source, context)
    producer = index.get(instruction.operands[0]) if instruction.operands else None
    relayout = _relayout(source, destination)
    return Copy(
        module=module_label(module),
        computation=computation.name,
        name=instruction.name,
        opcode=instruction.opcode,
        kind=kind,
        from_shape=str(source) if source else "",
        to_shape=str(destination) if destination else "",
        from_layout=_layout(source),
        to_layout=_layout(destination),
        memory_space_change=_memory_space_change(source, destination, platform),
        bytes=destination.padded_bytes if destination else 0,
        relayout=relayout,
        layout_only=relayout and _space(source) == _space(destination),
        producer=f"{producer.name} ({producer.opcode})" if producer else None,
        consumers=tuple(u.name for u in uses.get(last.name, ())),
        op_name=instruction.op_name,
    )


def _layout(shape: Shape | None) -> str | None:
    return format_layout(shape.layout) if shape is not None and shape.layout is not None else None


def _space(shape: Shape | None) -> int:
    return shape.layout.memory_space if shape is not None and shape.layout is not None else 0


def _memory_space_change(source: Shape | None, destination: Shape | None, platform: str | None) -> str | None:
    before, after = _space(source), _space(destination)
    if before == after:
        return None
    return f"S({before})->S({after}) ({memory_space_name(after, platform)})"


def _relayout(source: Shape | None, destination: Shape | None) -> bool:
    """Same dtype and dims, different physical layout (memory space aside)."""
    if source is None or destination is None or not source.is_array or not destination.is_array:
        return False
    if (source.dtype, source.dims) != (destination.dtype, destination.dims):
        return False
    return _physical(source.layout) != _physical(destination.layout)


def _physical(layout: Layout | None) -> tuple[tuple[int, ...], tuple[Tile, ...], int] | None:
    return (layout.minor_to_major, layout.tiles, layout.element_size_in_bits) if layout is not None else None


def copy_totals(rows: list[Copy]) -> list[CopyTotal]:
    """Count, bytes, relayout and layout-only counts per module and kind."""
    totals = group_sums(rows, lambda r: (r.module, r.kind), ["bytes", "relayout", "layout_only"])
    # cast: bytes and the flags are never None, so neither are their sums (group_sums allows None for any)
    return [CopyTotal(module, kind, *cast(list[int], sums)) for (module, kind), sums in totals.items()]
