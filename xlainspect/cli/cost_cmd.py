"""`xlainspect cost DIR|FILE...`: FLOPs, bytes and roofline time per op and module, as XLA counts them."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from xlainspect.cli.app import FormatOpt, FunctionOpt, StrictOpt, app, user_errors
from xlainspect.cli.graph_cmds import ModuleReOpt, PathsArg, Stage, StageOpt, _analyse
from xlainspect.cli.render import OutputFormat, emit_json, emit_rows, stderr_console

MODULE_COLUMNS = [
    "module",
    "function",
    "flops",
    "transcendentals",
    "bytes_accessed",
    "padded_bytes_accessed",
    "roofline_seconds",
    "bound",
    "chip",
]
OP_COLUMNS = [
    "module",
    "name",
    "opcode",
    "kind",
    "flops",
    "transcendentals",
    "bytes_read",
    "bytes_written",
    "padded_bytes_read",
    "padded_bytes_written",
    "arithmetic_intensity",
    "compute_seconds",
    "memory_seconds",
    "collective_seconds",
    "roofline_seconds",
    "bound",
    "op_name",
    "source",
]
_TABLE_MODULE_COLUMNS = ["module", "flops", "transcendentals", "bytes_accessed", "roofline_seconds", "bound", "chip"]
_TABLE_OP_COLUMNS = [
    "name",
    "kind",
    "flops",
    "bytes_read",
    "bytes_written",
    "arithmetic_intensity",
    "roofline_seconds",
    "bound",
    "op_name",
    "source",
]


ChipOpt = Annotated[
    str | None,
    typer.Option(
        "--chip",
        help="The chip the roofline is drawn for: h100, h200, b200, "
        "a100, tpu-v4, tpu-v5e, tpu-v5p or tpu-v6e (default: the GPU the dump "
        "was compiled for).",
    ),
]
PeakFlopsOpt = Annotated[float | None, typer.Option("--peak-flops", help="Peak FLOP/s, for every dtype.")]
HbmOpt = Annotated[float | None, typer.Option("--hbm-bandwidth", help="HBM bytes/s.")]
IciOpt = Annotated[
    float | None, typer.Option("--ici-bandwidth", help="Interconnect bytes/s a chip sends on one collective axis.")
]


class ChipUsageError(typer.BadParameter):
    """No chip for a dump that does not name one: a usage error (exit 2), not a file to skip."""


@app.command()
def cost(
    paths: PathsArg,
    function: FunctionOpt = None,
    module_re: ModuleReOpt = None,
    stage: StageOpt = Stage.after,
    top: Annotated[int, typer.Option("--top", min=0, help="Ops to list per module, slowest first (0: all).")] = 10,
    chip: ChipOpt = None,
    peak_flops: PeakFlopsOpt = None,
    hbm_bandwidth: HbmOpt = None,
    ici_bandwidth: IciOpt = None,
    html: Annotated[Path | None, typer.Option("--html", help="Also write a self-contained roofline page.")] = None,
    fmt: FormatOpt = OutputFormat.table,
    strict: StrictOpt = False,
) -> None:
    """FLOPs, transcendentals, bytes and roofline time per op and module, equal to XLA's HloCostAnalysis."""
    from xlainspect.analysis.chips import chip_table
    from xlainspect.analysis.cost import module_cost

    figures = (chip, peak_flops, hbm_bandwidth, ici_bandwidth)
    rows_wanted = None if html is not None or top == 0 else top  # the page draws every op
    key = f"cost:{figures}:{rows_wanted}:{sorted(chip_table().items())}"  # the table is data, not code
    with user_errors():
        rows = _analyse(
            paths,
            function,
            module_re,
            stage,
            strict,
            key,
            lambda m: module_cost(m.module(stage.value), chip_for(m, *figures), rows_wanted),
        )
    if html is not None:
        from xlainspect.report.cost_html import write_cost_html

        write_cost_html(rows, html)
        stderr_console().print(f"wrote {html}", markup=False, highlight=False)
    _emit(rows, top, fmt)


def chip_for(dump_module, key: str | None, peak_flops, hbm_bandwidth, ici_bandwidth):
    """The chip named, else the GPU the dump was compiled for; a TPU dump must name one (exit 2), a CPU
    dump gets none (counts without times)."""
    from xlainspect.analysis.chips import chip_table, custom_chip, default_chip_key, get_chip
    from xlainspect.errors import XlaInspectError

    if key is None and peak_flops and hbm_bandwidth:
        return custom_chip(peak_flops, hbm_bandwidth, ici_bandwidth)
    key = key or default_chip_key(dump_module.platform, dump_module.platform_tag)
    if key is None and dump_module.platform in ("cpu", None) and not any((peak_flops, hbm_bandwidth, ici_bandwidth)):
        return None
    if key is None:
        raise ChipUsageError(
            f"{dump_module.label}: the dump does not say which chip it was compiled for; pass "
            f"--chip (or both --peak-flops and --hbm-bandwidth), one of: {', '.join(chip_table())}"
        )
    try:
        return get_chip(key, peak_flops, hbm_bandwidth, ici_bandwidth)
    except XlaInspectError as error:
        raise ChipUsageError(str(error)) from None


def _emit(modules: list, top: int, fmt: OutputFormat) -> None:
    module_records = [{c: getattr(m, c) for c in MODULE_COLUMNS} for m in modules]
    op_records = [dataclasses.asdict(op) for m in modules for op in m.ops[: top or None]]
    if fmt is OutputFormat.json:
        emit_json({"modules": module_records, "ops": [{c: r[c] for c in OP_COLUMNS} for r in op_records]})
    elif fmt is OutputFormat.csv:
        emit_rows(op_records, OP_COLUMNS, fmt)
    else:
        columns = _TABLE_MODULE_COLUMNS if fmt is OutputFormat.table else MODULE_COLUMNS
        emit_rows([readable(r) for r in module_records], columns, fmt, title="cost per module")
        for module in modules:
            print()
            emit_rows(
                [readable(dataclasses.asdict(op)) for op in module.ops[: top or None]],
                _TABLE_OP_COLUMNS,
                fmt,
                title=f"{module.module}: top ops by roofline time",
            )


def readable(record: dict) -> dict:
    """Seconds as `1.23 us` for people (a table's two decimals would print 0.00)."""
    return {k: _duration(v) if k.endswith("_seconds") and v is not None else v for k, v in record.items()}


def _duration(seconds: float) -> str:
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"
