"""`fusions`, `copies`, `collectives`, `ops` and `graph`: what is inside a module's instructions."""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from typing import Annotated

import typer

from xlainspect.analysis.commands.graph import (
    collectives_report,
    copies_report,
    fusions_report,
    neighbourhood_report,
    ops_report,
)
from xlainspect.cli.app import commands_of
from xlainspect.cli.options import (
    FormatOpt,
    FunctionOpt,
    ModuleReOpt,
    PathsArg,
    Stage,
    StageOpt,
    StrictOpt,
    readable,
    selection,
    show,
    user_errors,
)
from xlainspect.cli.progress import progress_bars
from xlainspect.cli.render import OutputFormat
from xlainspect.report.graph_text import write_graph
from xlainspect.report.views.graph import collectives_document, copies_document, fusions_document, ops_document

commands = commands_of("graph")


@commands.command()
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
    with user_errors(), progress_bars() as progress:
        report = fusions_report(paths, selection(function, module_re, stage), top=top, progress=progress)
    show(fusions_document(report), fmt, report.skipped, strict)


@commands.command()
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
    with user_errors(), progress_bars() as progress:
        report = copies_report(paths, selection(function, module_re, stage), layout_only=layout_only, progress=progress)
    show(copies_document(report), fmt, report.skipped, strict)


@commands.command()
def collectives(
    paths: PathsArg,
    function: FunctionOpt = None,
    module_re: ModuleReOpt = None,
    stage: StageOpt = Stage.after,
    fmt: FormatOpt = OutputFormat.table,
    strict: StrictOpt = False,
) -> None:
    """Every collective once (sync, -start/-done, async-start): groups, payload, bytes per device and per step."""
    with user_errors(), progress_bars() as progress:
        report = collectives_report(paths, selection(function, module_re, stage), progress=progress)
    show(collectives_document(report), fmt, report.skipped, strict)


@commands.command()
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
    with user_errors(), progress_bars() as progress:
        report = ops_report(paths, selection(function, module_re, stage), per_function=per_function, progress=progress)
    show(ops_document(report), fmt, report.skipped, strict)


class GraphFormat(str, enum.Enum):
    dot = "dot"
    mermaid = "mermaid"
    graphml = "graphml"


@commands.command()
def graph(
    file: Annotated[
        Path, typer.Argument(help="An HLO text file (a path or a URL).", show_default=False, parser=readable)
    ],
    around: Annotated[str, typer.Option("--around", help="Instruction name (computation/name if ambiguous).")],
    depth: Annotated[int, typer.Option("--depth", min=0, help="Edges to follow, operands and users.")] = 2,
    fmt: Annotated[GraphFormat, typer.Option("--format", "-f", help="dot, mermaid or graphml.")] = GraphFormat.dot,
) -> None:
    """The data-flow neighbourhood of one instruction, for Graphviz or a Markdown page."""
    with user_errors():
        sys.stdout.write(write_graph(neighbourhood_report(file, around, depth), fmt.value))
