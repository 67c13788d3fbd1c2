"""`cost` and `profile`: FLOPs, bytes and roofline time per op, and measured time beside them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlainspect.report.document import Document, Lines, Table, record, records, table

if TYPE_CHECKING:
    from xlainspect.analysis.commands.cost import CostReport
    from xlainspect.analysis.profile import ProfileReport
    from xlainspect.analysis.profile_compiles import CompileEvent


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
    blocks: list = [table(title, people, _COST_MODULE_COMPACT)]
    markdown: list = [table("cost per call of each module", people, COST_MODULE_COLUMNS)]
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
    notes = []
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


def readable(row: dict) -> dict:
    """Seconds as `1.23 us` for people (a table's two decimals would print 0.00)."""
    return {k: duration(v) if k.endswith("_seconds") and v is not None else v for k, v in row.items()}


def duration(seconds: float) -> str:
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


PROFILE_OP_COLUMNS = (
    "module",
    "function",
    "name",
    "count",
    "per_step_count",
    "total_seconds",
    "per_step_seconds",
    "min_seconds",
    "median_seconds",
    "max_seconds",
    "step_share",
    "kind",
    "executions",
    "flops",
    "bytes_accessed",
    "measured_bytes_per_second",
    "roofline_seconds",
    "efficiency",
    "lost_seconds",
    "bound",
    "op_name",
    "source",
)


_PROFILE_OP_COMPACT = (
    "module",
    "name",
    "kind",
    "count",
    "per_step_count",
    "per_step_seconds",
    "median_seconds",
    "step_share",
    "roofline_seconds",
    "efficiency",
    "lost_seconds",
    "op_name",
)


_COST_ONLY = ("kind", "roofline_seconds", "efficiency", "lost_seconds", "op_name")


_COMPILE_COLUMNS = (
    "name",
    "function",
    "module",
    "start_seconds",
    "seconds",
    "step",
    "thread",
    "jax_seconds",
    "passes_seconds",
    "autotuning_seconds",
    "codegen_seconds",
)


_STEP_COLUMNS = ("number", "start_seconds", "seconds", "busy_seconds", "idle_seconds", "kernels")


_FUNCTION_COLUMNS = ("function", "modules", "kernels", "seconds", "mean_step_seconds")


_UNPLACED_COLUMNS = ("module", "hlo_op", "kernel", "count", "seconds", "reason")


_UNPLACED_SHOWN = 10


def profile_document(
    report: ProfileReport,
    top: int | None = 20,
    late: list[CompileEvent] | None = None,
    after: int = 0,
    phases: bool = False,
) -> Document:
    """JSON: steps, functions, the `top` ops, placement, autotuning and every compile with its phases;
    tables: ops (cost columns only where a dump gave costs), steps, functions, compiles; `phases`: each
    compile's time by phase instead. `late`: compiles after step `after`, each a failed gate."""
    ops = [record(op) for op in report.ops[:top]]
    compiles = [record(c) for c in report.compiles]
    violations = [_late_message(c) for c in late or []]
    placed, kernels = report.placed
    data = {
        "paths": report.paths,
        "step_source": report.step_source,
        "steps": records(report.steps),
        "functions": records(report.functions),
        "placed": {"on_an_op": placed, "kernels": kernels},
        "unplaced": records(report.unplaced),
        "autotuning": record(report.autotuning),
        "other_device": {"events": report.other_device[0], "seconds": report.other_device[1]},
        "joined": report.joined,
        "hlo_source": report.hlo_source,
        "ops": ops,
        "compiles": compiles,
        "violations": violations,
    }

    def op_table(columns: tuple[str, ...]) -> Table:
        if not report.joined:  # no dump: the cost columns would be empty
            columns = tuple(c for c in columns if c not in _COST_ONLY)
        return table(_profile_title(report), [_op_for_people(op) for op in ops], columns)

    compile_rows = [_timed(_compile_row(c)) for c in report.compiles]
    compile_table = table(f"{len(compiles)} compile(s) in the trace", compile_rows, _COMPILE_COLUMNS)
    notes = [f"note: {n}" for n in report.notes] + [f"compiled after step {after}: {v}" for v in violations]
    if phases:
        blocks: list = [compile_table, *_phase_tables(report)]
        return Document(
            data, blocks, csv=table(None, compile_rows, _COMPILE_COLUMNS), notes=notes, gate_failed=bool(violations)
        )
    summary = _profile_summary(report)
    blocks = [op_table(_PROFILE_OP_COMPACT), *summary, compile_table]
    markdown = [op_table(PROFILE_OP_COLUMNS), *summary, compile_table]
    return Document(
        data,
        blocks,
        csv=table(None, ops, PROFILE_OP_COLUMNS),
        markdown=markdown,
        notes=notes,
        gate_failed=bool(violations),
    )


def _profile_summary(report: ProfileReport) -> list:
    """Steps (busy and idle device time), functions' device time, where kernels were placed, autotuning."""
    steps = table(
        f"{len(report.steps)} step(s): {report.step_source}", [_timed(record(s)) for s in report.steps], _STEP_COLUMNS
    )
    functions = table(
        "device time per function (its kernels, autotuning apart)",
        [_timed(_function_row(f)) for f in report.functions],
        _FUNCTION_COLUMNS,
    )
    placed, kernels = report.placed
    share = f" ({placed / kernels:.1%})" if kernels else ""
    lines = [f"kernel executions of compiled functions on an HLO op: {placed:,} of {kernels:,}{share}"]
    tuning = report.autotuning
    if tuning is not None:
        fusions = ", ".join(f"{name} ({n} kernels, {duration(t)})" for name, n, t in tuning.per_fusion[:10])
        lines.append(
            f"autotuning: {tuning.kernels:,} kernels, {duration(tuning.seconds)}, per fusion tuned: {fusions}"
            + (f" and {len(tuning.per_fusion) - 10} more" if len(tuning.per_fusion) > 10 else "")
        )
    events, seconds = report.other_device
    if events:
        lines.append(f"device work of no function outside compiles (transfers): {events:,} events, {duration(seconds)}")
    blocks: list = [steps, functions, Lines("\n".join(lines))]
    if report.unplaced:
        rows = [_timed(record(u)) for u in report.unplaced[:_UNPLACED_SHOWN]]
        more = len(report.unplaced) - len(rows)
        note = f"and {more} more (JSON has them all)" if more > 0 else ""
        blocks.append(table("kernel executions not placed on an HLO op", rows, _UNPLACED_COLUMNS, note))
    return blocks


def _timed(row: dict) -> dict:
    """`readable`, and a plain `seconds` column with its unit too."""
    seconds = row.get("seconds")
    return readable(row) | ({"seconds": duration(seconds)} if isinstance(seconds, float) else {})


def _function_row(function) -> dict:
    row = record(function)
    steps = row.pop("per_step_seconds")
    row["mean_step_seconds"] = sum(steps) / len(steps) if steps else None
    return row


def _compile_row(compile_event) -> dict:
    row = record(compile_event)
    phases = row.pop("phases") or {}
    for key in ("jax_seconds", "passes_seconds", "autotuning_seconds", "codegen_seconds"):
        row[key] = phases.get(key)
    return row


def _phase_tables(report: ProfileReport) -> list:
    """One table per compile: its phases, its ten slowest passes and the fusions it tuned."""
    blocks = []
    for index, event in enumerate(report.compiles):
        phases = event.phases
        if phases is None:
            continue
        rows = [
            {"phase": "jax (tracing, lowering)", "seconds": phases.jax_seconds, "detail": ""},
            {"phase": "  lowering", "seconds": phases.lowering_seconds, "detail": "lower_sharding_computation"},
            {"phase": "XLA passes", "seconds": phases.passes_seconds, "detail": ""},
            *(
                {"phase": "  pass", "seconds": p.seconds, "detail": f"{p.name} ({p.runs} run(s))"}
                for p in phases.passes
            ),
            {"phase": "autotuning", "seconds": phases.autotuning_seconds, "detail": ""},
            *(
                {
                    "phase": "  fusion tuned",
                    "seconds": t.device_seconds,
                    "detail": f"{t.fusion} ({t.kernels} kernels on the device)",
                }
                for t in phases.tuned
            ),
            {"phase": "codegen and the rest", "seconds": phases.codegen_seconds, "detail": ""},
        ]
        title = (
            f"compile {index + 1}: {event.module or event.function or '?'}, {duration(event.seconds)}"
            f" at {duration(event.start_seconds)}, step {event.step}"
        )
        blocks.append(table(title, [_timed(r) for r in rows], ("phase", "seconds", "detail")))
    return blocks


def _late_message(compile_event: CompileEvent) -> str:
    return (
        f"{compile_event.function or '?'} at step {compile_event.step} "
        f"({compile_event.seconds:.3f} s, {compile_event.name})"
    )


def _op_for_people(op: dict) -> dict:
    """Seconds with units, and the share and efficiency as percentages (an op on CPU against a GPU's
    roofline is at 0.01%: two decimals would print 0.00)."""
    shares = {k: f"{op[k] * 100:.3g}%" for k in ("step_share", "efficiency") if op[k] is not None}
    return readable(op) | shares


def _profile_title(report: ProfileReport) -> str:
    steps = report.steps
    per_step = sum(s.seconds for s in steps) / len(steps) if steps else None
    timing = f", {duration(per_step)} per step" if per_step is not None else ""
    ranked = (
        "time lost (measured - roofline)" if any(op.lost_seconds is not None for op in report.ops) else "measured time"
    )
    return f"{len(steps)} steps ({report.step_source}){timing}; {len(report.ops)} ops by {ranked}"


# --- the persistent cache -------------------------------------------------------------------------------
