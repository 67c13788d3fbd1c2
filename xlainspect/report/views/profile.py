"""`profile`: the step the user waits for, measured time per op beside its roofline, steps, functions
and compiles, in words.

The first line is the step the user waits for (`ProfileReport.step_summary` and its median step): "jit_train_step:
2.37 ms a step (median of 5 without a compile); device busy 531 us (22%); host-bound: ..." and what to do
first for that bound. The figures are the analysis's; this module only words them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlainspect.analysis.profile.model import CATEGORIES, ProfileNote
from xlainspect.report.document import Block, Document, Lines, Table, record, records, table
from xlainspect.report.views.cost import duration, readable
from xlainspect.report.views.kernels import By, allocator_table, by_table, detail_blocks, details_data

if TYPE_CHECKING:
    from xlainspect.analysis.profile import ProfileReport, StepSummary, StepTime, Unplaced
    from xlainspect.analysis.profile.compiles import CompileEvent
    from xlainspect.analysis.profile.model import FunctionTime, OpTime

STEP_COLUMNS = (
    "number",
    "start_seconds",
    "wall_seconds",
    "busy_seconds",
    "idle_seconds",
    "bound",
    "compiles",
    "kernels",
)

HOST_SHOWN = 3
"""What the host ran, in the first line: its largest shares."""


_NOT_JOINED = "none of the traced modules is in this dump (module ids and names differ)"


_HLO_SOURCE = {"trace": "embedded in the trace"}
"""Where a profile's costs come from, as JSON names it (`ProfileReport.hlo_source`)."""


def step_source_text(report: ProfileReport) -> str:
    """How the profile found its steps: `step markers`, `none`, or whose executions they are and why."""
    if report.step_source != "executions":
        return report.step_source
    how = "named by --step-function" if report.step_named else "the function with the most device time"
    return f"executions of {report.step_function}, {how}"


def unplaced_record(unplaced: Unplaced) -> dict[str, object]:
    """An unplaced row's fields, its reason in words."""
    return record(unplaced) | {"reason": not_placed_text(unplaced)}


def not_placed_text(unplaced: Unplaced) -> str | None:
    """Why kernels of a command buffer were put on no HLO op, in words (None: their commands name none)."""
    why, buffer, module = unplaced.reason, unplaced.hlo_op, unplaced.module
    if why is None:
        return None
    if why.kind == "no_dump":
        return "no --dump: the dump's thunk sequence places a command buffer's kernels"
    if why.kind == "no_sequence":
        return f"the dump has no thunk sequence of {module}"
    if why.kind == "not_a_command_buffer":
        return f"{buffer} is not a command buffer of {module}'s thunk sequence"
    if why.kind == "no_command":
        return f"no {why.work} command in {buffer}"
    return (
        f"{why.events} {why.work} events for {why.commands} {why.work} commands of {buffer}, "
        "and not one between its neighbours"
    )


def note_text(note: ProfileNote) -> str:
    """Why a profile's ops have no costs, in words."""
    if note.kind == "embedded_hlo":
        return f"{note.where}: {note.error}"
    if note.kind == "dump_unreadable":
        return (
            f"{note.where}: the traced modules are in this dump but their files could not be read "
            f"(skipped: {note.error}); ops are shown without costs"
        )
    if note.kind == "dump_not_joined":
        return f"{note.where}: {_NOT_JOINED}; ops are shown without costs"
    return f"{note.where}: {_NOT_JOINED}: a profile of another run? Its ops are shown without costs."


def step_headline(report: ProfileReport) -> str | None:
    """The first line of `profile`: the median step without a compile, its device share and its bound
    with what to do first; None without steps."""
    return headline(report.step_summary, report.steps, report.step_source)


def headline(
    summary: StepSummary | None, steps: list[StepTime], step_source: str | None, device: str = "device"
) -> str | None:
    """`step_headline` of a profile's summary, steps and step source (the report's first line too, which
    names the `device`: `GPU` where the dump says the function ran on one)."""
    if summary is None:
        return None
    step = summary.typical
    how = f"median of {summary.steps}" + (" without a compile" if summary.compiled and summary.steps else "")
    if summary.compiled and summary.steps == len(steps):
        how = f"median of {summary.steps}; every step compiled"
    busy = step.busy_seconds / step.wall_seconds if step.wall_seconds else 0.0
    source = "" if step_source == "step markers" else "; steps are one execution to the next"
    name = summary.function or summary.marker or "the program"
    return (
        f"{name}: {duration(summary.step_seconds)} a step ({how}{source}); "
        f"{device} busy {duration(step.busy_seconds)} ({busy:.0%}); " + bound_advice(step, summary.function)
    )


IDLE_FIXED = ("host", "input", "launch", "compile")
"""The idle causes `idle_advice` words (autotuning is compiling's)."""


def bound_advice(step: StepTime, function: str | None) -> str:
    """`<bound>-bound: <what holds the step> (seconds a step): <what to do first>`; `function`: the step's."""
    if step.bound in IDLE_FIXED:
        return f"{step.bound}-bound: {idle_advice(step.bound, step, function)}"
    busy = duration(step.busy_seconds)
    return f"device-bound: the device is busy {busy} a step; start with the ops that lose the most time below"


def idle_advice(cause: str, step: StepTime, function: str | None) -> str:
    """What one idle cause of `IDLE_FIXED` costs the step, and what to do about it (the headline's words
    where it bounds the step; the report's finding where it does not); `function`: the step's."""
    parts = step.breakdown
    if cause == "host":
        shown = [(name, seconds) for name, seconds in step.host.items() if seconds >= parts["host"] / 100]
        ran = ", ".join(f"{name} {duration(seconds)}" for name, seconds in shown[:HOST_SHOWN])
        first = (
            "the step function's own dispatch holds the device: run more work per call (several steps in one "
            "jit with jax.lax.scan), pass arrays already on the device"
            if shown and shown[0][0] == function
            else "move that work off the step's path (jit it into the step, or prepare the next batch while "
            "the device runs)"
        )
        return f"the device waits {duration(parts['host'])} a step while the host runs {ran}; {first}"
    if cause == "input":
        return (
            f"the device waits {duration(parts['input'])} a step for host-to-device transfers; "
            "put the next batch on the device ahead of the step (prefetch with jax.device_put)"
        )
    if cause == "launch":
        return (
            f"{duration(parts['launch'])} a step in gaps between the kernels of one execution; "
            "give each kernel more work (fewer, larger ops; a larger batch)"
        )
    compiling = parts.get("compile", 0.0) + parts.get("autotune", 0.0)
    return f"{duration(compiling)} of the step compiles; find why with count-recompiles and compile once"


def step_row(step: StepTime) -> dict[str, object]:
    """A step as a table row: its figures and its breakdown, one column per category."""
    row = {column: getattr(step, column) for column in STEP_COLUMNS}
    parts = {category: duration(seconds) if seconds else "" for category, seconds in step.breakdown.items()}
    worded: dict[str, object] = readable(row)
    return worded | parts | {"host_ran": ", ".join(list(step.host)[:HOST_SHOWN])}


PROFILE_OP_COLUMNS = (
    "module",
    "function",
    "name",
    "kernels",
    "kernels_per_step",
    "total_seconds",
    "wait_seconds",
    "seconds_per_step",
    "seconds_per_step_median_device",
    "seconds_per_step_max_device",
    "slowest_device",
    "devices",
    "wait_seconds_per_step",
    "min_kernel_seconds",
    "median_kernel_seconds",
    "max_kernel_seconds",
    "step_share",
    "kind",
    "executions_per_call",
    "executions_in_trace",
    "seconds_per_execution",
    "flops",
    "bytes_accessed",
    "measured_bytes_per_second",
    "roofline_seconds",
    "efficiency",
    "lost_seconds",
    "lost_seconds_per_step",
    "bound",
    "op_name",
    "source",
)
"""A name ending `_per_step` is one device's (the mean over the devices that ran the op; `_median_device`,
`_max_device`: the median and the slowest device's) over the steps the op's module (the compiled function
it is in) ran in; `_per_execution`, over its executions (a library call of several kernels is one);
`kernel_`, one kernel; `total_`/`lost_seconds` and `executions_in_trace`, the whole trace, every device's
summed. `wait_seconds` (a collective's, in a job of several devices): of its time, the wait for the last
peer."""

_WAIT_ONLY = ("wait_seconds", "wait_seconds_per_step")
"""Shown where some op is a collective of a job (`OpTime.wait_seconds`)."""
_DEVICES_ONLY = ("seconds_per_step_median_device", "seconds_per_step_max_device", "slowest_device", "devices")
"""Shown where some op or function ran on several devices of the host."""


_PROFILE_OP_COMPACT = (
    "module",
    "name",
    "kind",
    "kernels_per_step",
    "seconds_per_step",
    "seconds_per_step_max_device",
    "slowest_device",
    "wait_seconds_per_step",
    "seconds_per_execution",
    "step_share",
    "roofline_seconds",
    "efficiency",
    "lost_seconds_per_step",
    "op_name",
)


_COST_ONLY = (
    "kind",
    "seconds_per_execution",
    "roofline_seconds",
    "efficiency",
    "lost_seconds",
    "lost_seconds_per_step",
    "op_name",
)


_PHASE_COLUMNS = ("jax_seconds", "passes_seconds", "autotuning_seconds", "codegen_seconds")
"""A compile's phases (`CompilePhases`) as columns of its row."""


_COMPILE_COLUMNS = ("name", "function", "module", "start_seconds", "seconds", "step", "thread", *_PHASE_COLUMNS)


_FUNCTION_COLUMNS = (
    "function",
    "modules",
    "kernels",
    "seconds",
    "seconds_per_step",
    "seconds_per_step_median_device",
    "seconds_per_step_max_device",
    "slowest_device",
    "devices",
)


_UNPLACED_COLUMNS = ("module", "hlo_op", "kernel", "count", "seconds", "reason")


_UNPLACED_SHOWN = 10


def profile_document(
    report: ProfileReport,
    top: int | None = 20,
    late: list[CompileEvent] | None = None,
    after: int = 0,
    phases: bool = False,
    by: By | None = None,
) -> Document:
    """JSON: steps, functions, the `top` ops, placement, autotuning and every compile with its phases;
    tables: ops (cost columns only where a dump gave costs), steps, functions, compiles; `phases`: each
    compile's time by phase instead; `by`: the ops' time by op_name or source line instead of the ops.
    `late`: compiles after step `after`, each a failed gate."""
    ops: list[dict[str, object]] = [record(op) for op in report.ops[:top]]
    compiles = [record(c) for c in report.compiles]
    violations = [_late_message(c) for c in late or []]
    placed, kernels = report.placed
    data: dict[str, object] = {
        "paths": report.paths,
        "step_seconds": report.step_summary.step_seconds if report.step_summary else None,
        "step_summary": record(report.step_summary),
        "step_source": step_source_text(report),
        "steps": records(report.steps),
        "functions": records(report.functions),
        "placed": {"on_an_op": placed, "kernels": kernels},
        "unplaced": [unplaced_record(u) for u in report.unplaced],
        "autotuning": record(report.autotuning),
        "other_device": {"events": report.other_device[0], "seconds": report.other_device[1]},
        "joined": report.joined,
        "hlo_source": _HLO_SOURCE.get(report.hlo_source or "", report.hlo_source),
        "ops": ops,
        "compiles": compiles,
        "violations": violations,
        **details_data(report),
    }

    def op_table(columns: tuple[str, ...]) -> Table:
        if not report.joined:  # no dump: the cost columns would be empty
            columns = tuple(c for c in columns if c not in _COST_ONLY)
        if all(op.wait_seconds is None for op in report.ops):
            columns = tuple(c for c in columns if c not in _WAIT_ONLY)
        return table(_profile_title(report), people, _device_columns(report, columns))

    compile_rows = [_timed(_compile_row(c)) for c in report.compiles]
    compile_table = table(f"{len(compiles)} compile(s) in the trace", compile_rows, _COMPILE_COLUMNS)
    notes = [f"note: {note_text(n)}" for n in report.notes] + [f"compiled after step {after}: {v}" for v in violations]
    if phases:
        blocks: list[Block] = [compile_table, *_phase_tables(report)]
        return Document(
            data, blocks, csv=table(None, compile_rows, _COMPILE_COLUMNS), notes=notes, gate_failed=bool(violations)
        )
    people = [_op_for_people(op, row) for op, row in zip(report.ops, ops)]
    summary = _profile_summary(report)
    headline = step_headline(report)
    first = [Lines(headline)] if headline else []
    details = detail_blocks(report)
    if by is not None:
        return Document(data, [*first, by_table(report, by)], csv=by_table(report, by), notes=notes)
    memory = [allocator_table(report)] if report.memory else []
    blocks = [*first, op_table(_PROFILE_OP_COMPACT), *summary, *details, compile_table]
    markdown = [*first, op_table(PROFILE_OP_COLUMNS), *summary, *details, *memory, compile_table]
    return Document(
        data,
        blocks,
        csv=table(None, ops, PROFILE_OP_COLUMNS),
        markdown=markdown,
        notes=notes,
        gate_failed=bool(violations),
    )


def _profile_summary(report: ProfileReport) -> list[Block]:
    """Steps (busy and idle device time), functions' device time, where kernels were placed, autotuning."""
    steps = table(
        f"{len(report.steps)} step(s): {step_source_text(report)}; each step's wall by where it went",
        [step_row(s) for s in report.steps],
        (*STEP_COLUMNS, *CATEGORIES, "host_ran"),
    )
    functions = table(
        "device time per function (the time a device is busy with its kernels, autotuning apart)"
        + (f": seconds, every device's in the trace{_a_step(report)}" if several_devices(report) else _a_step(report)),
        [_timed(_function_row(f)) for f in report.functions],
        _device_columns(report, _FUNCTION_COLUMNS),
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
    blocks: list[Block] = [steps, functions, Lines("\n".join(lines))]
    if report.unplaced:
        rows = [_timed(unplaced_record(u)) for u in report.unplaced[:_UNPLACED_SHOWN]]
        more = len(report.unplaced) - len(rows)
        note = f"and {more} more (JSON has them all)" if more > 0 else ""
        blocks.append(table("kernel executions not placed on an HLO op", rows, _UNPLACED_COLUMNS, note))
    return blocks


_STEADY = "over the steps without a compile it ran in (a compile's step is in total_seconds only)"
_A_STEP = (
    "a step, one device's: the mean over the devices that ran it (seconds_per_step), the median and the "
    f"slowest device's, {_STEADY}"
)


def _a_step(report: ProfileReport) -> str:
    """What the figures a step are of: one device's where the host has several, over the steps without a
    compile where some step compiled (`steps.steady_steps`); empty where neither needs saying."""
    if several_devices(report):
        return f"; {_A_STEP}"
    return f"; a step: {_STEADY}" if any(step.compiles for step in report.steps) else ""


def several_devices(report: ProfileReport) -> bool:
    """Whether some op or function ran on more than one device of the host."""
    return any(op.devices > 1 for op in report.ops) or any(f.devices > 1 for f in report.functions)


def _device_columns(report: ProfileReport, columns: tuple[str, ...]) -> tuple[str, ...]:
    """`columns` less the per-device spread where every op ran on one device (its figures are the mean)."""
    return columns if several_devices(report) else tuple(c for c in columns if c not in _DEVICES_ONLY)


def _timed(row: dict[str, object]) -> dict[str, object]:
    """`readable`, and a plain `seconds` column with its unit too."""
    seconds = row.get("seconds")
    worded: dict[str, object] = readable(row)
    return worded | ({"seconds": duration(seconds)} if isinstance(seconds, float) else {})


def _function_row(function: FunctionTime) -> dict[str, object]:
    row: dict[str, object] = record(function)
    del row["seconds_by_step"]
    return row


def _compile_row(compile_event: CompileEvent) -> dict[str, object]:
    """The compile's fields, its phases as columns (empty where the trace had none)."""
    row: dict[str, object] = record(compile_event)
    del row["phases"]
    phases = compile_event.phases
    if phases is None:
        return row | dict.fromkeys(_PHASE_COLUMNS)
    times = (phases.jax_seconds, phases.passes_seconds, phases.autotuning_seconds, phases.codegen_seconds)
    return row | dict(zip(_PHASE_COLUMNS, times, strict=True))


def _phase_tables(report: ProfileReport) -> list[Block]:
    """One table per compile: its phases, its ten slowest passes and the fusions it tuned."""
    blocks: list[Block] = []
    for index, event in enumerate(report.compiles):
        phases = event.phases
        if phases is None:
            continue
        rows: list[dict[str, object]] = [
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


def _op_for_people(op: OpTime, row: dict[str, object]) -> dict[str, object]:
    """The op's row (`record(op)`) with seconds in units, and the share and efficiency as percentages (an op
    on CPU against a GPU's roofline is at 0.01%: two decimals would print 0.00)."""
    shares = {
        k: f"{v * 100:.3g}%" for k, v in (("step_share", op.step_share), ("efficiency", op.efficiency)) if v is not None
    }
    worded: dict[str, object] = readable(row)
    return worded | shares


def _profile_title(report: ProfileReport) -> str:
    ranked = (
        "time lost in the trace (measured - roofline)"
        if any(op.lost_seconds is not None for op in report.ops)
        else "measured time in the trace"
    )
    per_device = "; total_seconds every device's" if several_devices(report) else ""
    steps = f"{len(report.steps)} steps ({step_source_text(report)})"
    return f"{steps}; {len(report.ops)} ops by {ranked}{_a_step(report)}{per_device}"
