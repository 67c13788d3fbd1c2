"""`fusions`, `copies`, `collectives` and `ops`: rows per module, with totals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlainspect.analysis.collectives import Collective, CollectiveTotal
from xlainspect.analysis.copies import Copy, CopyTotal
from xlainspect.analysis.fusions import Fusion, FusionKindTotal
from xlainspect.analysis.ops import FunctionOpCount, OpCount
from xlainspect.report.document import Document, Lines, fields, records, table

if TYPE_CHECKING:
    from xlainspect.analysis.commands.graph import CollectivesReport, CopiesReport, FusionsReport, OpsReport


FUSION_COLUMNS = (
    "module",
    "name",
    "kind",
    "backend_kind",
    "root",
    "ops",
    "output_shape",
    "output_bytes",
    "operand_bytes",
    "custom_call_targets",
    "op_name",
)


COPY_COLUMNS = (
    "module",
    "name",
    "kind",
    "from_layout",
    "to_layout",
    "memory_space_change",
    "bytes",
    "relayout",
    "layout_only",
    "producer",
    "consumers",
    "op_name",
)


COLLECTIVE_COLUMNS = (
    "module",
    "name",
    "kind",
    "is_async",
    "dtype",
    "payload_bytes",
    "num_groups",
    "group_size",
    "bytes_per_device",
    "channel_id",
    "is_spmd_generated",
    "executions",
    "bytes_per_step",
    "op_name",
)


def _rows_and_totals(
    key: str, rows: list, totals: list, types: tuple[type, type], shown: tuple[str, ...], extra: dict | None = None
) -> Document:
    """JSON `{key: rows, "totals": totals, ...}`; CSV the rows, every field of the row type (a header even
    with no rows); tables the rows (fewer columns) and the totals."""
    row_type, total_type = types
    data = {key: [json_record(r) for r in records(rows)], "totals": records(totals), **(extra or {})}
    blocks = [table(key, rows, shown), table("totals", totals, fields(total_type))]
    return Document(data, blocks, csv=table(None, rows, fields(row_type)))


def json_record(row: dict) -> dict:
    """`is_async` is spelled `async` in JSON (a Python keyword cannot be a field name)."""
    return {("async" if k == "is_async" else k): v for k, v in row.items()}


def fusions_document(report: FusionsReport) -> Document:
    extra = {"unfused_ops": report.unfused_ops, "unfused_contractions": records(report.unfused_contractions)}

    types = (Fusion, FusionKindTotal)
    document = _rows_and_totals("fusions", report.fusions, report.totals, types, FUSION_COLUMNS, extra)
    for label, ops in report.unfused_ops.items():
        named = " ".join(f"{c.name}({c.flops:,.0f} FLOPs)" for c in report.unfused_contractions if c.module == label)
        document.blocks.append(
            Lines(
                f"{label}: {sum(ops.values())} compute ops outside fusions "
                f"{' '.join(f'{k}:{n}' for k, n in ops.items())}"
                + (f"; unfused dots/convolutions: {named}" if named else "")
            )
        )
    return document


def copies_document(report: CopiesReport) -> Document:
    return _rows_and_totals("copies", report.copies, report.totals, (Copy, CopyTotal), COPY_COLUMNS)


def collectives_document(report: CollectivesReport) -> Document:
    types = (Collective, CollectiveTotal)
    return _rows_and_totals("collectives", report.collectives, report.totals, types, COLLECTIVE_COLUMNS)


def ops_document(report: OpsReport) -> Document:
    """JSON: a list of rows, per module or (`--per-function`) per function."""
    if report.functions:
        rows = table("opcodes per function", report.functions, fields(FunctionOpCount))
        return Document(records(report.functions), [rows], csv=rows)
    rows = table("opcodes", report.opcodes, fields(OpCount))
    return Document(records(report.opcodes), [rows], csv=rows)


# --- doctor, modules, count-recompiles --------------------------------------------------------------------
