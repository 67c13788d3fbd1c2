"""`fusions`, `copies`, `collectives`, `ops` and `graph`: what is inside a module's instructions.

Each command loads a dump directory (or HLO files), picks modules with --function/--module-re at
--stage, runs one library analysis per module and renders its rows; files that fail to parse are
named on stderr and skipped.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from xlainspect.cli.app import FormatOpt, FunctionOpt, StrictOpt, app, note_skipped, user_errors
from xlainspect.cli.progress import progress
from xlainspect.cli.render import OutputFormat, emit_frame, emit_json, emit_rows, stdout_console

PathsArg = Annotated[
    list[Path], typer.Argument(help="A --xla_dump_to directory, or HLO text files.", show_default=False)
]
ModuleReOpt = Annotated[str | None, typer.Option("--module-re", help="Only modules whose name matches this regex.")]


class Stage(str, enum.Enum):
    before = "before"
    after = "after"


StageOpt = Annotated[Stage, typer.Option("--stage", help="HLO before or after optimizations (after where present).")]


def _modules(paths: list[Path], function: str | None, module_re: str | None, stage: Stage, strict: bool):
    """The selected modules, parsed; a note on stderr for each file skipped."""
    from xlainspect.dump.directory import load_dump, select_modules

    dump = load_dump(paths if len(paths) > 1 else paths[0])
    with progress("parsing modules", total=len(dump.modules)) as advance:
        modules = select_modules(dump, function=function, module_re=module_re, stage=stage.value, advance=advance)
    note_skipped(dump, strict)
    return modules


def _analyse(
    paths: list[Path],
    function: str | None,
    module_re: str | None,
    stage: Stage,
    strict: bool,
    analysis: str,
    analyse: Callable,
) -> list:
    """`analyse(dump_module)` for each selected module, answered from the results cache while the file
    is unchanged (the module is then not even read); files that do not parse are skipped."""
    from xlainspect.dump.directory import load_dump, select_dump_modules
    from xlainspect.dump.model_cache import cached_result
    from xlainspect.errors import XlaInspectError

    dump = load_dump(paths if len(paths) > 1 else paths[0])
    results = []
    selected = select_dump_modules(dump, function=function, module_re=module_re)
    with progress("analysing modules", total=len(selected)) as advance:
        for dump_module in selected:
            hlo = dump_module.hlo_file(stage.value)
            try:
                results.append(
                    cached_result(
                        hlo.path, f"{analysis}:{stage.value}:{dump_module.platform}", lambda m=dump_module: analyse(m)
                    )
                )
            except XlaInspectError as error:
                dump.skip(hlo.path, error)
            advance(1)
    note_skipped(dump, strict)
    return results


#: Columns a table or Markdown page shows (JSON and CSV carry every field).
TABLE_COLUMNS = {
    "fusions": [
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
    ],
    "copies": [
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
    ],
    "collectives": [
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
    ],
}


def _emit(
    rows: list, row_type: type, totals: list, totals_type: type, key: str, fmt: OutputFormat, extra: dict | None = None
) -> None:
    """JSON `{key: rows, "totals": totals, ...}`; CSV the rows only; table/Markdown rows (fewer columns), totals."""
    from xlainspect.report.table import to_records

    if fmt is OutputFormat.json:
        emit_json({key: [_json_record(r) for r in to_records(rows)], "totals": to_records(totals), **(extra or {})})
        return
    from xlainspect.report.table import to_frame

    frame = _flat_frame(rows, row_type)
    if fmt is OutputFormat.csv:
        emit_frame(frame, fmt)
        return
    emit_frame(frame[TABLE_COLUMNS[key]], fmt, title=key)
    print()
    emit_frame(to_frame(totals, totals_type), fmt, title="totals")


def _flat_frame(rows: list, row_type: type):
    """Rows as a frame of printable cells: histograms as `op:n`, tuples joined, None kept (not NaN)."""
    import pandas as pd

    from xlainspect.report.table import to_frame

    frame = to_frame(rows, row_type)
    for column in frame.columns:
        values = [getattr(r, column) for r in rows]
        if any(isinstance(v, dict) for v in values):
            values = [" ".join(f"{k}:{n}" for k, n in v.items()) for v in values]
        elif any(isinstance(v, tuple) for v in values):
            values = [", ".join(map(str, v)) for v in values]
        elif not any(v is None for v in values):
            continue
        frame[column] = pd.Series(values, dtype=object, index=frame.index)
    return frame


def _json_record(record: dict) -> dict:
    """`is_async` is spelled `async` in JSON (a Python keyword cannot be a field name)."""
    return {("async" if k == "is_async" else k): v for k, v in record.items()}


@app.command()
def fusions(
    paths: PathsArg,
    function: FunctionOpt = None,
    module_re: ModuleReOpt = None,
    stage: StageOpt = Stage.after,
    fmt: FormatOpt = OutputFormat.table,
    strict: StrictOpt = False,
    top: Annotated[
        int | None, typer.Option("--top", min=1, help="Only the N fusions moving the most bytes (totals count all).")
    ] = None,
) -> None:
    """Every fusion: kind (and backend kind), fused computation, ops inside, bytes, library calls."""
    from xlainspect.analysis.fusions import (
        Fusion,
        FusionKindTotal,
        fusion_kind_totals,
        fusions,
        largest_fusions,
        unfused_contractions,
        unfused_ops,
    )
    from xlainspect.analysis.ops import module_label

    with user_errors():
        rows, unfused, contractions = [], {}, []

        def analyse(dump_module):
            module = dump_module.module(stage.value)
            return (
                fusions(module),
                module_label(module),
                dict(unfused_ops(module).most_common()),
                unfused_contractions(module),
            )

        per_module = _analyse(paths, function, module_re, stage, strict, "fusions", analyse)
        for module_rows, label, module_unfused, module_contractions in per_module:
            rows += module_rows
            unfused[label] = module_unfused
            contractions += module_contractions
        _emit(
            rows if top is None else largest_fusions(rows, top),
            Fusion,
            fusion_kind_totals(rows),
            FusionKindTotal,
            "fusions",
            fmt,
            {"unfused_ops": unfused, "unfused_contractions": [dataclasses.asdict(c) for c in contractions]},
        )
        if fmt in (OutputFormat.table, OutputFormat.markdown):
            for label, ops in unfused.items():
                named = " ".join(f"{c.name}({c.flops:,.0f} FLOPs)" for c in contractions if c.module == label)
                stdout_console().print(
                    f"{label}: {sum(ops.values())} compute ops outside fusions "
                    f"{' '.join(f'{k}:{n}' for k, n in ops.items())}"
                    + (f"; unfused dots/convolutions: {named}" if named else ""),
                    markup=False,
                    highlight=False,
                )


@app.command()
def copies(
    paths: PathsArg,
    function: FunctionOpt = None,
    module_re: ModuleReOpt = None,
    stage: StageOpt = Stage.after,
    fmt: FormatOpt = OutputFormat.table,
    strict: StrictOpt = False,
    layout_only: Annotated[bool, typer.Option("--layout-only", help="Only relayouts within one memory space.")] = False,
) -> None:
    """Every copy, async copy, transpose and relayout fusion: layouts, memory spaces, bytes, producer, consumers."""
    from xlainspect.analysis.copies import Copy, CopyTotal, copies, copy_totals

    with user_errors():
        per_module = _analyse(
            paths,
            function,
            module_re,
            stage,
            strict,
            "copies",
            lambda dump_module: copies(dump_module.module(stage.value), dump_module.platform),
        )
        rows = [row for module_rows in per_module for row in module_rows if row.layout_only or not layout_only]
        _emit(rows, Copy, copy_totals(rows), CopyTotal, "copies", fmt)


@app.command()
def collectives(
    paths: PathsArg,
    function: FunctionOpt = None,
    module_re: ModuleReOpt = None,
    stage: StageOpt = Stage.after,
    fmt: FormatOpt = OutputFormat.table,
    strict: StrictOpt = False,
) -> None:
    """Every collective once (sync, -start/-done, async-start): groups, payload, bytes per device and per step."""
    from xlainspect.analysis.collectives import Collective, CollectiveTotal, collective_totals, collectives

    with user_errors():
        per_module = _analyse(
            paths,
            function,
            module_re,
            stage,
            strict,
            "collectives",
            lambda dump_module: collectives(dump_module.module(stage.value)),
        )
        rows = [row for module_rows in per_module for row in module_rows]
        _emit(rows, Collective, collective_totals(rows), CollectiveTotal, "collectives", fmt)


@app.command()
def ops(
    paths: PathsArg,
    function: FunctionOpt = None,
    module_re: ModuleReOpt = None,
    stage: StageOpt = Stage.after,
    fmt: FormatOpt = OutputFormat.table,
    strict: StrictOpt = False,
    per_function: Annotated[bool, typer.Option("--per-function", help="Fold each function's variants.")] = False,
) -> None:
    """Opcode histogram per module (inside and outside fusions), or per function across its variants."""
    from xlainspect.analysis.ops import FunctionOpCount, OpCount, function_histogram
    from xlainspect.report.table import to_frame

    with user_errors():
        if per_function:
            modules = _modules(paths, function, module_re, stage, strict)
            emit_frame(to_frame(function_histogram(modules), FunctionOpCount), fmt, title="opcodes per function")
        else:
            per_module = _analyse(
                paths, function, module_re, stage, strict, "ops", lambda dump_module: _histogram(dump_module, stage)
            )
            rows = [row for module_rows in per_module for row in module_rows]  # no pandas: the fast command
            emit_rows(
                [dataclasses.asdict(r) for r in rows],
                [f.name for f in dataclasses.fields(OpCount)],
                fmt,
                title="opcodes",
            )


def _histogram(dump_module, stage: Stage) -> list:
    """Opcode rows of one module: from the line-level reader where it is sure of every line (no model
    is built, several times faster), from the grammar's model elsewhere."""
    from xlainspect.analysis.ops import file_label, line_histogram, opcode_histogram
    from xlainspect.dump.files import read_text
    from xlainspect.hlo.fastpath import scan

    hlo = dump_module.hlo_file(stage.value)
    lines = scan(read_text(hlo.path))
    if lines is None:
        return opcode_histogram(dump_module.module(stage.value))
    return line_histogram(file_label(str(hlo.path), dump_module.header(stage.value).name), lines)


class GraphFormat(str, enum.Enum):
    dot = "dot"
    mermaid = "mermaid"
    graphml = "graphml"


@app.command()
def graph(
    file: Annotated[Path, typer.Argument(help="An HLO text file.", show_default=False)],
    around: Annotated[str, typer.Option("--around", help="Instruction name (computation/name if ambiguous).")],
    depth: Annotated[int, typer.Option("--depth", min=0, help="Edges to follow, operands and users.")] = 2,
    fmt: Annotated[GraphFormat, typer.Option("--format", "-f", help="dot, mermaid or graphml.")] = GraphFormat.dot,
) -> None:
    """The data-flow neighbourhood of one instruction, for Graphviz or a Markdown page."""
    import sys

    from xlainspect.analysis import neighbourhood as hood
    from xlainspect.dump.files import read_text
    from xlainspect.hlo.parser import parse_hlo
    from xlainspect.report import graph_text

    with user_errors():
        modules = parse_hlo(read_text(file), str(file))
        module = next((m for m in modules if _has(m, around)), modules[0] if modules else None)
        if module is None:
            raise typer.BadParameter(f"{file}: no HLO module")
        writer = {
            GraphFormat.dot: graph_text.to_dot,
            GraphFormat.mermaid: graph_text.to_mermaid,
            GraphFormat.graphml: graph_text.to_graphml,
        }
        sys.stdout.write(writer[fmt](hood.neighbourhood(module, around, depth), hood.find_instruction(module, around)))


def _has(module, name: str) -> bool:
    short = name.lstrip("%").rpartition("/")[2]
    return any(i.name == short for i in module.instructions())
