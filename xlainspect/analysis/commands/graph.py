"""`fusions`, `copies`, `collectives`, `ops` and `graph --around`: per-module rows of the selected modules."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from xlainspect.analysis import neighbourhood as hood
from xlainspect.analysis.collectives import collective_totals, collectives
from xlainspect.analysis.copies import copies, copy_totals
from xlainspect.analysis.fusions import fusion_kind_totals, fusions, largest_fusions, unfused_contractions, unfused_ops
from xlainspect.analysis.lookup import file_label, module_label
from xlainspect.analysis.ops import (
    computation_counts,
    fold_variants,
    line_counts,
    line_histogram,
    opcode_counts,
    opcode_histogram,
)
from xlainspect.analysis.runner import Paths, Selection, input_paths, remembered, run_selected
from xlainspect.analysis.tabular import Tabular
from xlainspect.dump.directory import load_dump
from xlainspect.dump.files import read_text
from xlainspect.dump.model_cache import parse_file
from xlainspect.dump.module import DumpModule, SkippedFile
from xlainspect.errors import XlaInspectError
from xlainspect.hlo.fastpath import scan
from xlainspect.progress import Progress, silent

if TYPE_CHECKING:
    import networkx as nx

    from xlainspect.analysis.collectives import Collective, CollectiveTotal
    from xlainspect.analysis.copies import Copy, CopyTotal
    from xlainspect.analysis.fusions import Fusion, FusionKindTotal, UnfusedContraction
    from xlainspect.analysis.neighbourhood import Node, Subgraph
    from xlainspect.analysis.ops import FunctionOpCount, OpCount


@dataclass
class FusionsReport(Tabular):
    """Every fusion of the selected modules, totals per kind, and the compute left outside fusions."""

    fusions: list[Fusion]
    totals: list[FusionKindTotal]
    unfused_ops: dict[str, dict[str, int]]
    """Per module, compute ops left outside any fusion."""
    unfused_contractions: list[UnfusedContraction]
    skipped: list[SkippedFile]


class ModuleFusions(NamedTuple):
    """What `fusions_report` reads of one module (the results cache keeps it)."""

    fusions: list[Fusion]
    label: str
    """The module's label (`module_label`), which `unfused_ops` is keyed by."""
    unfused_ops: dict[str, int]
    """Compute ops left outside any fusion, most common first."""
    unfused_contractions: list[UnfusedContraction]


@remembered("paths")
def fusions_report(
    paths: Paths, selection: Selection = Selection(), *, top: int | None = None, progress: Progress = silent
) -> FusionsReport:
    """Every fusion (kind, backend kind, fused computation, ops inside, bytes, library calls), or the
    `top` moving the most bytes (the totals count every one), and what was left unfused."""

    def analyse(dump_module: DumpModule) -> ModuleFusions:
        module = dump_module.module(selection.stage)
        return ModuleFusions(
            fusions(module),
            module_label(module),
            dict(unfused_ops(module).most_common()),
            unfused_contractions(module),
        )

    dump = load_dump(input_paths(paths))
    per_module, skipped, _ = run_selected(dump, "fusions", analyse, selection, progress)
    rows = [row for found in per_module for row in found.fusions]
    unfused = {found.label: found.unfused_ops for found in per_module}
    contractions = [c for found in per_module for c in found.unfused_contractions]
    shown = rows if top is None else largest_fusions(rows, top)
    return FusionsReport(shown, fusion_kind_totals(rows), unfused, contractions, [*dump.skipped, *skipped])


@dataclass
class CopiesReport(Tabular):
    """Every copy, transpose and relayout of the selected modules, with totals per kind."""

    copies: list[Copy]
    totals: list[CopyTotal]
    skipped: list[SkippedFile]


@remembered("paths")
def copies_report(
    paths: Paths, selection: Selection = Selection(), *, layout_only: bool = False, progress: Progress = silent
) -> CopiesReport:
    """Every copy, async copy, transpose and relayout fusion: layouts, memory spaces, bytes, producer, consumers."""
    dump = load_dump(input_paths(paths))
    per_module, skipped, _ = run_selected(
        dump, "copies", lambda m: copies(m.module(selection.stage), m.platform), selection, progress
    )
    rows = [row for module_rows in per_module for row in module_rows if row.layout_only or not layout_only]
    return CopiesReport(rows, copy_totals(rows), [*dump.skipped, *skipped])


@dataclass
class CollectivesReport(Tabular):
    """Every collective of the selected modules, with totals per kind."""

    collectives: list[Collective]
    totals: list[CollectiveTotal]
    skipped: list[SkippedFile]


@remembered("paths")
def collectives_report(
    paths: Paths, selection: Selection = Selection(), *, progress: Progress = silent
) -> CollectivesReport:
    """Every collective once (sync, -start/-done, async-start): groups, payload, bytes per device and per step."""
    dump = load_dump(input_paths(paths))
    per_module, skipped, _ = run_selected(
        dump, "collectives", lambda m: collectives(m.module(selection.stage)), selection, progress
    )
    rows = [row for module_rows in per_module for row in module_rows]
    return CollectivesReport(rows, collective_totals(rows), [*dump.skipped, *skipped])


@dataclass
class OpsReport(Tabular):
    """Opcode counts per module, or per function across its variants."""

    opcodes: list[OpCount]
    """Per module (empty with `per_function`)."""
    functions: list[FunctionOpCount]
    """Per function across its variants (only with `per_function`)."""
    skipped: list[SkippedFile]


@remembered("paths")
def ops_report(
    paths: Paths, selection: Selection = Selection(), *, per_function: bool = False, progress: Progress = silent
) -> OpsReport:
    """Opcode histogram per module (inside and outside fusions), or per function across its variants."""
    dump = load_dump(input_paths(paths))
    if per_function:
        counted = run_selected(dump, "ops-per-function", lambda m: _counts(m, selection.stage), selection, progress)
        return OpsReport([], fold_variants(counted.results), [*dump.skipped, *counted.skipped])
    per_module, skipped, _ = run_selected(dump, "ops", lambda m: _histogram(m, selection.stage), selection, progress)
    return OpsReport([row for rows in per_module for row in rows], [], [*dump.skipped, *skipped])


def _counts(dump_module: DumpModule, stage: str) -> tuple[str, Counter[str]]:
    """(function, instructions per opcode, calls looked through) of one module, read as `_histogram` reads it."""
    lines = scan(read_text(dump_module.hlo_path(stage)))
    if lines is None:
        module = dump_module.module(stage)
        return module.name, opcode_counts(*computation_counts(module))
    return dump_module.header(stage).name, opcode_counts(*line_counts(lines))


def _histogram(dump_module: DumpModule, stage: str) -> list[OpCount]:
    """Opcode rows of one module: from the line-level reader where it is sure of every line (no model
    is built, several times faster), from the grammar's model elsewhere."""
    hlo = dump_module.hlo_path(stage)
    lines = scan(read_text(hlo))
    if lines is None:
        return opcode_histogram(dump_module.module(stage))
    return line_histogram(file_label(str(hlo), dump_module.header(stage).name), lines)


@dataclass
class Neighbourhood(Tabular):
    """The data-flow neighbourhood of one instruction, for `graph --around`."""

    subgraph: Subgraph
    """The instructions within `depth` edges and the edges among them."""
    centre: Node
    """The instruction it is drawn around, `(computation, name)`."""

    @property
    def graph(self) -> nx.DiGraph[Node]:
        """The subgraph as a networkx DiGraph (built on first use: the writers need no networkx)."""
        return self.subgraph.to_networkx()


@remembered("file")
def neighbourhood_report(file: str | Path, around: str, depth: int = 2) -> Neighbourhood:
    """The data-flow neighbourhood of one instruction (`computation/name` where the name is ambiguous)."""
    modules = parse_file(file)
    short = around.lstrip("%").rpartition("/")[2]
    module = next(
        (m for m in modules if any(i.name == short for i in m.instructions())), modules[0] if modules else None
    )
    if module is None:
        raise XlaInspectError(f"{file}: no HLO module")
    return Neighbourhood(hood.neighbourhood(module, around, depth), hood.find_instruction(module, around))
