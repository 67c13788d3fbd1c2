"""`diff A B` of two profiles, in words: the first line says whether the step changed beyond its noise and
whether the program or the machine did it; then the gated figures, the step breakdown and the ops.

"step 2.18 ms -> 6.01 ms (+175%, significant): program change: 9 ops of jit_train_step changed (+3.64 ms a
step: ynn_fusion, dot.3, ynn_fusion.1 ...); the rest scaled 1.49x", or "step 2.18 ms -> 1.86 ms (-15%,
within noise): ops 1.04x slower as a whole, none singled out: the machine, not the program". The figures
are `analysis.profile.compare`'s; this module only words them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlainspect.analysis.profile.compare import MATERIAL
from xlainspect.report.document import Block, Document, Lines, Table, record, records, table
from xlainspect.report.sections import Section
from xlainspect.report.views.cost import duration

if TYPE_CHECKING:
    from xlainspect.analysis.commands.diff import ProfileDiff
    from xlainspect.analysis.commands.report import DumpFacts
    from xlainspect.analysis.profile.compare import GateFailure, MetricChange, OneSided, ProfilesCompared

NAMED = 3
"""Ops the first line names."""

OP_COLUMNS = (
    "function",
    "name",
    "before_name",
    "op_name",
    "opcode",
    "shape",
    "shape_before",
    "before_seconds_per_step",
    "after_seconds_per_step",
    "ratio",
    "residual",
    "excess_seconds_per_step",
    "changed",
)
METRIC_COLUMNS = ("name", "before_seconds", "after_seconds", "ratio", "p_value", "significant")
ONE_SIDED_COLUMNS = ("side", "function", "name", "op_name", "opcode", "shape", "seconds_per_step")


def profile_diff_document(report: ProfileDiff, *, gate: bool = False) -> Document:
    """The first line, the gated figures, the breakdown's categories and every op matched, removed or
    added; JSON has them all (`step`, `categories`, `uniform_factor`, `ops`, `removed`, `added`); CSV the
    ops. `gate`: a figure that grew significantly past its `--max-increase` fails it."""
    found = report.compared
    failures = [failure_text(f) for f in found.failures]
    data: dict[str, object] = {
        "a": str(report.a),
        "b": str(report.b),
        "said": compared_headline(found),
        "function": found.function,
        "step": _metric_json(found.step),
        "metrics": {m.name: _metric_json(m) for m in found.metrics},
        "categories": {
            c.category: {"before_seconds": c.before_seconds, "after_seconds": c.after_seconds} for c in found.categories
        },
        "uniform_factor": found.uniform_factor,
        "ops": records(found.ops),
        "removed": records(found.removed),
        "added": records(found.added),
        "regressions": failures,
    }
    blocks: list[Block] = [Lines(compared_headline(found)), *compared_tables(found)]
    title = f"## xlainspect diff: `{report.a}` -> `{report.b}`"
    notes = [f"regression: {text}" for text in failures]
    return Document(
        data,
        blocks,
        csv=table(None, found.ops, OP_COLUMNS),
        markdown=[Lines(title), *blocks],
        notes=notes,
        gate_failed=gate and bool(failures),
    )


def compared_tables(found: ProfilesCompared) -> list[Table]:
    """The figures, the breakdown, the ops matched, and those of one run only."""
    metrics = table(
        "the step's figures (medians of the steps without a compile)",
        [_metric_row(m) for m in found.metrics],
        METRIC_COLUMNS,
    )
    categories = table(
        "the typical step's breakdown, a step",
        [
            {"category": c.category, "before": duration(c.before_seconds), "after": duration(c.after_seconds)}
            for c in found.categories
            if c.before_seconds or c.after_seconds
        ],
        ("category", "before", "after"),
    )
    ops = table(
        f"{len(found.ops)} ops matched by function, op_name, opcode and shape, most excess first",
        [_op_row(op) for op in records(found.ops)],
        OP_COLUMNS,
    )
    one_sided = [_one_sided_row("removed", op) for op in found.removed]
    one_sided += [_one_sided_row("added", op) for op in found.added]
    return [
        metrics,
        categories,
        ops,
        *([table("ops of one run only", one_sided, ONE_SIDED_COLUMNS)] if one_sided else []),
    ]


def compared_headline(found: ProfilesCompared) -> str:
    """One sentence: the step before and after with its change and significance, then what changed it:
    the program (ops beyond the rest's scaling, added or removed), the host, or the machine."""
    step = found.step
    change = f"{step.ratio - 1:+.0%}" if step.ratio is not None else "from 0"
    said = f"step {duration(step.before_seconds)} -> {duration(step.after_seconds)} ({change}, "
    said += "significant)" if step.significant else "within noise)"
    factor = found.uniform_factor or 1.0
    program = _program(found, factor)
    clauses = [clause for clause in (program, _host(found)) if clause]
    if not clauses:
        slower = "slower" if factor >= 1 else "faster"
        shown = factor if factor >= 1 else 1 / factor
        return f"{said}: ops {shown:.2f}x {slower} as a whole, none singled out: the machine, not the program"
    rest = "the rest" if program else "the ops"
    return f"{said}: " + "; ".join(clauses) + f"; {rest} scaled {factor:.2f}x"


def _program(found: ProfilesCompared, factor: float) -> str | None:
    """`program change: 9 ops of jit_f changed, 2 added, 1 removed (+3.7 ms a step: names ...)`, None where
    no op moved beyond the rest and none of a material time came or went."""
    material = MATERIAL * found.step.before_seconds
    changed = [op for op in found.ops if op.changed]
    added = [op for op in found.added if op.seconds_per_step >= material]
    removed = [op for op in found.removed if op.seconds_per_step >= material]
    if not changed and not added and not removed:
        return None
    seconds = sum(op.excess_seconds_per_step for op in changed)
    seconds += sum(op.seconds_per_step for op in found.added) - sum(
        op.seconds_per_step * factor for op in found.removed
    )
    counts = [
        f"{count} {how}"
        for count, how in ((len(changed), "changed"), (len(added), "added"), (len(removed), "removed"))
        if count
    ]
    functions = {op.function for op in [*changed, *added, *removed]}
    whose = f" of {next(iter(functions))}" if len(functions) == 1 else ""
    first, _, kind = counts[0].partition(" ")
    counts[0] = f"{first} op{'s' if first != '1' else ''}{whose} {kind}"
    moved = sorted(
        [(abs(op.excess_seconds_per_step), op.name) for op in changed] + [(_weight(op), op.name) for op in added],
        reverse=True,
    )
    names = ", ".join(name for _, name in moved[:NAMED]) + (" ..." if len(moved) > NAMED else "")
    return f"program change: {', '.join(counts)} ({_signed(seconds)} a step: {names})"


def _weight(op: OneSided) -> float:
    return op.seconds_per_step


def _host(found: ProfilesCompared) -> str | None:
    """`the host +2.36 ms a step (216 us -> 2.58 ms)` where the host's time changed significantly."""
    host = next(m for m in found.metrics if m.name == "host_seconds")
    if not host.significant:
        return None
    delta = host.after_seconds - host.before_seconds
    return f"the host {_signed(delta)} a step ({duration(host.before_seconds)} -> {duration(host.after_seconds)})"


def _signed(seconds: float) -> str:
    return ("+" if seconds >= 0 else "-") + duration(abs(seconds))


def failure_text(failure: GateFailure) -> str:
    """`step_seconds 2.18 ms -> 6.01 ms (+175%, significant), over --max-increase step_seconds=5%`."""
    metric = failure.metric
    change = f"{metric.ratio - 1:+.0%}" if metric.ratio is not None else "from 0"
    before, after = duration(metric.before_seconds), duration(metric.after_seconds)
    return f"{metric.name} {before} -> {after} ({change}, significant), over --max-increase {failure.threshold}"


def _metric_json(metric: MetricChange) -> dict[str, object]:
    row: dict[str, object] = record(metric)
    del row["name"]
    return row


def _metric_row(metric: MetricChange) -> dict[str, object]:
    return {
        "name": metric.name,
        "before_seconds": duration(metric.before_seconds),
        "after_seconds": duration(metric.after_seconds),
        "ratio": f"{metric.ratio:.3f}" if metric.ratio is not None else "",
        "p_value": f"{metric.p_value:.2g}" if metric.p_value is not None else "",
        "significant": metric.significant,
    }


def _op_row(row: dict[str, object]) -> dict[str, object]:
    """An op's record, its seconds with units and its ratios to three decimals."""
    shown = dict(row)
    for key in ("before_seconds_per_step", "after_seconds_per_step"):
        shown[key] = duration(float(str(row[key])))
    shown["excess_seconds_per_step"] = _signed(float(str(row["excess_seconds_per_step"])))
    for key in ("ratio", "residual"):
        shown[key] = f"{row[key]:.3f}" if isinstance(row[key], float) else ""
    return shown


def _one_sided_row(side: str, op: OneSided) -> dict[str, object]:
    return {"side": side, **record(op), "seconds_per_step": duration(op.seconds_per_step)}


def compared_section(facts: DumpFacts) -> Section | None:
    """`report --profile B --baseline A`: the profile against the baseline's, as `diff A B` words it."""
    if facts.compared is None:
        return None
    found = facts.compared
    return Section("compared", "Compared with the baseline", compared_headline(found), compared_tables(found))
