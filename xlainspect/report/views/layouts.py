"""`layout` and `layouts`: what one layout costs, and the padding ledger; the report's padding section."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from xlainspect.analysis.commands.report import DumpFacts
from xlainspect.analysis.layouts import ArrayLayout, LedgerView, PaddingRow, PaddingTotal, TileStep, ledger_totals
from xlainspect.layout import DimPadding
from xlainspect.report.document import Block, Document, Lines, fields, record, records, table
from xlainspect.report.sections import Finding, Section, largest
from xlainspect.report.sections import table as section_table

if TYPE_CHECKING:
    from xlainspect.analysis.commands.layouts import LayoutsReport


def layout_document(arrays: list[ArrayLayout]) -> Document:
    """Decoded layouts: a description per array for people, a row per array for machines (JSON: always a
    list, one entry per array of the shape)."""
    worded = [layout_record(a) for a in arrays]
    columns = [c for c in fields(ArrayLayout) if c not in ("padding", "split", "platform")] + ["notes"]
    rows = table(None, worded, columns)
    return Document(worded, [Lines(_describe(a)) for a in arrays], csv=rows, markdown=[rows])


def layout_record(array: ArrayLayout) -> dict[str, object]:
    """An array's fields with its tiling levels and notes in words and its first tile drawn."""
    found: dict[str, object] = record(array)
    del found["split"], found["platform"]
    found["tile_steps"] = tile_steps_text(array)
    return found | {"notes": layout_notes(array), "picture": tile_picture(array.padding)}


def tile_steps_text(array: ArrayLayout) -> tuple[str, ...]:
    """A sentence per tiling level."""
    return tuple(_tile_step_text(step, array.dtype) for step in array.tile_steps)


def _tile_step_text(step: TileStep, dtype: str) -> str:
    extents = "x".join("*" if d < 0 else str(d) for d in step.extents)
    if step.kind == "pads":
        text = (
            f"T{step.tile}: pad the {len(step.extents)} most-minor physical dims to multiples of {extents} "
            f"and store each {extents} block contiguously"
        )
        return text + ("; '*' merges that dim into the next more-minor one first" if min(step.extents) < 0 else "")
    if step.kind == "packs":
        rows = step.extents[0]
        return (
            f"T{step.tile}: inside each tile, interleave {rows} consecutive rows so {rows} "
            f"{dtype} values share one {step.word_bits}-bit word (no extra padding)"
        )
    return f"T{step.tile}: re-tile the previous level by {extents} on its most-minor dims (XLA counts no extra padding)"


def layout_notes(array: ArrayLayout) -> tuple[str, ...]:
    """Which dims were padded, from what to what, by which tile; and size-rule caveats."""
    notes = [
        f"dim {','.join(map(str, dim.logical_dims))} (physical position {dim.physical}): {dim.size} -> "
        f"{dim.padded} by tile extent {dim.tile}"
        for dim in array.padding
        if dim.padded != dim.size
    ]
    if array.tail_padding > 1:
        notes.append(
            f"L({array.tail_padding}): element count rounded up to a multiple of it"
            + ("" if array.tiles else " (ignored by XLA's ArraySize without tiles)")
        )
    if array.split:
        notes.append(
            "SC(...): padded bytes are those of the largest split piece (XLA's ArraySize), not the whole array"
        )
    if array.backend_bytes != array.padded_bytes:
        notes.append(f"{array.platform} backend: an untiled scalar outside SMEM takes a whole (8,128) tile")
    return tuple(notes)


PICTURE_COLUMNS = 32
"""Widest tile picture, in characters; wider tiles show several columns per character."""


def tile_picture(padding: tuple[DimPadding, ...]) -> tuple[str, ...]:
    """The first tile over the two most-minor physical dims: `#` data, `.` padding.

    Empty when there is no 2-D tile to draw. Wide tiles fold several columns into one character.
    """
    if len(padding) < 2 or padding[-1].tile <= 1 or padding[-2].tile <= 1:
        return ()
    rows_dim, cols_dim = padding[-2], padding[-1]
    per_char = math.ceil(cols_dim.tile / PICTURE_COLUMNS)
    width = math.ceil(cols_dim.tile / per_char)
    data_rows, data_cols = min(rows_dim.size, rows_dim.tile), min(cols_dim.size, cols_dim.tile)
    data_chars = math.ceil(data_cols / per_char)
    lines = [
        f"one {rows_dim.tile}x{cols_dim.tile} tile ({per_char} column(s) per character): "
        f"rows 0-{data_rows - 1} and columns 0-{data_cols - 1} hold data"
    ]
    for row in range(rows_dim.tile):
        lines.append(("#" * data_chars + "." * (width - data_chars)) if row < data_rows else "." * width)
    return tuple(lines)


def _describe(a: ArrayLayout) -> str:
    lines = [
        a.shape,
        f"  element type     {a.dtype}, {a.element_size_bits} bits",
        f"  logical dims     [{','.join(map(str, a.dims))}]",
        f"  minor_to_major   {{{','.join(map(str, a.minor_to_major))}}}  physical order (major to minor): "
        f"dims {','.join(map(str, a.physical_order))}",
    ]
    lines += [f"  tile level {i}     {step}" for i, step in enumerate(tile_steps_text(a))]
    lines += [
        f"  padded dims      [{','.join(map(str, a.padded_dims))}] (physical order)",
        f"  elements         {a.logical_elements:,} logical, {a.padded_elements:,} stored",
        f"  bytes            {a.logical_bytes:,} of data in {a.backend_bytes:,} bytes: "
        f"{a.wasted_bytes:,} wasted, {a.expansion}x",
        f"  memory space     S({a.memory_space}) {a.memory_space_name}",
    ]
    lines += [f"  note             {note}" for note in layout_notes(a)]
    picture = tile_picture(a.padding)
    lines += ["", *(f"  {line}" for line in picture)] if picture else []
    return "\n".join(lines)


def layouts_document(report: LayoutsReport) -> Document:
    view, totals = report.view, fields(PaddingTotal)
    data = {
        "values": records(report.values),
        "modules": records(report.modules),
        "functions": records(report.functions),
    }
    caption = ledger_caption(view)
    blocks: list[Block] = [table(caption, view.values, LEDGER_COLUMNS)] if view.values else [Lines(caption)]
    blocks.append(table("per function", view.functions, totals))
    if view.modules:
        blocks.append(table("per module (those losing bytes to padding)", view.modules, totals))
    return Document(data, blocks, csv=table(None, report.values, fields(PaddingRow)))


def ledger_caption(view: LedgerView) -> str:
    """What the ledger's table lists and what it left out, and the options that list the rest."""
    if not view.padded:
        return f"no padding: none of the {view.total:,} values loses bytes to tiles (--all lists them)"
    left_out = [
        f"{view.total - view.padded:,} without padding" if view.padded < view.total else "",
        f"{view.padded - view.limit:,} more beyond --top {view.limit}" if view.padded > view.limit else "",
    ]
    caption = f"padding ledger: {min(view.limit, view.padded):,} of {view.total:,} values, most wasted bytes first"
    if any(left_out):
        caption += f" ({'; '.join(n for n in left_out if n)} left out; --all lists every value)"
    return caption


#: The ledger columns a table shows (JSON and CSV carry every field).


LEDGER_COLUMNS = (
    "module",
    "instruction",
    "shape",
    "logical_bytes",
    "padded_bytes",
    "wasted_bytes",
    "expansion",
    "op_name",
)


# ---- the report's section


def padding_section(source: DumpFacts) -> Section | None:
    """layouts: bytes lost to tile padding, per function and the most wasteful values."""
    labelled = sorted(((f.label, r) for f in source.facts for r in f.padding), key=lambda lr: -lr[1].wasted_bytes)
    rows = [r for _, r in labelled]
    if not rows:
        return None
    per_function = ledger_totals(rows, "function")
    totals = section_table(
        "per function",
        ("function", "values", "logical_bytes", "padded_bytes", "wasted_bytes", "expansion"),
        [(t.group, t.values, t.logical_bytes, t.padded_bytes, t.wasted_bytes, t.expansion) for t in per_function],
    )
    values = section_table(
        "most wasted bytes",
        LEDGER_COLUMNS,
        [
            (label, r.instruction, r.shape, r.logical_bytes, r.padded_bytes, r.wasted_bytes, r.expansion, r.op_name)
            for label, r in labelled
            if r.wasted_bytes
        ],
        "xlainspect layouts lists every value",
    )
    findings = [
        Finding(
            "padding",
            f"{t.group} loses {t.wasted_bytes:,} bytes to tile padding ({t.expansion}x)",
            t.wasted_bytes,
            "bytes",
        )
        for t in largest(per_function, lambda t: t.wasted_bytes)
    ]
    wasted = sum(t.wasted_bytes for t in per_function)
    return Section(
        "padding",
        "Padding waste",
        f"{wasted:,} bytes of tile padding in {len(rows):,} array values.",
        [totals, values],
        findings,
    )
