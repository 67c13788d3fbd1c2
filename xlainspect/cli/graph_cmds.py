"""`fusions`, `copies`, `collectives`, `ops` and `graph`: what is inside a module's instructions."""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from typing import Annotated

import typer

from xlainspect.cli.app import (
    FormatOpt,
    FunctionOpt,
    ModuleReOpt,
    PathsArg,
    Stage,
    StageOpt,
    StrictOpt,
    app,
    readable,
    show,
    user_errors,
)
from xlainspect.cli.progress import progress_bars
from xlainspect.cli.render import OutputFormat


def selection(function: str | None, module_re: str | None, stage: Stage):
    from xlainspect.analysis.commands import Selection

    return Selection(function, module_re, stage.value)


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
    from xlainspect.analysis.commands.graph import fusions_report
    from xlainspect.report.views import fusions_document

    with user_errors(), progress_bars() as progress:
        report = fusions_report(paths, selection(function, module_re, stage), top=top, progress=progress)
    show(fusions_document(report), fmt, report.skipped, strict)


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
    from xlainspect.analysis.commands.graph import copies_report
    from xlainspect.report.views import copies_document

    with user_errors(), progress_bars() as progress:
        report = copies_report(paths, selection(function, module_re, stage), layout_only=layout_only, progress=progress)
    show(copies_document(report), fmt, report.skipped, strict)


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
    from xlainspect.analysis.commands.graph import collectives_report
    from xlainspect.report.views import collectives_document

    with user_errors(), progress_bars() as progress:
        report = collectives_report(paths, selection(function, module_re, stage), progress=progress)
    show(collectives_document(report), fmt, report.skipped, strict)


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
    from xlainspect.analysis.commands.graph import ops_report
    from xlainspect.report.views import ops_document

    with user_errors(), progress_bars() as progress:
        report = ops_report(paths, selection(function, module_re, stage), per_function=per_function, progress=progress)
    show(ops_document(report), fmt, report.skipped, strict)


class GraphFormat(str, enum.Enum):
    dot = "dot"
    mermaid = "mermaid"
    graphml = "graphml"


@app.command()
def graph(
    file: Annotated[
        Path, typer.Argument(help="An HLO text file (a path or a URL).", show_default=False, parser=readable)
    ],
    around: Annotated[str, typer.Option("--around", help="Instruction name (computation/name if ambiguous).")],
    depth: Annotated[int, typer.Option("--depth", min=0, help="Edges to follow, operands and users.")] = 2,
    fmt: Annotated[GraphFormat, typer.Option("--format", "-f", help="dot, mermaid or graphml.")] = GraphFormat.dot,
) -> None:
    """The data-flow neighbourhood of one instruction, for Graphviz or a Markdown page."""
    from xlainspect.analysis.commands.graph import neighbourhood_report
    from xlainspect.report.graph_text import write_graph

    with user_errors():
        sys.stdout.write(write_graph(neighbourhood_report(file, around, depth), fmt.value))
