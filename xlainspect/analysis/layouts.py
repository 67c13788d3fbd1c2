"""What a layout costs: one shape explained (`layout`), and the padding ledger of a dump (`layouts`).

Sizes follow XLA's rules (reference section 2): `padded_bytes` is `ShapeUtil::ArraySize`, and on TPU the
ledger uses the backend's size function (`Shape.backend_bytes("tpu")`), which is what TPU buffer
assignments print. Where a buffer assignment exists, XLA's own byte count is carried beside ours.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast

from xlainspect.analysis.lookup import module_label
from xlainspect.analysis.rows import group_sums
from xlainspect.dump.buffers import BufferAssignment, read_buffer_assignment
from xlainspect.dump.files import read_text
from xlainspect.dump.module import DumpModule
from xlainspect.hlo.model import Module
from xlainspect.hlo.shape import Shape
from xlainspect.layout import DimPadding, element_bits, memory_space_name, tile_padding


@dataclass(frozen=True, slots=True)
class TileStep:
    """One tiling level (`report.views.layouts` words it): the first pads the most-minor physical dims to
    the tile's extents and stores each block contiguously (`pads`; `merges`: a `*` extent merges its dim
    into the next more-minor one first); a (k,1) level packs k consecutive rows of narrow values into one
    word (`packs`); any other re-tiles the previous level (`retiles`), without padding."""

    kind: Literal["pads", "packs", "retiles"]
    tile: str
    """As XLA prints it: `(8,128)`."""
    extents: tuple[int, ...]
    """The tile's dims, -1 for `*`."""
    word_bits: int = 0
    """packs: the bits of the word its rows share."""


@dataclass(slots=True)
class ArrayLayout:
    """One array shape decoded for people: order, tiles, padding and memory space."""

    shape: str
    dtype: str
    element_size_bits: int
    dims: tuple[int, ...]
    minor_to_major: tuple[int, ...]
    physical_order: tuple[int, ...]
    """Logical dimension numbers, major to minor (how the bytes are laid out)."""
    tiles: tuple[str, ...]
    tile_steps: tuple[TileStep, ...]
    padding: tuple[DimPadding, ...]
    padded_dims: tuple[int, ...]
    """Physical (major-to-minor) sizes after the first tile pads them."""
    tail_padding: int
    memory_space: int
    memory_space_name: str
    logical_elements: int
    padded_elements: int
    logical_bytes: int
    padded_bytes: int
    backend_bytes: int
    """The platform backend's size (TPU: untiled scalars outside SMEM take an (8,128) tile)."""
    wasted_bytes: int
    expansion: float
    split: bool = False
    """Split configs (SC): the padded bytes are those of the largest split piece (XLA's ArraySize)."""
    platform: str | None = None
    """The backend sized for (`backend_bytes`)."""


def explain_shape(shape: Shape, platform: str | None = None) -> list[ArrayLayout]:
    """One ArrayLayout per array leaf of `shape` (a tuple explains each element)."""
    return [_explain_array(leaf, platform) for leaf in shape.leaves() if leaf.is_array]


def _explain_array(shape: Shape, platform: str | None) -> ArrayLayout:
    layout = shape.layout
    dims = tuple(max(d, 0) for d in shape.dims)
    m2m = layout.minor_to_major if layout is not None and layout.minor_to_major else tuple(range(len(dims) - 1, -1, -1))
    padding = tile_padding(dims, layout)
    backend = shape.backend_bytes(platform)
    bits = element_bits(shape.dtype, layout)
    padded_elements = backend * 8 // bits if bits else 0
    space = layout.memory_space if layout is not None else 0
    return ArrayLayout(
        shape=str(shape),
        dtype=shape.dtype,
        element_size_bits=bits,
        dims=shape.dims,
        minor_to_major=m2m,
        physical_order=tuple(reversed(m2m)),
        tiles=tuple(str(t) for t in layout.tiles) if layout else (),
        tile_steps=_tile_steps(shape),
        padding=padding,
        padded_dims=tuple(p.padded for p in padding),
        tail_padding=layout.tail_padding_alignment_in_elements if layout else 1,
        memory_space=space,
        memory_space_name=memory_space_name(space, platform),
        logical_elements=shape.num_elements,
        padded_elements=padded_elements,
        logical_bytes=shape.logical_bytes,
        padded_bytes=shape.padded_bytes,
        backend_bytes=backend,
        wasted_bytes=backend - shape.logical_bytes,
        expansion=_expansion(backend, shape.logical_bytes),
        split=bool(layout is not None and layout.split_configs),
        platform=platform,
    )


def _expansion(padded: int, logical: int) -> float:
    return round(padded / logical, 2) if logical else (math.inf if padded else 1.0)


def _tile_steps(shape: Shape) -> tuple[TileStep, ...]:
    """Each tiling level: the first pads, later ones only reorder within it."""
    layout = shape.layout
    if layout is None or not layout.tiles:
        return ()
    steps: list[TileStep] = []
    for level, tile in enumerate(layout.tiles):
        dims = tuple(tile.dims)
        if level == 0:
            steps.append(TileStep("pads", str(tile), dims))
        elif len(dims) >= 2 and dims[-1] == 1 and all(d == 1 for d in dims[1:]) and dims[0] > 1:
            steps.append(TileStep("packs", str(tile), dims, dims[0] * element_bits(shape.dtype, layout)))
        else:
            steps.append(TileStep("retiles", str(tile), dims))
    return tuple(steps)


@dataclass(slots=True)
class LedgerInput:
    """One after-optimizations module, its function, platform and (if dumped) buffer assignment."""

    module: Module
    function: str
    platform: str | None = None
    buffers: BufferAssignment | None = None


@dataclass(slots=True)
class PaddingRow:
    """One array value: what it holds, what it occupies, and where it comes from."""

    function: str
    module: str
    """The module as tables label it (`module_0029.jit_layouts`: recompiles share a function name)."""
    kind: str
    """"parameter", "instruction" (an unfused instruction's output) or "buffer" (only in the buffer assignment)."""
    computation: str
    instruction: str
    shape_index: str
    shape: str
    memory_space: int
    logical_bytes: int
    padded_bytes: int
    wasted_bytes: int
    expansion: float
    xla_bytes: int | None
    """The size XLA wrote into the buffer assignment for this value, when there is one."""
    op_name: str
    source: str


@dataclass(slots=True)
class PaddingTotal:
    """Padding summed over a group of values (a module or a function)."""

    group: str
    """The module or function name."""
    values: int
    logical_bytes: int
    padded_bytes: int
    wasted_bytes: int
    expansion: float


def module_ledger(dump_module: DumpModule, platform: str | None = None) -> list[PaddingRow]:
    """The padding rows of one `DumpModule` (unranked); raises XlaInspectError when it is unreadable."""
    return _module_rows(ledger_input(dump_module, platform))


def ledger_files(dump_module: DumpModule) -> list[Path]:
    """The files a module's padding rows are read from: its after-optimizations HLO and buffer assignment."""
    return [f.path for f in (dump_module.hlo_file("after"), dump_module.file("buffer-assignment")) if f]


def ledger_input(dump_module: DumpModule, platform: str | None = None) -> LedgerInput:
    """One `DumpModule`'s after-optimizations module and buffer assignment; raises XlaInspectError when unreadable."""
    module = dump_module.module("after")
    side = dump_module.file("buffer-assignment", "after")
    buffers = read_buffer_assignment(read_text(side.path), str(side.path)) if side else None
    return LedgerInput(module, dump_module.name or module.name, platform or dump_module.platform, buffers)


def padding_ledger(inputs: Iterable[LedgerInput]) -> list[PaddingRow]:
    """Every array value of the modules, ranked by wasted bytes (largest first)."""
    return ranked([row for item in inputs for row in _module_rows(item)])


def ranked(rows: list[PaddingRow]) -> list[PaddingRow]:
    """Most wasted bytes first (ties in a fixed order)."""
    return sorted(rows, key=lambda r: (-r.wasted_bytes, r.function, r.module, r.instruction, r.shape_index))


def filter_ledger(
    rows: list[PaddingRow], *, function: str | None = None, min_expansion: float = 0.0, top: int | None = None
) -> list[PaddingRow]:
    kept = [r for r in rows if (function is None or r.function == function) and r.expansion >= min_expansion]
    return kept[:top] if top is not None else kept


TABLE_TOP = 20
"""Values a table lists without --top: a dump of 100 modules holds tens of thousands of values."""


@dataclass
class LedgerView:
    """What a person reads of a ledger: the padded values worth a look, totals per function and
    per module, and how many values were left out of them (a table of every value is 72,000 lines):
    `report.views.layouts` words its caption."""

    values: list[PaddingRow]
    functions: list[PaddingTotal]
    modules: list[PaddingTotal]
    total: int
    """Values in the ledger."""
    padded: int
    """Values that lose bytes to padding (every value, with `every_value`)."""
    limit: int
    """The most values listed (`top`, else TABLE_TOP; every value with `every_value`)."""


def ledger_view(rows: list[PaddingRow], top: int | None = None, every_value: bool = False) -> LedgerView:
    """The `top` most wasteful padded values (default TABLE_TOP) and the modules that lose bytes to
    padding; `every_value`: every value and module (all of them, without `top`)."""
    padded = rows if every_value else [r for r in rows if r.wasted_bytes > 0]
    limit = top if top is not None else (len(rows) if every_value else TABLE_TOP)
    modules = [t for t in ledger_totals(rows, "module") if every_value or t.wasted_bytes > 0]
    return LedgerView(padded[:limit], ledger_totals(rows, "function"), modules[:limit], len(rows), len(padded), limit)


def ledger_totals(rows: Iterable[PaddingRow], by: Literal["module", "function"] = "module") -> list[PaddingTotal]:
    """Sums per module or per function (`by`), most wasted first."""
    sums = group_sums(rows, lambda r: r.module if by == "module" else r.function, ["logical_bytes", "padded_bytes"])
    # cast: logical_bytes and padded_bytes are never None, so neither are their sums (group_sums allows None)
    totals = [
        PaddingTotal(name, n, logical, padded, padded - logical, _expansion(padded, logical))
        for name, (n, logical, padded) in cast(dict[str, list[int]], sums).items()
    ]
    return sorted(totals, key=lambda t: (-t.wasted_bytes, t.group))


def _module_rows(item: LedgerInput) -> list[PaddingRow]:
    """Unfused instruction outputs (fusion bodies are not materialized), then buffer-only values."""
    module = item.module
    fused = {
        name
        for c in module.computations
        for i in c.instructions
        if i.opcode == "fusion"
        for name in i.called_computations
    }
    sizes = {(v.instruction, v.shape_index): v.size for v in item.buffers.values()} if item.buffers else {}
    label = module_label(module)
    rows: dict[tuple[str, tuple[int, ...]], PaddingRow] = {}
    for computation in module.computations:
        if computation.name in fused:
            continue
        for instruction in computation.instructions:
            if instruction.shape is None:
                continue
            kind = "parameter" if computation.is_entry and instruction.opcode == "parameter" else "instruction"
            for index, leaf in _indexed_leaves(instruction.shape):
                key = (instruction.name, index)
                rows[key] = _row(
                    item,
                    label,
                    kind,
                    computation.name,
                    instruction.name,
                    index,
                    leaf,
                    sizes.get(key),
                    instruction.op_name or "",
                    item.module.source_of(instruction) or "",
                )
    for value in item.buffers.values() if item.buffers else ():
        key = (value.instruction, value.shape_index)
        if key not in rows:
            shape = value.shape
            if shape.is_array:
                rows[key] = _row(
                    item, label, "buffer", "", value.instruction, value.shape_index, shape, value.size, "", ""
                )
    return list(rows.values())


def _indexed_leaves(shape: Shape, prefix: tuple[int, ...] = ()) -> Iterable[tuple[tuple[int, ...], Shape]]:
    if not shape.is_tuple:
        if shape.is_array:
            yield prefix, shape
        return
    for i, element in enumerate(shape.tuple_shapes):
        yield from _indexed_leaves(element, (*prefix, i))


def _row(
    item: LedgerInput,
    label: str,
    kind: str,
    computation: str,
    instruction: str,
    index: tuple[int, ...],
    shape: Shape,
    xla_bytes: int | None,
    op_name: str,
    source: str,
) -> PaddingRow:
    text, logical, padded, memory_space = _array_facts(shape, item.platform)
    return PaddingRow(
        function=item.function,
        module=label,
        kind=kind,
        computation=computation,
        instruction=instruction,
        shape_index="{" + ",".join(map(str, index)) + "}",
        shape=text,
        memory_space=memory_space,
        logical_bytes=logical,
        padded_bytes=padded,
        wasted_bytes=padded - logical,
        expansion=_expansion(padded, logical),
        xla_bytes=xla_bytes,
        op_name=op_name,
        source=source,
    )


@functools.lru_cache(maxsize=16384)
def _array_facts(shape: Shape, platform: str | None) -> tuple[str, int, int, int]:
    """Printed text, logical bytes, backend bytes and memory space of an array shape, worked out once
    per shape: a dump's values repeat a few hundred shapes (decoded once each, `array_shape`)."""
    memory_space = shape.layout.memory_space if shape.layout else 0
    return str(shape), shape.logical_bytes, shape.backend_bytes(platform), memory_space
