"""`xlainspect layout SHAPE` (what one layout costs) and `xlainspect layouts PATH` (the padding ledger)."""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated

import typer

from xlainspect.cli.app import DumpPath, FormatOpt, FunctionOpt, app, note_skipped, user_errors
from xlainspect.cli.progress import progress
from xlainspect.cli.render import OutputFormat, emit_frame, emit_json, stdout_console


class Platform(str, enum.Enum):
    tpu = "tpu"
    gpu = "gpu"
    cpu = "cpu"


PlatformOpt = Annotated[
    Platform | None,
    typer.Option("--platform", help="Names memory spaces (and, for tpu, applies the TPU backend's size rule)."),
]


@app.command()
def layout(
    shape: Annotated[
        str,
        typer.Argument(
            help="A shape with layout, e.g. 'bf16[3,5]{1,0:T(8,128)(2,1)}' or 'bf16[3,5]<1,0:T(8,128)(2,1)>'.",
            show_default=False,
        ),
    ],
    platform: PlatformOpt = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Decode a layout: physical order, tiles, padded dims, logical vs padded bytes, memory space."""
    from xlainspect.analysis.layouts import explain_shape
    from xlainspect.hlo.shape_text import parse_shape

    with user_errors():
        arrays = explain_shape(parse_shape(shape), platform.value if platform else None)
    if fmt is OutputFormat.json:
        records = [dataclasses.asdict(a) for a in arrays]
        emit_json(records[0] if len(records) == 1 else records)
        return
    if fmt is not OutputFormat.table:
        from xlainspect.analysis.layouts import ArrayLayout
        from xlainspect.report.table import to_frame

        emit_frame(to_frame(arrays, ArrayLayout).drop(columns=["picture", "padding"]), fmt)
        return
    console = stdout_console()
    for array in arrays:
        console.print(_describe(array), markup=False, highlight=False, soft_wrap=True)


def _describe(a) -> str:
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


@app.command()
def layouts(
    path: DumpPath,
    top: Annotated[int | None, typer.Option("--top", help="Show only the N most wasteful values.")] = None,
    min_expansion: Annotated[float, typer.Option("--min-expansion", help="Only values padded at least X times.")] = 0.0,
    function: FunctionOpt = None,
    platform: PlatformOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    every_value: Annotated[
        bool, typer.Option("--all", help="Tables list every value and module, padded or not (JSON and CSV always do).")
    ] = False,
) -> None:
    """The padding ledger: every array value of the after-optimizations modules, ranked by wasted bytes;
    tables show the padded ones (--top, default 20) with totals per function and module."""
    from xlainspect.analysis.layouts import (
        PaddingRow,
        PaddingTotal,
        dump_ledger_inputs,
        filter_ledger,
        ledger_totals,
        ledger_view,
        padding_ledger,
    )
    from xlainspect.dump.directory import load_dump
    from xlainspect.report.table import to_frame

    with user_errors():
        dump = load_dump(path)
        with progress("reading modules", total=len(dump.modules)) as advance:
            inputs = dump_ledger_inputs(dump, platform.value if platform else None, advance, function)
        rows = filter_ledger(padding_ledger(inputs), function=function, min_expansion=min_expansion)
    note_skipped(dump)
    shown = rows[:top] if top is not None else rows
    if fmt is OutputFormat.json:
        emit_json(
            {
                "values": [dataclasses.asdict(r) for r in shown],
                "modules": [dataclasses.asdict(t) for t in ledger_totals(rows, "module")],
                "functions": [dataclasses.asdict(t) for t in ledger_totals(rows, "function")],
            }
        )
        return
    if fmt is OutputFormat.csv:
        emit_frame(to_frame(shown, PaddingRow), fmt)
        return
    view = ledger_view(rows, top, every_value)
    if view.values:
        emit_frame(to_frame(view.values, PaddingRow)[_LEDGER_COLUMNS], fmt, title=view.caption)
    else:
        stdout_console().print(view.caption, markup=False, highlight=False, soft_wrap=True)
    emit_frame(to_frame(view.functions, PaddingTotal), fmt, title="per function")
    if view.modules:
        title = "per module" if every_value else "per module (those losing bytes to padding)"
        emit_frame(to_frame(view.modules, PaddingTotal), fmt, title=title)


#: The ledger columns a table shows (JSON and CSV carry every field).
_LEDGER_COLUMNS = [
    "module",
    "instruction",
    "shape",
    "logical_bytes",
    "padded_bytes",
    "wasted_bytes",
    "expansion",
    "op_name",
]
