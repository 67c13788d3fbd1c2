"""Each command's typed report as a `Document`: the JSON it writes, the tables people read, the CSV rows.

One function per command, named after its report. JSON is built from the report's rows (numbers keep
their types); tables show the columns that fit a terminal, Markdown may show more; CSV is one table
with every column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlainspect import __version__
from xlainspect.analysis.cache_inventory import timestamp
from xlainspect.analysis.collectives import Collective, CollectiveTotal
from xlainspect.analysis.commands.compiles import ModuleRow
from xlainspect.analysis.copies import Copy, CopyTotal
from xlainspect.analysis.divergence import host_list
from xlainspect.analysis.doctor import Finding
from xlainspect.analysis.fusions import Fusion, FusionKindTotal
from xlainspect.analysis.layouts import ArrayLayout, PaddingRow, PaddingTotal
from xlainspect.analysis.ops import FunctionOpCount, OpCount
from xlainspect.report.causes import causes_text, for_people, suggestion, violation_text
from xlainspect.report.document import Document, Entry, Heading, Lines, Table, fields, record, records, table

if TYPE_CHECKING:
    from xlainspect.analysis.cache_misses import CacheMiss
    from xlainspect.analysis.commands.cache import CacheReport
    from xlainspect.analysis.commands.compiles import ModulesReport, RecompileReport
    from xlainspect.analysis.commands.cost import CostReport
    from xlainspect.analysis.commands.diff import DiffReport
    from xlainspect.analysis.commands.graph import CollectivesReport, CopiesReport, FusionsReport, OpsReport
    from xlainspect.analysis.commands.layouts import LayoutsReport
    from xlainspect.analysis.commands.memory import MemoryReport
    from xlainspect.analysis.commands.parse import ParseReport
    from xlainspect.analysis.diff import Regression
    from xlainspect.analysis.doctor import DumpHealth
    from xlainspect.analysis.layouts import ArrayLayout
    from xlainspect.analysis.profile import ProfileReport
    from xlainspect.analysis.recompiles import FunctionCompiles


def parse_document(report: ParseReport) -> Document:
    columns = ("file", "module", "computations", "instructions", "entry")
    rows = table(None, report.modules, columns)
    notes = []
    if report.unknown_opcodes:  # a newer XLA's opcodes parse and are kept as written; not an error
        notes.append(
            f"note: opcodes unknown to xlainspect {__version__} (kept as written): " + ", ".join(report.unknown_opcodes)
        )
    return Document(records(report.modules), [rows], csv=rows, notes=notes)


# --- layout, layouts -----------------------------------------------------------------------------------


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


# --- fusions, copies, collectives, ops -----------------------------------------------------------------

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
    data = {key: [_json_record(r) for r in records(rows)], "totals": records(totals), **(extra or {})}
    blocks = [table(key, rows, shown), table("totals", totals, fields(total_type))]
    return Document(data, blocks, csv=table(None, rows, fields(row_type)))


def _json_record(row: dict) -> dict:
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


def doctor_document(health: DumpHealth) -> Document:
    data = {"root": str(health.root), "modules": health.modules, "files": health.files}
    data["findings"] = records(health.findings)
    verdict = f"{len(health.findings)} findings" if health.findings else "no findings: the dump looks healthy"
    title = f"{health.root}: {health.modules} modules, {health.files} files, {verdict}"
    rows = table(title, health.findings, fields(Finding))
    return Document(data, [rows] if health.findings else [Lines(title)], csv=rows)  # a sentence, not an empty table


def modules_document(report: ModulesReport) -> Document:
    """JSON: a list of modules. The host column only where the dump has hosts, seconds and the cache
    outcome only with the run's log."""
    columns = [
        c
        for c in fields(ModuleRow)
        if (c != "host" or any(m.host for m in report.modules)) and (c not in ("seconds", "cache") or report.times)
    ]
    title = f"{len(report.modules)} modules in {report.root}" + (f", {_seconds(report.times)}" if report.times else "")
    rows = table(title, report.modules, columns)
    return Document([dict(zip(columns, row)) for row in rows.rows], [rows], csv=rows, notes=_unpaired(report.times))


def _seconds(times) -> str:
    return f"{times.total_seconds:.2f} s compiling, {times.recompile_seconds:.2f} s of it recompiling"


def _hosts_title(hosts: int, disagreements) -> str:
    """Where the counts come from in a dump of several hosts: one usual host's, or hosts that disagree."""
    if hosts < 2:
        return ""
    if not disagreements:
        return f", on each of {hosts} hosts (one usual host's; doctor names odd hosts)"
    functions = ", ".join(dict.fromkeys(d.function for d in disagreements))
    return f", on {hosts} hosts that DISAGREE on {functions}: the counts are the most hosts' (see the notes)"


def _disagreement(found) -> str:
    """One line per odd group of hosts: which function, compile and hosts, and the first differing line."""
    odd, usual = host_list(found.odd_hosts, 10), host_list(found.usual_hosts)
    if found.compile is None:
        return f"{found.function}: {odd} compiled it {_times(found.odd_count)}, {usual} {_times(found.usual_count)}"
    return (
        f"{found.function} compile {found.compile}: {odd} compiled another program than {usual} "
        f"(line {found.line}: {found.usual_line[:100]!r} vs {found.odd_line[:100]!r})"
    )


def _times(count: int) -> str:
    return f"{count} time{'s' * (count != 1)}"


def _unpaired(times) -> list[str]:
    """Where the log's compiles and the dump's modules do not pair one to one."""
    return [f"not paired: {sentence}" for sentence in times.unpaired] if times else []


def recompiles_document(report: RecompileReport, *, ignore_eager: bool = False) -> Document:
    """JSON: every function with its causes and times; tables: recompiled functions first, eager ops
    compiled once folded into one row; `over budget:` notes and a failed gate for each violation."""
    shown = [r for r in report.functions if not (ignore_eager and r.eager)]
    times, profiled = report.times, report.profiled
    data = {
        "total_modules": sum(r.modules for r in shown),
        "functions": [
            _function_record(r)
            | _times_json(times, r.name)
            | ({"profile_compile_seconds": list(profiled[r.name])} if r.name in profiled else {})
            for r in shown
        ],
        "violations": [violation_text(v) for v in report.violations],
        "skipped": [{"path": str(s.path), "reason": s.reason} for s in report.skipped],
    }
    if report.disagreements:
        data["host_disagreements"] = records(report.disagreements)
    if times is not None:
        data |= {"recompile_seconds": times.recompile_seconds, "not_paired": times.unpaired}
    total, recompiled = sum(r.modules for r in shown), sum(1 for r in shown if r.modules > 1)
    columns = (
        ["function", "compiles"]
        + (["seconds", "per_compile"] if times else [])
        + (["profiled"] if profiled else [])
        + ["eager", "source", "why", "suggestion"]
    )
    hosts = max((r.hosts for r in shown), default=1)
    title = (
        f"{total} compile{'s' * (total != 1)} of {len(shown)} function{'s' * (len(shown) != 1)}, "
        f"{recompiled} compiled more than once"
        + _hosts_title(hosts, report.disagreements)
        + (f"; {_seconds(times)}" if times else "")
    )
    for_people = _with_profiled(_for_people(shown, times), profiled)
    flat = table(title, _with_profiled([_table_row(r, times) for r in shown], profiled), columns)
    notes = _unpaired(times) + [f"not paired with the profile: {s}" for s in report.profile_unpaired]
    notes += [f"over budget: {violation_text(v)}" for v in report.violations]
    notes += [f"hosts disagree: {_disagreement(d)}" for d in report.disagreements]
    return Document(
        data,
        [table(title, for_people, columns)],
        csv=flat,
        narrow=[Lines(title), *map(_function_entry, for_people)],
        notes=notes,
        gate_failed=bool(report.violations),
    )


def _function_record(row: FunctionCompiles) -> dict:
    """A function's JSON: its fields, the suggestion after its causes."""
    data = record(row)
    at = list(data).index("causes") + 1
    return dict([*list(data.items())[:at], ("suggestion", suggestion(row)), *list(data.items())[at:]])


def _function_entry(row: dict) -> Entry:
    """`function: N compiles, source, seconds`, then why and suggestion (narrow terminals)."""
    head = f"{row['function']}: {row['compiles']} compile{'s' * (row['compiles'] != 1)}"
    extra = [row.get("source") or "", f"{row['seconds']:.2f} s" if row.get("seconds") is not None else ""]
    texts = tuple((label, row[label]) for label in ("why", "suggestion") if row.get(label))
    return Entry(", ".join([head, *filter(None, extra)]), texts)


def _with_profiled(rows: list[dict], profiled: dict) -> list[dict]:
    for row in rows:
        if row["function"] in profiled:
            row["profiled"] = ", ".join("?" if s is None else f"{s:.2f}" for s in profiled[row["function"]])
    return rows


def _times_json(times, name: str) -> dict:
    """compile_seconds (per compile), seconds and recompile_seconds of one function, when a log is known."""
    function = times.functions.get(name) if times else None
    if function is None:
        return {}
    return {
        "compile_seconds": list(function.seconds),
        "cache": list(function.cache),
        "seconds": function.total_seconds,
        "recompile_seconds": function.recompile_seconds,
    }


def _table_row(row, times=None) -> dict:
    function = times.functions.get(row.name) if times else None
    seconds = (
        {}
        if function is None
        else {
            "seconds": function.total_seconds,
            "per_compile": ", ".join(_compile_cell(s, c) for s, c in zip(function.seconds, function.cache)),
        }
    )
    return {
        "function": row.name,
        "compiles": row.modules,
        "eager": row.eager,
        **seconds,
        "source": row.source or "",
        "why": "; ".join([*_unreadable(row), *causes_text(row.causes)]),
        "suggestion": suggestion(row) or "",
    }


def _unreadable(row) -> list[str]:
    """Compiles counted but not explained: their HLO file is damaged (named on stderr)."""
    n = row.unreadable
    return [f"{n} compile{'s' * (n != 1)} unreadable, not explained (see the skipped files)"] if n else []


def _compile_cell(seconds: float | None, cache: str | None) -> str:
    """`0.42`, or `0.01 hit` for an executable loaded from the persistent cache; `?` when the log has none."""
    return "?" if seconds is None else f"{seconds:.2f}" + (" hit" if cache == "hit" else "")


def _for_people(rows: list, times=None) -> list[dict]:
    """The user's functions first (recompiled ones first), then the eager traffic folded into one row:
    an eager flood is one problem with one fix, not dozens."""
    user, eager = for_people(rows)
    people = [_table_row(r, times) for r in user]
    if eager is None:
        return people
    folded = {
        "function": f"eager ops ({len(eager.functions)} jax functions)",
        "compiles": eager.compiles,
        "eager": True,
        "why": eager.summary(),
        "suggestion": suggestion(eager.functions[0]) or "",
    }
    if times:
        folded["seconds"] = sum(
            times.functions[r.name].total_seconds for r in eager.functions if r.name in times.functions
        )
    return [*people, folded]


# --- memory ---------------------------------------------------------------------------------------------

_MEMORY_COLUMNS = (
    "module",
    "function",
    "total_bytes",
    "reported_total_bytes",
    "parameter",
    "output",
    "temporary",
    "preallocated-temp",
    "thread-local",
    "constant",
    "peak_bytes",
    "peak_time",
    "peak_instruction",
)
_MEMORY_COMPACT = (
    "module",
    "total_bytes",
    "parameter",
    "output",
    "preallocated-temp",
    "peak_bytes",
    "peak_instruction",
)
_PEAK_COLUMNS = ("name", "shape", "bytes", "logical_bytes", "kind", "live_from", "live_to", "op_name", "source")


def memory_document(report: MemoryReport) -> Document:
    """Per module, bytes by allocation kind and the peak; then the buffers live at each peak (bars on a
    terminal, every column in Markdown)."""
    summaries = [_memory_summary(r) for r in report.modules]
    title = "Memory per module (bytes)"
    data = {"modules": [_memory_json(r) for r in report.modules]}
    blocks: list = [table(title, summaries, _MEMORY_COMPACT)]
    markdown: list = [table(title, summaries, _MEMORY_COLUMNS)]
    for row in report.modules:
        if row.top:
            peak = f"{row.module}: live at the peak (point {row.peak_time}, {row.peak_instruction or 'end'})"
            blocks.append(table(peak, _bars(row.top), ("buffer", "shape", "bytes", "", "op_name")))
            markdown.append(table(peak, row.top, _PEAK_COLUMNS))
    return Document(data, blocks, csv=table(title, summaries, _MEMORY_COLUMNS), markdown=markdown)


def _memory_summary(row) -> dict:
    return {
        "module": row.module,
        "function": row.function,
        "total_bytes": row.total_bytes,
        "reported_total_bytes": row.reported_total_bytes,
        **row.by_kind,
        "peak_bytes": row.peak_bytes,
        "peak_time": row.peak_time,
        "peak_instruction": row.peak_instruction,
    }


def _memory_json(row) -> dict:
    document = record(row)
    document.pop("sequence")
    document.pop("curve")
    return document


def _bars(buffers) -> list[dict]:
    """The biggest buffers live at the peak as horizontal bars, sized against the biggest."""
    biggest = max(b.bytes for b in buffers) or 1
    return [
        {
            "buffer": b.name,
            "shape": b.shape,
            "bytes": b.bytes,
            "": "█" * max(1, round(30 * b.bytes / biggest)),
            "op_name": b.op_name,
        }
        for b in buffers
    ]


# --- diff -----------------------------------------------------------------------------------------------


def diff_document(report: DiffReport, *, show_all: bool = False, gate: bool = False) -> Document:
    """Per function that changed (every one with `show_all`): its metrics, signature, op histogram,
    fusion kinds and custom-call targets that differ. `gate`: regressions fail it."""
    shown = [r for r in report.functions if show_all or r.status != "unchanged"]
    data = {
        "a": str(report.a),
        "b": str(report.b),
        "functions": [_function_json(r) for r in report.functions],
        "regressions": [regression_text(r) for r in report.regressions],
    }
    summary = _diff_summary(report.functions)
    blocks: list = [Lines(summary)]
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
    return Document(data, blocks, markdown=markdown, notes=notes, gate_failed=failed, gate_undecided=undecided)


def regression_text(found: Regression) -> str:
    """`fn: peak_memory 396 -> 748 (+88.9%), over --max-increase peak_memory=50%`."""
    metric = found.metric
    if found.threshold.relative:
        amount = f"+{metric.change:.1f}%" if metric.change is not None else "from 0"
    else:
        amount = f"+{metric.delta:,}"
    over = f"over --max-increase {found.threshold}"
    return f"{found.function}: {metric.name} {metric.a:,} -> {metric.b:,} ({amount}), {over}"


def _function_json(row) -> dict:
    """`metrics` {name: {a, b, delta, change}}, `ops` {opcode: {a, b, delta}}, `signature` [changes]."""

    def counts(deltas):
        return {d.key: {"a": d.a, "b": d.b, "delta": d.delta} for d in deltas}

    return {
        "name": row.name,
        "status": row.status,
        "metrics": {m.name: {"a": m.a, "b": m.b, "delta": m.delta, "change": m.change} for m in row.metrics},
        "ops": counts(row.ops),
        "fusion_kinds": counts(row.fusion_kinds),
        "custom_call_targets": counts(row.custom_call_targets),
        "signature": [record(s) for s in row.signature],
        "unreadable": list(row.unreadable),
    }


def _sections(row) -> list[Table]:
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
            tuple((s.parameter, s.kind, s.a, s.b, _signature_detail(s)) for s in row.signature),
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


def _signature_detail(change) -> str:
    sizes = f"{_number(change.a_bytes)} -> {_number(change.b_bytes)} bytes" if change.a_bytes is not None else ""
    return "; ".join(part for part in (change.detail, sizes) if part)


def _diff_summary(rows) -> str:
    counts = {
        status: sum(1 for r in rows if r.status == status)
        for status in ("changed", "unchanged", "only_a", "only_b", "unknown")
    }
    return (
        f"{len(rows)} functions: {counts['changed']} changed, {counts['unchanged']} unchanged, "
        f"{counts['only_a']} only in A, {counts['only_b']} only in B"
        + (f", {counts['unknown']} unknown (a module did not parse)" if counts["unknown"] else "")
    )


def _heading(row) -> str:
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
    return {k: _duration(v) if k.endswith("_seconds") and v is not None else v for k, v in row.items()}


def _duration(seconds: float) -> str:
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
    report: ProfileReport, top: int | None = 20, late: list | None = None, after: int = 0, phases: bool = False
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
        fusions = ", ".join(f"{name} ({n} kernels, {_duration(t)})" for name, n, t in tuning.per_fusion[:10])
        lines.append(
            f"autotuning: {tuning.kernels:,} kernels, {_duration(tuning.seconds)}, per fusion tuned: {fusions}"
            + (f" and {len(tuning.per_fusion) - 10} more" if len(tuning.per_fusion) > 10 else "")
        )
    events, seconds = report.other_device
    if events:
        lines.append(
            f"device work of no function outside compiles (transfers): {events:,} events, {_duration(seconds)}"
        )
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
    return readable(row) | ({"seconds": _duration(seconds)} if isinstance(seconds, float) else {})


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
            f"compile {index + 1}: {event.module or event.function or '?'}, {_duration(event.seconds)}"
            f" at {_duration(event.start_seconds)}, step {event.step}"
        )
        blocks.append(table(title, [_timed(r) for r in rows], ("phase", "seconds", "detail")))
    return blocks


def _late_message(compile_event) -> str:
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
    timing = f", {_duration(per_step)} per step" if per_step is not None else ""
    ranked = (
        "time lost (measured - roofline)" if any(op.lost_seconds is not None for op in report.ops) else "measured time"
    )
    return f"{len(steps)} steps ({report.step_source}){timing}; {len(report.ops)} ops by {ranked}"


# --- the persistent cache -------------------------------------------------------------------------------


def cache_document(report: CacheReport, where: str, dump: str) -> Document:
    """`{"functions", "entries"}` (and `"dump"` with one), entry times as UTC ISO 8601."""
    cached, functions, joined = report.cached, report.functions, report.joined
    entries = [record(e) | {"modified": timestamp(e.modified)} for e in cached.entries]
    data = {"functions": records(functions), "entries": entries}
    if joined is not None:
        data["dump"] = records(joined)
    note = "many entries: a key that changes per run? (jax #21159)"
    rows = [record(f) | {"note": note if f.many_entries else ""} for f in functions]
    title = f"{len(cached.entries)} entries of {len(functions)} functions in {where}"
    inventory = table(title, rows, ("name", "entries", "bytes", "compile_seconds", "oldest", "newest", "note"))
    blocks = [inventory]
    if joined is not None:
        title = f"compiles of {dump}: {sum(r.cached for r in joined)} of {len(joined)} in the cache"
        blocks.append(table(title, joined, ("function", "compile", "module_id", "cached", "matched_by", "key")))
    return Document(data, blocks, csv=inventory)


def cache_misses_document(rows: list[CacheMiss], a: str, b: str) -> Document:
    missed = sum(r.status != "hit" for r in rows)
    title = f"{b} against {a}: {missed} of {len(rows)} functions missed the persistent cache"
    shown = table(title, rows, ("name", "status", "changed", "detail"))
    notes = []
    if all(r.status == "off" for r in rows):
        notes.append(f"{b}: no persistent-cache lines: the cache was off, or jax._src.compiler was not logged at DEBUG")
    return Document({"functions": records(rows)}, [shown], csv=shown, notes=notes)
