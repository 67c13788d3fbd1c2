"""`fusions`, `copies`, `collectives` and `ops`: rows per module, with totals; the report's sections of the
first three."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from xlainspect.analysis.collectives import Collective, CollectiveTotal, collective_totals
from xlainspect.analysis.commands.report import DumpFacts
from xlainspect.analysis.copies import Copy, CopyTotal, copy_totals
from xlainspect.analysis.fusions import Fusion, FusionKindTotal, fusion_kind_totals
from xlainspect.analysis.ops import FunctionOpCount, OpCount
from xlainspect.report.document import Block, Document, Lines, Table, fields, record, records, table
from xlainspect.report.sections import Finding, Section, largest
from xlainspect.report.sections import table as section_table
from xlainspect.report.views.cost import duration
from xlainspect.report.views.hosts import measured_collectives

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
    key: str,
    rows: Sequence[object],
    totals: Sequence[object],
    types: tuple[type, type],
    shown: tuple[str, ...],
    extra: Mapping[str, object] | None = None,
) -> Document:
    """JSON `{key: rows, "totals": totals, ...}`; CSV the rows, every field of the row type (a header even
    with no rows); tables the rows (fewer columns) and the totals. No rows (`collectives` of a program on
    one device): a terminal reads one sentence, not empty tables; Markdown writes it over the header."""
    row_type, total_type = types
    data: dict[str, object] = {key: [json_record(r) for r in records(rows)], "totals": records(totals), **(extra or {})}
    csv = table(None, rows, fields(row_type))
    if not rows:
        none = table(f"no {key} in the modules read", rows, shown)
        return Document(data, [Lines(str(none.title))], csv=csv, markdown=[none])
    blocks: list[Block] = [table(key, rows, shown), table("totals", totals, fields(total_type))]
    return Document(data, blocks, csv=csv)


def json_record(row: dict[str, Any]) -> dict[str, Any]:
    """`is_async` is spelled `async` in JSON (a Python keyword cannot be a field name)."""
    return {("async" if k == "is_async" else k): v for k, v in row.items()}


def fusions_document(report: FusionsReport) -> Document:
    extra = {"unfused_ops": report.unfused_ops, "unfused_contractions": records(report.unfused_contractions)}

    types = (Fusion, FusionKindTotal)
    document = _rows_and_totals("fusions", report.fusions, report.totals, types, FUSION_COLUMNS, extra)
    for label, ops in report.unfused_ops.items():
        named = " ".join(f"{c.name}({c.flops:,.0f} FLOPs)" for c in report.unfused_contractions if c.module == label)
        unfused = Lines(
            f"{label}: {sum(ops.values())} compute ops outside fusions "
            f"{' '.join(f'{k}:{n}' for k, n in ops.items())}"
            + (f"; unfused dots/convolutions: {named}" if named else "")
        )
        for blocks in (document.blocks, document.markdown or []):
            blocks.append(unfused)
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


# ---- the report's section


def fusions_section(source: DumpFacts) -> Section:
    """fusions: totals per kind, the largest fusions, and compute ops left outside fusions."""
    rows = [fusion for f in source.facts for fusion in f.fusions]
    unfused = sorted(
        [
            (f.label, sum(f.unfused.values()), " ".join(f"{k}:{n}" for k, n in f.unfused.items()))
            for f in source.facts
            if f.unfused
        ],
        key=lambda u: -u[1],
    )
    kinds = section_table(
        "fusions per kind",
        fields(FusionKindTotal),
        fusion_kind_totals(rows),
        "xlainspect fusions",
    )
    biggest = section_table(
        "largest fusions",
        ("module", "name", "kind", "root", "output_shape", "output_bytes", "op_name"),
        [
            (f.module, f.name, f.backend_kind or f.kind, f.root, f.output_shape, f.output_bytes, f.op_name or "")
            for f in sorted(rows, key=lambda f: -f.output_bytes)
        ],
        "xlainspect fusions lists every fusion",
    )
    outside = section_table(
        "compute ops outside fusions",
        ("module", "ops", "opcodes"),
        unfused,
        "xlainspect fusions",
    )
    intro = f"{len(rows):,} fusions; {sum(u[1] for u in unfused):,} compute ops outside fusions."
    return Section("fusions", "Fusions", intro, [kinds, biggest, outside])


def copies_section(source: DumpFacts) -> Section:
    """copies: bytes moved per module and the largest copies."""
    rows = [c for f in source.facts for c in f.copies]
    totals = copy_totals(rows)
    largest_first = sorted(rows, key=lambda c: -c.bytes)
    findings = [
        Finding("copies", f"{t.module}: {t.kind} x{t.count} moves {t.bytes:,} bytes", t.bytes, "bytes")
        for t in largest(totals, lambda t: t.bytes)
    ]
    return Section(
        "copies",
        "Copies",
        f"{len(rows):,} copies, transposes and relayouts.",
        [
            section_table(
                "per module and kind",
                fields(CopyTotal),
                totals,
                "xlainspect copies",
            ),
            section_table(
                "largest copies",
                ("module", "name", "kind", "from_layout", "to_layout", "memory_space_change", "bytes", "op_name"),
                largest_first,
                "xlainspect copies lists every copy",
            ),
        ],
        findings,
    )


def collectives_section(source: DumpFacts) -> Section:
    """collectives: payload and bytes per step per module and kind, and every collective."""
    rows = [c for f in source.facts for c in f.collectives]
    totals = collective_totals(rows)
    findings = [
        Finding(
            "collectives",
            f"{t.module}: {t.kind} x{t.count} sends {t.bytes_per_step or t.payload_bytes:,} bytes a step",
            t.bytes_per_step or t.payload_bytes,
            "bytes",
        )
        for t in largest(totals, lambda t: t.bytes_per_step or t.payload_bytes)
    ]
    return Section(
        "collectives",
        "Collectives",
        f"{len(rows):,} collectives.",
        [
            section_table(
                "per module and kind",
                fields(CollectiveTotal),
                totals,
                "xlainspect collectives",
            ),
            _collectives_table(source, sorted(rows, key=lambda c: -c.payload_bytes)),
        ],
        findings,
    )


_COLLECTIVE_COLUMNS = (
    "module",
    "name",
    "kind",
    "dtype",
    "payload_bytes",
    "group_size",
    "bytes_per_device",
    "executions",
    "bytes_per_step",
    "op_name",
)
_MEASURED = ("wait_seconds", "transfer_seconds", "exposed_seconds")
"""What a profile adds to a collective's row: per execution, the mean over devices (`views.hosts`)."""


def _collectives_table(source: DumpFacts, rows: list[Collective]) -> Table:
    """Every collective; with a profile that ran them, its wait, transfer and exposed time."""
    what = "xlainspect collectives lists every collective"
    measured = measured_collectives(source.job)
    if not measured:
        return section_table("collectives", _COLLECTIVE_COLUMNS, rows, what)
    found: list[dict[str, object]] = []
    for row in rows:
        times = measured.get((row.module.rpartition("/")[2], row.name))
        found.append(record(row) | ({k: duration(v) for k, v in zip(_MEASURED, times)} if times else {}))
    return section_table("collectives", (*_COLLECTIVE_COLUMNS[:-1], *_MEASURED, "op_name"), found, what)
