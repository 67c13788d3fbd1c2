"""`cost` and `profile`: FLOPs, bytes and roofline time per op, and measured time beside them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xlainspect.report.document import Block, Document, record, records, table

if TYPE_CHECKING:
    from xlainspect.analysis.commands.cost import CostReport


COST_MODULE_COLUMNS = (
    "module",
    "function",
    "flops",
    "transcendentals",
    "bytes_accessed",
    "padded_bytes_accessed",
    "xla_flops",
    "xla_transcendentals",
    "xla_bytes_accessed",
    "roofline_seconds",
    "bound",
    "chip",
)


COST_OP_COLUMNS = (
    "module",
    "name",
    "opcode",
    "kind",
    "executions",
    "trip_count",
    "flops",
    "transcendentals",
    "bytes_read",
    "bytes_written",
    "padded_bytes_read",
    "padded_bytes_written",
    "flops_per_execution",
    "bytes_per_execution",
    "xla_flops",
    "xla_transcendentals",
    "xla_bytes_accessed",
    "arithmetic_intensity",
    "compute_seconds",
    "memory_seconds",
    "collective_seconds",
    "roofline_seconds",
    "bound",
    "op_name",
    "source",
)


_COST_MODULE_COMPACT = ("module", "flops", "xla_flops", "bytes_accessed", "roofline_seconds", "bound", "chip")


_COST_OP_COMPACT = (
    "name",
    "kind",
    "executions",
    "flops",
    "bytes_read",
    "bytes_written",
    "arithmetic_intensity",
    "roofline_seconds",
    "bound",
    "op_name",
    "source",
)


def cost_document(report: CostReport, top: int | None = 10) -> Document:
    """JSON: modules (with their loops, counted branches and uncounted custom calls) and their `top` ops;
    CSV: the ops; tables: a module table, then each module's ops. Figures are per call as executed,
    XLA's static ones beside (`xla_*`); stderr says where a count is partial."""
    modules = [
        {
            **{c: getattr(m, c) for c in COST_MODULE_COLUMNS},
            "loops": records(m.loops),
            "branches": m.branches,
            "not_counted": m.not_counted,
        }
        for m in report.modules
    ]
    ops = [record(op) for m in report.modules for op in m.ops[:top]]
    data = {"modules": modules, "ops": [{c: r[c] for c in COST_OP_COLUMNS} for r in ops]}
    people = [readable(r) for r in modules]
    title = "cost per call of each module (as executed; xla_flops: XLA's static count)"
    blocks: list[Block] = [table(title, people, _COST_MODULE_COMPACT)]
    markdown: list[Block] = [table("cost per call of each module", people, COST_MODULE_COLUMNS)]
    for module in report.modules:
        top_ops = table(
            f"{module.module}: top ops by roofline time per call",
            [readable(record(op)) for op in module.ops[:top]],
            _COST_OP_COMPACT,
        )
        blocks.append(top_ops)
        markdown.append(top_ops)
    return Document(data, blocks, csv=table(None, ops, COST_OP_COLUMNS), markdown=markdown, notes=cost_notes(report))


def cost_notes(report: CostReport) -> list[str]:
    """What the figures leave out: loops without a known trip count (counted once), custom calls
    without a rule (counted as 0), and which branch of a conditional is counted."""
    unknown = [f"{m.module}: {loop.name}" for m in report.modules for loop in m.loops if loop.trip_count is None]
    notes: list[str] = []
    if unknown:
        notes.append(
            f"trip count not known for {len(unknown)} while loop(s), counted once (trip_count: null): "
            + ", ".join(unknown[:5])
            + (" ..." if len(unknown) > 5 else "")
        )
    for module in report.modules:
        if module.not_counted:
            listed = ", ".join(f"{target or '(no target)'} x {n}" for target, n in sorted(module.not_counted.items()))
            notes.append(f"{module.module}: not counted (custom calls of unknown cost, counted as 0): {listed}")
        if module.branches:
            counted = [f"{name}: branch {index}" for name, index in sorted(module.branches.items())]
            shown = ", ".join(counted[:5]) + (f" and {len(counted) - 5} more" if len(counted) > 5 else "")
            notes.append(f"{module.module}: conditionals count their most expensive branch ({shown})")
    return notes


def readable(row: dict[str, Any]) -> dict[str, Any]:
    """Seconds as `1.23 us` for people (a table's two decimals would print 0.00)."""
    return {k: duration(v) if _is_seconds(k) and v is not None else v for k, v in row.items()}


def _is_seconds(column: str) -> bool:
    """`busy_seconds`, `seconds_per_step`, `lost_seconds_per_step`: a column of seconds."""
    return "seconds" in column.split("_")


def duration(seconds: float) -> str:
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


# --- the persistent cache -------------------------------------------------------------------------------
