"""`diff`: what XLA did differently per function, and the gate's regressions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlainspect.report.causes import (
    parameter_text,
    signature_detail,
)
from xlainspect.report.document import Block, Document, Heading, Lines, Table, record

if TYPE_CHECKING:
    from collections.abc import Sequence

    from xlainspect.analysis.commands.diff import DiffReport
    from xlainspect.analysis.diff import CountDelta, FunctionDiff, Regression, SignatureChange


def diff_document(report: DiffReport, *, show_all: bool = False, gate: bool = False) -> Document:
    """Per function that changed (every one with `show_all`): its metrics, signature, op histogram,
    fusion kinds and custom-call targets that differ; CSV: every function's metrics (`CSV_COLUMNS`).
    `gate`: regressions fail it."""
    shown = [r for r in report.functions if show_all or r.status != "unchanged"]
    data: dict[str, object] = {
        "a": str(report.a),
        "b": str(report.b),
        "functions": [_function_json(r) for r in report.functions],
        "regressions": [regression_text(r) for r in report.regressions],
    }
    summary = _diff_summary(report.functions)
    blocks: list[Block] = [Lines(summary)]
    for row in shown:
        blocks.append(Heading(_heading(row)))
        blocks += _sections(row)
    markdown = [Lines(f"## xlainspect diff: `{report.a}` -> `{report.b}`\n\n{summary}\n"), *blocks[1:]]
    notes = [f"regression: {regression_text(r)}" for r in report.regressions]
    notes += (
        [f"cannot gate: {r.name}: unknown, {', '.join(r.unreadable)} did not parse" for r in report.unknown]
        if gate
        else []
    )
    failed, undecided = gate and bool(report.regressions), gate and bool(report.unknown)
    csv = Table(
        None,
        CSV_COLUMNS,
        tuple((r.name, r.status, m.name, m.a, m.b, m.delta, m.change) for r in report.functions for m in r.metrics),
    )
    return Document(data, blocks, csv=csv, markdown=markdown, notes=notes, gate_failed=failed, gate_undecided=undecided)


CSV_COLUMNS = ("function", "status", "metric", "a", "b", "delta", "change")
"""diff's CSV: its main table, the metrics, one row per function (every one, unchanged too) and metric;
`change` is the percent of A (empty where A is 0)."""


def regression_text(found: Regression) -> str:
    """`fn: peak_memory 396 -> 748 (+88.9%), over --max-increase peak_memory=50%`."""
    metric = found.metric
    if found.threshold.relative:
        amount = f"+{metric.change:.1f}%" if metric.change is not None else "from 0"
    else:
        amount = f"+{metric.delta:,}"
    over = f"over --max-increase {found.threshold}"
    return f"{found.function}: {metric.name} {metric.a:,} -> {metric.b:,} ({amount}), {over}"


def _function_json(row: FunctionDiff) -> dict[str, object]:
    """`metrics` {name: {a, b, delta, change}}, `ops` {opcode: {a, b, delta}}, `signature` [changes]."""

    def counts(deltas: Sequence[CountDelta]) -> dict[str, dict[str, int]]:
        return {d.key: {"a": d.a, "b": d.b, "delta": d.delta} for d in deltas}

    return {
        "name": row.name,
        "status": row.status,
        "metrics": {m.name: {"a": m.a, "b": m.b, "delta": m.delta, "change": m.change} for m in row.metrics},
        "ops": counts(row.ops),
        "fusion_kinds": counts(row.fusion_kinds),
        "custom_call_targets": counts(row.custom_call_targets),
        "signature": [_signature_record(s) for s in row.signature],
        "unreadable": list(row.unreadable),
    }


def _sections(row: FunctionDiff) -> list[Table]:
    """The non-empty tables describing one function's changes (cells as text: signed deltas, percents)."""
    metrics = [m for m in row.metrics if m.a != m.b or m.name == "modules" or row.status != "changed"]
    figures = ("A", "B", "delta", "change %")
    sections = [
        Table(
            "metrics",
            ("metric", *figures),
            tuple((m.name, _number(m.a), _number(m.b), _signed(m.delta), _percent(m.change)) for m in metrics),
            right=figures,
        ),
        Table(
            "signature",
            ("parameter", "kind", "A", "B", "detail"),
            tuple((_parameter(s), s.kind, _side(s.a), _side(s.b), _signature_detail(s)) for s in row.signature),
            right=("A", "B"),
        ),
    ]
    for title, deltas in (
        ("op histogram", row.ops),
        ("fusions by kind", row.fusion_kinds),
        ("custom-call targets", row.custom_call_targets),
    ):
        cells = tuple((d.key, _number(d.a), _number(d.b), _signed(d.delta)) for d in deltas)
        sections.append(Table(title, ("name", "A", "B", "delta"), cells, right=figures))
    return [s for s in sections if s.rows]


def _signature_detail(change: SignatureChange) -> str:
    sizes = f"{_number(change.a_bytes)} -> {_number(change.b_bytes)} bytes" if change.a_bytes is not None else ""
    return "; ".join(part for part in (_signature_why(change), sizes) if part)


def _signature_why(change: SignatureChange) -> str:
    """The change's reason in count-recompiles' words, else the dims that vary (`dim 0`)."""
    dims = f"dim {', '.join(map(str, change.dims))}" if change.dims else ""
    return signature_detail(change.reason) or dims


def _signature_record(change: SignatureChange) -> dict[str, object]:
    """A signature change's JSON: its fields, the parameter and the detail (in place of the dims) in words."""
    fields: dict[str, object] = record(change)
    found = {("detail" if k == "dims" else k): v for k, v in fields.items()}
    worded = {"parameter": _parameter(change), "a": _side(change.a), "b": _side(change.b)}
    return found | worded | {"detail": _signature_why(change)}


def _parameter(change: SignatureChange) -> str | None:
    """The parameter a change is of, as count-recompiles prints it, or `(result)` for the entry's result."""
    return "(result)" if change.parameter is None else parameter_text(change.kind, change.parameter)


def _side(value: str | None) -> str:
    """One side's value; `(none)` where that side has no `sharding=`."""
    return "(none)" if value is None else value


def _diff_summary(rows: Sequence[FunctionDiff]) -> str:
    counts = {
        status: sum(1 for r in rows if r.status == status)
        for status in ("changed", "unchanged", "only_a", "only_b", "unknown")
    }
    return (
        f"{len(rows)} functions: {counts['changed']} changed, {counts['unchanged']} unchanged, "
        f"{counts['only_a']} only in A, {counts['only_b']} only in B"
        + (f", {counts['unknown']} unknown (a module did not parse)" if counts["unknown"] else "")
    )


def _heading(row: FunctionDiff) -> str:
    where = {"only_a": " (only in A)", "only_b": " (only in B)"}.get(row.status, "")
    unknown = f" (unknown: {', '.join(row.unreadable)} did not parse)" if row.unreadable else ""
    return f"{row.name}{where}{unknown}"


def _number(value: int | float | None) -> str:
    """Counts with thousands separators; seconds (roofline_seconds) in three digits."""
    if isinstance(value, float):
        return f"{value:.3g}"
    return "" if value is None else f"{value:,}"


def _signed(value: int | float | None) -> str:
    if isinstance(value, float):
        return f"{value:+.3g}"
    return "" if value is None else f"{value:+,}"


def _percent(value: float | None) -> str:
    return "" if value is None else f"{value:+.1f}%"


# --- cost, profile --------------------------------------------------------------------------------------
