"""Opcode histograms: what the `ops` command counts.

`opcode_histogram` counts every instruction of a module, split into those inside fusion bodies
(`fused`) and the rest (`unfused`: the entry, while bodies, conditional branches, reducer
regions...). `function_histogram` folds the modules of one function (its recompiled variants)
into one row per opcode.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xlainspect.analysis.lookup import module_label
from xlainspect.graph import CallEdges, call_edges, module_calls, reachable
from xlainspect.hlo.model import Module

if TYPE_CHECKING:
    from xlainspect.hlo.fastpath import InstructionLine


@dataclass(slots=True)
class OpCount:
    """How often one opcode appears in a module, inside and outside fusions."""

    module: str
    opcode: str
    count: int
    unfused: int
    """Instructions outside fusion bodies."""
    fused: int
    """Instructions inside fusion bodies (fused computations and what they call)."""


@dataclass(slots=True)
class FunctionOpCount:
    """How often one opcode appears in a function's variants."""

    function: str
    opcode: str
    variants: int
    """Modules of this function that contain the opcode."""
    total: int
    min_per_variant: int
    max_per_variant: int


def instruction_count(dump_module, stage: str = "after") -> int:
    """The instructions of a dumped module, counted by the line-level reader where it is sure of every
    line (tests prove its answers are the grammar's; no model is built), else by the grammar.
    Raises XlaInspectError for a file that cannot be read or parsed."""
    from xlainspect.dump.files import read_text
    from xlainspect.hlo.fastpath import scan

    lines = scan(read_text(dump_module.hlo_file(stage).path))
    return len(lines) if lines is not None else dump_module.module(stage).instruction_count


def _fused(calls: CallEdges) -> set[str]:
    """Fused computations and everything they call."""
    return set(reachable(calls, [callee for edges in calls.values() for callee, kind in edges if kind == "fusion"]))


def opcode_histogram(module: Module) -> list[OpCount]:
    """One row per opcode of the module, most frequent first."""
    counts = Counter((c.name, i.opcode) for c in module.computations for i in c.instructions)
    return _histogram(module_label(module), counts, module_calls(module))


def line_histogram(label: str, lines: list[InstructionLine]) -> list[OpCount]:
    """`opcode_histogram` from the line-level reader (`xlainspect.hlo.fastpath.scan`), no model built."""
    counts = Counter((line.computation, line.opcode) for line in lines)
    return _histogram(
        label, counts, call_edges((line.computation, line.opcode, line.called) for line in lines if line.called)
    )


def _histogram(label: str, counts: Counter[tuple[str, str]], calls: CallEdges) -> list[OpCount]:
    """Rows from instruction counts per (computation, opcode) and the call edges."""
    fused = _fused(calls)
    inside: Counter[str] = Counter()
    outside: Counter[str] = Counter()
    for (computation, opcode), n in counts.items():
        (inside if computation in fused else outside)[opcode] += n
    total = inside + outside
    return [
        OpCount(label, op, n, outside[op], inside[op])
        for op, n in sorted(total.items(), key=lambda item: (-item[1], item[0]))
    ]


def function_histogram(modules: Iterable[Module]) -> list[FunctionOpCount]:
    """Per function (module name), each opcode's total and per-variant range over its modules."""
    per_function: dict[str, list[Counter[str]]] = {}
    for module in modules:
        per_function.setdefault(module.name, []).append(Counter(i.opcode for i in module.instructions()))
    rows = []
    for function, counters in per_function.items():
        for opcode in sorted(set().union(*counters)):
            counts = [c[opcode] for c in counters]
            variants = sum(1 for n in counts if n)
            rows.append(FunctionOpCount(function, opcode, variants, sum(counts), min(counts), max(counts)))
    return rows
