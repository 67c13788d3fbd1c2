"""`layout` and `layouts`: what one layout costs, and the padding ledger; the report's padding section."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlainspect.analysis.commands.report import DumpFacts
from xlainspect.analysis.layouts import ArrayLayout, PaddingRow, PaddingTotal, ledger_totals
from xlainspect.report.document import Document, Lines, fields, records, table
from xlainspect.report.sections import Finding, Section, largest
from xlainspect.report.sections import table as section_table

if TYPE_CHECKING:
    from xlainspect.analysis.commands.layouts import LayoutsReport
    from xlainspect.analysis.layouts import ArrayLayout


def layout_document(arrays: list[ArrayLayout]) -> Document:
    """Decoded layouts: a description per array for people, a row per array for machines (JSON: always a
    list, one entry per array of the shape)."""
    columns = [c for c in fields(ArrayLayout) if c not in ("picture", "padding")]
    rows = table(None, arrays, columns)
    return Document(records(arrays), [Lines(_describe(a)) for a in arrays], csv=rows, markdown=[rows])


def _describe(a: ArrayLayout) -> str:
    lines = [
        a.shape,
        f"  element type     {a.dtype}, {a.element_size_bits} bits",
        f"  logical dims     [{','.join(map(str, a.dims))}]",
        f"  minor_to_major   {{{','.join(map(str, a.minor_to_major))}}}  physical order (major to minor): "
        f"dims {','.join(map(str, a.physical_order))}",
    ]
    lines += [f"  tile level {i}     {step}" for i, step in enumerate(a.tile_steps)]
    lines += [
        f"  padded dims      [{','.join(map(str, a.padded_dims))}] (physical order)",
        f"  elements         {a.logical_elements:,} logical, {a.padded_elements:,} stored",
        f"  bytes            {a.logical_bytes:,} of data in {a.backend_bytes:,} bytes: "
        f"{a.wasted_bytes:,} wasted, {a.expansion}x",
        f"  memory space     S({a.memory_space}) {a.memory_space_name}",
    ]
    lines += [f"  note             {note}" for note in a.notes]
    lines += ["", *(f"  {line}" for line in a.picture)] if a.picture else []
    return "\n".join(lines)


def layouts_document(report: LayoutsReport) -> Document:
    view, totals = report.view, fields(PaddingTotal)
    data = {
        "values": records(report.values),
        "modules": records(report.modules),
        "functions": records(report.functions),
    }
    blocks: list = [table(view.caption, view.values, LEDGER_COLUMNS)] if view.values else [Lines(view.caption)]
    blocks.append(table("per function", view.functions, totals))
    if view.modules:
        blocks.append(table("per module (those losing bytes to padding)", view.modules, totals))
    return Document(data, blocks, csv=table(None, report.values, fields(PaddingRow)))


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
