"""`xlainspect diff A B`: what XLA did differently between two dumps, per function; a CI gate on increases."""

from __future__ import annotations

import dataclasses
import enum
import sys
from pathlib import Path
from typing import Annotated

import typer

from xlainspect.cli.app import EXIT_GATE_FAILED, EXIT_USAGE, StrictOpt, app, note_skipped, user_errors
from xlainspect.cli.progress import progress
from xlainspect.cli.render import emit_json, stderr_console, stdout_console


class DiffFormat(str, enum.Enum):
    table = "table"
    json = "json"
    markdown = "markdown"


_SIDE = "A --xla_dump_to directory, or an HLO text file."


@app.command()
def diff(
    a: Annotated[Path, typer.Argument(help=f"Before: {_SIDE}", show_default=False)],
    b: Annotated[Path, typer.Argument(help=f"After: {_SIDE}", show_default=False)],
    fmt: Annotated[
        DiffFormat, typer.Option("--format", "-f", help="table, json or markdown (for a pull-request comment).")
    ] = DiffFormat.table,
    max_increase: Annotated[
        list[str] | None,
        typer.Option(
            "--max-increase",
            help="METRIC=N (absolute) or METRIC=N% (relative to A): the largest increase allowed "
            "(repeatable), e.g. peak_memory=5%, collective_bytes=0.",
        ),
    ] = None,
    fail_on_regression: Annotated[
        bool,
        typer.Option(
            "--fail-on-regression",
            help="Exit 1 when a metric of a function grows beyond its --max-increase (without any, beyond 0).",
        ),
    ] = False,
    show_all: Annotated[bool, typer.Option("--all", help="Also show unchanged functions.")] = False,
    chip: Annotated[
        str | None,
        typer.Option(
            "--chip",
            help="The chip roofline_seconds is for (default: the GPU a dump names; none for TPU and CPU dumps).",
        ),
    ] = None,
    strict: StrictOpt = False,
) -> None:
    """Per function (matched by HloModule name): module count, op histogram, fusions by kind, custom-call
    targets, copies, collectives and their bytes, peak memory, padding waste, and the entry signature
    (parameter shapes, dtypes, layouts, shardings, donation, result). Functions on one side are listed."""
    from xlainspect.analysis.chips import get_chip
    from xlainspect.analysis.diff import METRICS, Threshold, diff_dumps, parse_threshold, regressions, unknown_functions
    from xlainspect.dump.directory import load_dump

    with user_errors():
        thresholds = [parse_threshold(t) for t in max_increase or []]
        roofline_chip = get_chip(chip) if chip else None
        dump_a, dump_b = load_dump(a, strict=strict), load_dump(b, strict=strict)
        with progress("comparing modules", total=len(dump_a.modules) + len(dump_b.modules)) as advance:
            rows = diff_dumps(dump_a, dump_b, roofline_chip, advance)
    if fail_on_regression and not thresholds:
        thresholds = [Threshold(metric, 0, False) for metric in METRICS]
    over = regressions(rows, thresholds)
    if fmt is DiffFormat.json:
        emit_json({"a": str(a), "b": str(b), "functions": [_function_json(r) for r in rows], "regressions": over})
    elif fmt is DiffFormat.markdown:
        sys.stdout.write(_markdown(rows, _shown(rows, show_all), a, b))
    else:
        _print_tables(rows, _shown(rows, show_all))
    for dump in (dump_a, dump_b):
        note_skipped(dump, strict)
    for message in over:
        stderr_console().print(f"regression: {message}", markup=False, highlight=False)
    unknown = unknown_functions(rows) if fail_on_regression else []
    for message in unknown:
        stderr_console().print(f"cannot gate: {message}", markup=False, highlight=False)
    if fail_on_regression and (over or unknown):
        raise typer.Exit(EXIT_USAGE if unknown else EXIT_GATE_FAILED)


def _shown(rows, show_all: bool) -> list:
    return [r for r in rows if show_all or r.status != "unchanged"]


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
        "signature": [dataclasses.asdict(s) for s in row.signature],
        "unreadable": list(row.unreadable),
    }


def _sections(row) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of each non-empty table describing one function's changes."""
    metrics = [m for m in row.metrics if m.a != m.b or m.name == "modules" or row.status != "changed"]
    sections = [
        (
            "metrics",
            ["metric", "A", "B", "delta", "change %"],
            [[m.name, _number(m.a), _number(m.b), _signed(m.delta), _percent(m.change)] for m in metrics],
        )
    ]
    sections.append(
        (
            "signature",
            ["parameter", "kind", "A", "B", "detail"],
            [[s.parameter, s.kind, s.a, s.b, _signature_detail(s)] for s in row.signature],
        )
    )
    for title, deltas in (
        ("op histogram", row.ops),
        ("fusions by kind", row.fusion_kinds),
        ("custom-call targets", row.custom_call_targets),
    ):
        sections.append(
            (
                title,
                ["name", "A", "B", "delta"],
                [[d.key, _number(d.a), _number(d.b), _signed(d.delta)] for d in deltas],
            )
        )
    return [s for s in sections if s[2]]


def _signature_detail(change) -> str:
    sizes = f"{_number(change.a_bytes)} -> {_number(change.b_bytes)} bytes" if change.a_bytes is not None else ""
    return "; ".join(part for part in (change.detail, sizes) if part)


def _summary(rows) -> str:
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


def _markdown(rows, shown, a: Path, b: Path) -> str:
    lines = [f"## xlainspect diff: `{a}` -> `{b}`", "", _summary(rows), ""]
    for row in shown:
        lines += [f"### {_heading(row)}", ""]
        for title, header, body in _sections(row):
            lines += [f"**{title}**", "", "| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
            lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |" for cells in body]
            lines.append("")
    return "\n".join(lines) + "\n"


def _print_tables(rows, shown) -> None:
    from rich.table import Table
    from rich.text import Text

    console = stdout_console()
    console.print(Text(_summary(rows)))
    for row in shown:
        console.rule(Text(_heading(row)), align="left")
        for title, header, body in _sections(row):
            table = Table(title=title, title_justify="left")
            for column in header:
                table.add_column(column, justify="right" if column in ("A", "B", "delta", "change %") else "left")
            for cells in body:
                table.add_row(*(Text(c) for c in cells))  # Text(): HLO must never be read as rich markup
            console.print(table)


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
