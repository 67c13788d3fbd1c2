"""Opcode histograms: what the `ops` command counts.

`opcode_histogram` counts every instruction of a module, split into those inside fusion bodies
(`fused`) and the rest (`unfused`: the entry, while bodies, conditional branches, reducer
regions...). `function_histogram` folds the modules of one function (its recompiled variants)
into one row per opcode.

Every histogram looks through `call` instructions as XLA's CallInliner (call_inliner.cc, run early
in every compiler's pipeline) does: a called computation's ops are counted once per call site in
place of the `call`. jax keeps a nested `jax.jit` (jnp.sort, jax.nn.relu, a user's inner jit) as a
`call` in the program it gives XLA, and jax 0.10.2 and 0.11.2 split one program into calls
differently, so without this one program would count differently under the two.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from xlainspect.analysis.lookup import module_label
from xlainspect.dump.files import read_text
from xlainspect.dump.module import DumpModule
from xlainspect.graph import CallEdges, call_edges, module_calls, reachable
from xlainspect.hlo.fastpath import InstructionLine, scan
from xlainspect.hlo.model import Module


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


def instruction_count(dump_module: DumpModule, stage: str = "after") -> int:
    """The instructions of a dumped module, counted by the line-level reader where it is sure of every
    line (tests prove its answers are the grammar's; no model is built), else by the grammar.
    Raises XlaInspectError for a file that cannot be read or parsed (DumpModule.module's DumpError for
    a module with no HLO text)."""
    dump_file = dump_module.hlo_file(stage)
    lines = scan(read_text(dump_file.path)) if dump_file is not None else None
    return len(lines) if lines is not None else dump_module.module(stage).instruction_count


def _fused(calls: CallEdges) -> set[str]:
    """Fused computations and everything they call."""
    return set(reachable(calls, [callee for edges in calls.values() for callee, kind in edges if kind == "fusion"]))


def computation_counts(module: Module) -> tuple[Counter[tuple[str, str]], CallEdges]:
    """Instructions per (computation, opcode) of a parsed module, and its call edges."""
    return Counter((c.name, i.opcode) for c in module.computations for i in c.instructions), module_calls(module)


def line_counts(lines: list[InstructionLine]) -> tuple[Counter[tuple[str, str]], CallEdges]:
    """`computation_counts` from the line-level reader (`xlainspect.hlo.fastpath.scan`), no model built."""
    counts = Counter((line.computation, line.opcode) for line in lines)
    return counts, call_edges((line.computation, line.opcode, line.called) for line in lines if line.called)


def inlined(counts: Counter[tuple[str, str]], calls: CallEdges) -> Counter[tuple[str, str]]:
    """`counts` as they are once every `call` is inlined: no `call` instructions, and each computation's
    instructions counted as often as inlining copies them. A computation reached only by calls exists
    once per call site of its callers, less its parameters (the call's operands take their place); one
    also reached otherwise (a reducer, a fusion, a while body, the entry, or nothing at all) keeps its
    own copy too."""
    if not any(opcode == "call" for _, opcode in counts):
        return counts
    call_sites: dict[str, list[str]] = {}
    other_callers: set[str] = set()
    for caller, edges in calls.items():
        for callee, opcode in edges:
            if opcode == "call":
                call_sites.setdefault(callee, []).append(caller)
            else:
                other_callers.add(callee)
    copies: dict[str, int] = {}

    def own(computation: str) -> int:
        return int(computation not in call_sites or computation in other_callers)

    def copies_of(computation: str) -> int:  # the call graph is acyclic (XLA verifies it)
        if computation not in copies:
            sites = call_sites.get(computation, ())
            copies[computation] = own(computation) + sum(copies_of(caller) for caller in sites)
        return copies[computation]

    found: Counter[tuple[str, str]] = Counter()
    for (computation, opcode), n in counts.items():
        k = own(computation) if opcode == "parameter" else copies_of(computation) * (opcode != "call")
        if k:
            found[computation, opcode] += n * k
    return found


def opcode_histogram(module: Module) -> list[OpCount]:
    """One row per opcode of the module (calls looked through), most frequent first."""
    return _histogram(module_label(module), *computation_counts(module))


def line_histogram(label: str, lines: list[InstructionLine]) -> list[OpCount]:
    """`opcode_histogram` from the line-level reader (`xlainspect.hlo.fastpath.scan`), no model built."""
    return _histogram(label, *line_counts(lines))


def _histogram(label: str, counts: Counter[tuple[str, str]], calls: CallEdges) -> list[OpCount]:
    """Rows from instruction counts per (computation, opcode) and the call edges, calls inlined."""
    fused = _fused(calls)
    inside: Counter[str] = Counter()
    outside: Counter[str] = Counter()
    for (computation, opcode), n in inlined(counts, calls).items():
        (inside if computation in fused else outside)[opcode] += n
    total = inside + outside
    return [
        OpCount(label, op, n, outside[op], inside[op])
        for op, n in sorted(total.items(), key=lambda item: (-item[1], item[0]))
    ]


def opcode_counts(counts: Counter[tuple[str, str]], calls: CallEdges) -> Counter[str]:
    """Instructions per opcode, calls inlined."""
    per_opcode: Counter[str] = Counter()
    for (_, opcode), n in inlined(counts, calls).items():
        per_opcode[opcode] += n
    return per_opcode


def function_histogram(modules: Iterable[Module]) -> list[FunctionOpCount]:
    """Per function (module name), each opcode's total and per-variant range over its modules (calls
    looked through)."""
    return fold_variants((module.name, opcode_counts(*computation_counts(module))) for module in modules)


def fold_variants(counted: Iterable[tuple[str, Counter[str]]]) -> list[FunctionOpCount]:
    """`function_histogram` of each module's (function, instructions per opcode)."""
    per_function: dict[str, list[Counter[str]]] = {}
    for function, counts in counted:
        per_function.setdefault(function, []).append(counts)
    rows: list[FunctionOpCount] = []
    for function, counters in per_function.items():
        for opcode in sorted(set[str]().union(*counters)):
            counts = [c[opcode] for c in counters]
            variants = sum(1 for n in counts if n)
            rows.append(FunctionOpCount(function, opcode, variants, sum(counts), min(counts), max(counts)))
    return rows
