"""`xlainspect profile TRACE [--dump DIR]`: measured time per op beside its roofline, and compiles on the timeline."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from xlainspect.cli.app import EXIT_GATE_FAILED, FormatOpt, FunctionOpt, StrictOpt, app, note_skipped, user_errors
from xlainspect.cli.cost_cmd import ChipOpt, HbmOpt, IciOpt, PeakFlopsOpt, chip_for, readable
from xlainspect.cli.render import OutputFormat, emit_json, emit_rows, stderr_console

TraceArg = Annotated[
    Path,
    typer.Argument(
        help="What jax.profiler.trace(log_dir) wrote: the log dir, a run folder or a *.xplane.pb file.",
        show_default=False,
    ),
]
OP_COLUMNS = [
    "module",
    "function",
    "name",
    "count",
    "total_seconds",
    "per_step_seconds",
    "min_seconds",
    "median_seconds",
    "max_seconds",
    "step_share",
    "kind",
    "flops",
    "bytes_accessed",
    "measured_bytes_per_second",
    "roofline_seconds",
    "efficiency",
    "lost_seconds",
    "bound",
    "op_name",
    "source",
]
_TABLE_OP_COLUMNS = [
    "module",
    "name",
    "kind",
    "count",
    "per_step_seconds",
    "median_seconds",
    "step_share",
    "roofline_seconds",
    "efficiency",
    "lost_seconds",
    "op_name",
]
_COST_COLUMNS = ("kind", "roofline_seconds", "efficiency", "lost_seconds", "op_name")
COMPILE_COLUMNS = ["name", "function", "start_seconds", "seconds", "step", "thread"]


@app.command()
def profile(
    trace: TraceArg,
    dump: Annotated[
        Path | None,
        typer.Option(
            "--dump",
            help="The same run's --xla_dump_to directory: each op's "
            "kind, op_name, source line, FLOPs and roofline time.",
        ),
    ] = None,
    function: FunctionOpt = None,
    top: Annotated[int, typer.Option("--top", min=0, help="Ops to list, most time lost first (0: all).")] = 20,
    max_compiles_after_step: Annotated[
        int | None,
        typer.Option(
            "--max-compiles-after-step", help="Fail (exit 1) when a function compiles in a step after step N."
        ),
    ] = None,
    chip: ChipOpt = None,
    peak_flops: PeakFlopsOpt = None,
    hbm_bandwidth: HbmOpt = None,
    ici_bandwidth: IciOpt = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html", help="Also write a self-contained page: the step timeline and the roofline with measured points."
        ),
    ] = None,
    fmt: FormatOpt = OutputFormat.table,
    strict: StrictOpt = False,
) -> None:
    """Measured time per HLO op (total, per step, min/median/max, share of the step) from a jax.profiler
    trace; with --dump its roofline time, efficiency and time lost; every compile with its step. Needs
    the profile extra: pip install 'xlainspect[profile]'."""
    from xlainspect.analysis.profile import compiles_after

    figures = (chip, peak_flops, hbm_bandwidth, ici_bandwidth)
    with user_errors():
        report = _report(trace, dump, figures, strict)
        report = _only_function(report, function)
    if html is not None:
        from xlainspect.report.profile_html import write_profile_html

        write_profile_html(report, html)
        stderr_console().print(f"wrote {html}", markup=False, highlight=False)
    late = compiles_after(report, max_compiles_after_step) if max_compiles_after_step is not None else []
    _emit(report, top, fmt, [_late_message(c) for c in late])
    for compile_event in late:
        stderr_console().print(
            f"compiled after step {max_compiles_after_step}: {_late_message(compile_event)}",
            markup=False,
            highlight=False,
        )
    if late:
        raise typer.Exit(EXIT_GATE_FAILED)


def _report(trace: Path, dump: Path | None, figures: tuple, strict: bool):
    from xlainspect.analysis.profile import profile as profile_trace
    from xlainspect.dump.directory import load_dump
    from xlainspect.dump.xplane import read_trace

    read = read_trace(trace)
    if dump is None:
        report = profile_trace(read, None, _chip(None, figures))
    else:
        loaded = load_dump(dump, strict=strict)
        report = profile_trace(read, loaded, _chip(next(iter(loaded.modules), None), figures))
        note_skipped(loaded, strict)
        if not report.joined:
            report.notes.append(
                f"{dump}: none of the traced modules is in this dump (module ids and names "
                f"differ); ops are shown without costs"
            )
    for note in report.notes:
        stderr_console().print(f"note: {note}", markup=False, highlight=False)
    return report


def _chip(dump_module, figures: tuple):
    """`cost`'s choice of chip; with no dump module, the one named (or the figures given), else none."""
    from xlainspect.analysis.chips import custom_chip, get_chip

    if dump_module is not None:
        return chip_for(dump_module, *figures)
    key, peak_flops, hbm_bandwidth, ici_bandwidth = figures
    if key is not None:
        return get_chip(key, peak_flops, hbm_bandwidth, ici_bandwidth)
    return custom_chip(peak_flops, hbm_bandwidth, ici_bandwidth) if peak_flops and hbm_bandwidth else None


def _only_function(report, function: str | None):
    """The report narrowed to one function; a name that matches nothing is an input error."""
    from xlainspect.errors import XlaInspectError

    if function is None:
        return report
    ops = [op for op in report.ops if op.function == function]
    compiles = [c for c in report.compiles if c.function == function]
    if not ops and not compiles:
        known = sorted({op.function for op in report.ops} | {c.function or "?" for c in report.compiles})
        raise XlaInspectError(f"--function {function}: no op or compile of it in the trace; it has: {', '.join(known)}")
    return dataclasses.replace(
        report,
        ops=ops,
        compiles=compiles,
        op_events=[e for e in report.op_events if e.stats.get("hlo_module") == function],
    )


def _late_message(compile_event) -> str:
    return (
        f"{compile_event.function or '?'} at step {compile_event.step} "
        f"({compile_event.seconds:.3f} s, {compile_event.name})"
    )


def _emit(report, top: int, fmt: OutputFormat, violations: list[str]) -> None:
    ops = [dataclasses.asdict(op) for op in report.ops[: top or None]]
    compiles = [dataclasses.asdict(c) for c in report.compiles]
    if fmt is OutputFormat.json:
        emit_json(
            {
                "paths": report.paths,
                "step_source": report.step_source,
                "steps": [dataclasses.asdict(s) for s in report.steps],
                "joined": report.joined,
                "hlo_source": report.hlo_source,
                "ops": ops,
                "compiles": compiles,
                "violations": violations,
            }
        )
        return
    if fmt is OutputFormat.csv:
        emit_rows(ops, OP_COLUMNS, fmt)
        return
    columns = _TABLE_OP_COLUMNS if fmt is OutputFormat.table else OP_COLUMNS
    if not report.joined:  # no dump: the cost columns would be empty
        columns = [c for c in columns if c not in _COST_COLUMNS]
    emit_rows([_for_people(op) for op in ops], columns, fmt, title=_title(report))
    print()
    emit_rows([readable(c) for c in compiles], COMPILE_COLUMNS, fmt, title=f"{len(compiles)} compile(s) in the trace")


def _for_people(op: dict) -> dict:
    """Seconds with units, and the share and efficiency as percentages (an op on CPU against a GPU's
    roofline is at 0.01%: two decimals would print 0.00)."""
    shares = {k: f"{op[k] * 100:.3g}%" for k in ("step_share", "efficiency") if op[k] is not None}
    return readable(op) | shares


def _title(report) -> str:
    steps = report.steps
    per_step = sum(s.seconds for s in steps) / len(steps) if steps else None
    timing = f", {readable({'x_seconds': per_step})['x_seconds']} per step" if per_step is not None else ""
    ranked = (
        "time lost (measured - roofline)" if any(op.lost_seconds is not None for op in report.ops) else "measured time"
    )
    return f"{len(steps)} steps ({report.step_source}){timing}; {len(report.ops)} ops by {ranked}"
