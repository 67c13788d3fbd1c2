"""`xlainspect modules DIR`, `xlainspect count-recompiles DIR` (with a CI gate) and `xlainspect capture -- CMD`."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from xlainspect.cli.app import (
    EXIT_GATE_FAILED,
    DumpPath,
    FormatOpt,
    LogOpt,
    StrictOpt,
    app,
    note_skipped,
    user_errors,
)
from xlainspect.cli.progress import progress
from xlainspect.cli.render import OutputFormat, emit_frame, emit_json, emit_rows, stderr_console, stdout_console
from xlainspect.errors import XlaInspectError


@app.command()
def modules(path: DumpPath, fmt: FormatOpt = OutputFormat.table, log: LogOpt = None, strict: StrictOpt = False) -> None:
    """List the modules (compiles) of a dump: id, function, platform, stages, instruction count, size, and
    compile seconds when the run's jax log is there."""
    import pandas as pd

    from xlainspect.dump.directory import load_dump

    with user_errors():
        dump = load_dump(path, strict=strict)
        times = _compile_times(dump, path, log)
        with progress("reading modules", total=len(dump.modules)) as advance:
            rows = [_module_row(dump, m, strict, advance) | _module_times(times, m) for m in dump.modules]
    columns = ["host", "module_id", "function", "platform", "stages", "instructions", "bytes", "seconds", "cache"]
    frame = pd.DataFrame(rows, columns=columns)
    if not any(m.host for m in dump.modules):
        frame = frame.drop(columns=["host"])
    if times is None:
        frame = frame.drop(columns=["seconds", "cache"])
    title = f"{len(rows)} modules in {path}" + (f", {_seconds(times)}" if times else "")
    emit_frame(frame, fmt, title=title)
    note_skipped(dump, strict)
    _note_unpaired(times)


def _compile_times(dump, path: Path, log: Path | None):
    """Compile seconds from the run's jax log (given, or saved by capture in the dump); None without one."""
    from xlainspect.analysis.compile_times import compile_times
    from xlainspect.dump.jaxlog import run_log

    found = run_log(path, log)
    return None if found is None else compile_times(dump, found)


def _module_times(times, module) -> dict:
    """Seconds and persistent-cache outcome of the log's compile paired with this module."""
    paired = times.by_module.get(module) if times else None
    return {} if paired is None else {"seconds": paired.seconds, "cache": paired.cache}


def _seconds(times) -> str:
    return f"{times.total_seconds:.2f} s compiling, {times.recompile_seconds:.2f} s of it recompiling"


def _note_unpaired(times) -> None:
    """Say where the log's compiles and the dump's modules do not pair one to one."""
    for sentence in times.unpaired if times else ():
        stderr_console().print(f"not paired: {sentence}", markup=False, highlight=False)


def _module_row(dump, module, strict: bool, advance) -> dict:
    from xlainspect.analysis.ops import instruction_count

    advance(1)
    hlo = module.hlo_file()
    try:
        instructions = instruction_count(module)
    except XlaInspectError as error:
        dump.skip(hlo.path, error, strict)
        instructions = None
    return {
        "host": module.host,
        "module_id": module.module_id,
        "function": module.name,
        "platform": module.platform_tag or module.platform,
        "stages": ", ".join(s.replace("optimizations", "opt") for s in module.stages),
        "instructions": instructions,
        "bytes": hlo.path.stat().st_size,
    }


@app.command("count-recompiles")
def count_recompiles_cmd(
    path: DumpPath,
    fmt: FormatOpt = OutputFormat.table,
    max_per_function: Annotated[
        int | None, typer.Option("--max-per-function", help="Fail (exit 1) when a function compiles more often.")
    ] = None,
    max_named: Annotated[
        list[str] | None,
        typer.Option("--max", help="NAME=N: the budget of one function (repeatable; overrides --max-per-function)."),
    ] = None,
    max_total: Annotated[
        int | None, typer.Option("--max-total", help="Fail when all compiles together exceed N.")
    ] = None,
    ignore_eager: Annotated[
        bool,
        typer.Option(
            "--ignore-eager", help="Leave eager single-op modules (jit_add, ...) out of the gate and the table."
        ),
    ] = False,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            help="JSON of per-function compile counts; fail when a function compiles more often than there.",
        ),
    ] = None,
    update_baseline: Annotated[
        bool, typer.Option("--update-baseline", help="Write the counts to --baseline instead of checking them.")
    ] = False,
    log: LogOpt = None,
    profile: Annotated[
        Path | None,
        typer.Option(
            "--profile",
            help="The run's jax.profiler trace: the measured seconds of each compile (needs xlainspect[profile]).",
            show_default=False,
        ),
    ] = None,
    strict: StrictOpt = False,
) -> None:
    """Count compiles per function and explain every recompile (shape, dtype, layout, sharding, donation,
    body, identical module, flags); with budgets it is a CI gate (exit 1 naming each function over it)."""
    from xlainspect.analysis.recompiles import Budget, baseline_counts, budget_violations, count_recompiles
    from xlainspect.dump.directory import load_dump

    with user_errors():
        budget = Budget(
            max_per_function,
            _named_budgets(max_named or []),
            max_total,
            ignore_eager,
            () if update_baseline else _read_baseline(baseline),
        )
        if update_baseline and baseline is None:
            raise XlaInspectError("--update-baseline needs --baseline FILE")
        dump = load_dump(path, strict=strict)
        with progress("counting compiles", total=len(dump.modules)) as advance:
            rows = count_recompiles(dump, advance)
        times = _compile_times(dump, path, log)
        profiled, unpaired = _profiled_seconds(rows, profile)
    shown = [r for r in rows if not (ignore_eager and r.eager)]
    violations = budget_violations(rows, budget)
    if update_baseline:
        baseline.write_text(json.dumps(baseline_counts(shown), indent=2) + "\n", encoding="utf-8")
        stderr_console().print(f"wrote {baseline}", markup=False, highlight=False)
    _emit(shown, dump, violations, fmt, times, profiled)
    note_skipped(dump, strict)
    _note_unpaired(times)
    for sentence in unpaired:
        stderr_console().print(f"not paired with the profile: {sentence}", markup=False, highlight=False)
    if violations:
        for message in violations:
            stderr_console().print(f"over budget: {message}", markup=False, highlight=False)
        raise typer.Exit(EXIT_GATE_FAILED)


def _profiled_seconds(rows, trace: Path | None) -> tuple[dict[str, tuple], list[str]]:
    """Measured compile seconds per function from a jax.profiler trace, paired in order with the dump's."""
    if trace is None:
        return {}, []
    from xlainspect.analysis.profile import paired_compile_seconds, profile
    from xlainspect.dump.xplane import read_trace

    return paired_compile_seconds({r.name: r.modules for r in rows}, profile(read_trace(trace)))


def _named_budgets(items: list[str]) -> tuple[tuple[str, int], ...]:
    budgets = []
    for item in items:
        name, _, count = item.rpartition("=")
        if not name or not count.isdigit():
            raise XlaInspectError(f"--max {item}: expected NAME=N, e.g. --max jit_train_step=1")
        budgets.append((name, int(count)))
    return tuple(budgets)


def _read_baseline(path: Path | None) -> tuple[tuple[str, int], ...]:
    if path is None:
        return ()
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        return tuple((str(k), int(v)) for k, v in document["functions"].items())
    except FileNotFoundError:
        raise XlaInspectError(f"{path}: no such baseline file (create it with --update-baseline)") from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise XlaInspectError(f'{path}: not a baseline file ({{"functions": {{name: count}}}}): {error}') from None


def _emit(rows, dump, violations: list[str], fmt: OutputFormat, times=None, profiled=None) -> None:
    import dataclasses

    profiled = profiled or {}
    if fmt is OutputFormat.json:
        document = {
            "total_modules": sum(r.modules for r in rows),
            "functions": [
                dataclasses.asdict(r)
                | _times_json(times, r.name)
                | ({"profile_compile_seconds": list(profiled[r.name])} if r.name in profiled else {})
                for r in rows
            ],
            "violations": violations,
            "skipped": [{"path": str(s.path), "reason": s.reason} for s in dump.skipped],
        }
        if times is not None:
            document |= {"recompile_seconds": times.recompile_seconds, "not_paired": times.unpaired}
        emit_json(document)
        return
    table = (
        _for_people(rows, times)
        if fmt in (OutputFormat.table, OutputFormat.markdown)
        else [_table_row(r, times) for r in rows]
    )
    for row in table:
        if row["function"] in profiled:
            row["profiled"] = ", ".join("?" if s is None else f"{s:.2f}" for s in profiled[row["function"]])
    total, recompiled = sum(r.modules for r in rows), sum(1 for r in rows if r.modules > 1)
    columns = (
        ["function", "compiles"]
        + (["seconds", "per_compile"] if times else [])
        + (["profiled"] if profiled else [])
        + ["eager", "source", "why", "suggestion"]
    )
    title = (
        f"{total} compile{'s' * (total != 1)} of {len(rows)} function{'s' * (len(rows) != 1)}, "
        f"{recompiled} compiled more than once" + (f"; {_seconds(times)}" if times else "")
    )
    if fmt is OutputFormat.table and stdout_console().width < _TABLE_WIDTH:
        _emit_list(table, title)
    else:
        emit_rows(table, columns, fmt, title=title)


_TABLE_WIDTH = 120
"""Narrower than this (a pipe is 80 columns) the table's why column would be a few characters wide:
each function is printed as a short list instead."""


def _emit_list(table: list[dict], title: str) -> None:
    """One paragraph per row: `function: N compiles, source`, then why and suggestion wrapped at the
    console's width."""
    import textwrap

    width = stdout_console().width
    lines = [title]
    for row in table:
        head = f"{row['function']}: {row['compiles']} compile{'s' * (row['compiles'] != 1)}"
        extra = [row.get("source") or "", f"{row['seconds']:.2f} s" if row.get("seconds") is not None else ""]
        lines.append(", ".join([head, *filter(None, extra)]))
        for label in ("why", "suggestion"):
            if row.get(label):
                lines += textwrap.wrap(f"{label}: {row[label]}", width, initial_indent="  ", subsequent_indent="    ")
    sys.stdout.write("\n".join(lines) + "\n")


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
    from xlainspect.analysis.recompiles import describe_cause

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
        "why": "; ".join(describe_cause(c) for c in row.causes),
        "suggestion": row.suggestion or "",
    }


def _compile_cell(seconds: float | None, cache: str | None) -> str:
    """`0.42`, or `0.01 hit` for an executable loaded from the persistent cache; `?` when the log has none."""
    return "?" if seconds is None else f"{seconds:.2f}" + (" hit" if cache == "hit" else "")


def _for_people(rows: list, times=None) -> list[dict]:
    """The user's functions first (recompiled ones first), then the eager traffic folded into one row:
    an eager flood is one problem with one fix, not dozens."""
    from xlainspect.analysis.recompiles import for_people

    user, eager = for_people(rows)
    table = [_table_row(r, times) for r in user]
    if eager is None:
        return table
    folded = {
        "function": f"eager ops ({len(eager.functions)} jax functions)",
        "compiles": eager.compiles,
        "eager": True,
        "why": eager.summary(),
        "suggestion": eager.functions[0].suggestion or "",
    }
    if times:
        folded["seconds"] = sum(
            times.functions[r.name].total_seconds for r in eager.functions if r.name in times.functions
        )
    return [*table, folded]


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def capture(
    command: Annotated[list[str], typer.Argument(help="The program to run, after `--`.", show_default=False)],
    dump_dir: Annotated[
        Path | None, typer.Option("--dump-dir", help="Where XLA writes the dump (default: a temporary directory).")
    ] = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Run a program with XLA_FLAGS extended by --xla_dump_to and jax's compile log saved as jax.log in the
    dump, then print its count-recompiles report with compile seconds. The program's own non-zero exit
    status is passed on."""
    from xlainspect.capture import run_with_dump

    with tempfile.TemporaryDirectory(prefix="xlainspect-dump-") as scratch, user_errors():
        target = dump_dir or Path(scratch)
        status = run_with_dump(command, target)
        try:
            count_recompiles_cmd(
                target,
                fmt=fmt,
                max_per_function=None,
                max_named=None,
                max_total=None,
                ignore_eager=False,
                baseline=None,
                update_baseline=False,
                log=None,
                strict=False,
            )
        except typer.Exit as done:
            status = status or done.exit_code
    if status:
        raise typer.Exit(status)
