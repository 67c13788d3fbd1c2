"""Causes in which ops a program runs: another program for the same parameter types (a Python `if` or
`for` on a shape or a static value), named by the ops only one side has and where they were written."""

from __future__ import annotations

import functools
from collections import Counter

from xlainspect.analysis.ops import computation_counts, line_counts, opcode_counts
from xlainspect.analysis.recompiles.model import Cause, Compiles, Reason, program_stage, program_text, programs
from xlainspect.analysis.recompiles.signature import program_header
from xlainspect.dump.module import DumpModule
from xlainspect.hlo.fastpath import has_call, opcodes, scan
from xlainspect.hlo.model import Module

SIGNATURE_OPS = frozenset(
    {"parameter", "tuple", "get-tuple-element", "constant", "broadcast", "reshape", "bitcast", "convert"}
)
"""Ops a signature alone can add or drop (reshapes and broadcasts of another shape, constants, tuples
of parameters, converts of another dtype): not counted as the program's own."""


def branches(compiles: Compiles, causes: list[Cause]) -> list[Cause]:
    """Detector: the user's signatures whose programs differ in their ops although their parameters have
    the same element types (a shape changes the sizes, not which ops run; a dtype or a new pytree may
    change the ops): a Python `if`/`for` on a shape or a static value picked another program. The ops
    are counted in the text (a storm of 1,000 shapes is 1,000 programs); one program per distinct count
    is parsed."""
    variants = compiles.modules
    if len(variants) < 2 or compiles.eager:
        return causes
    if len({tuple(s.dtype for s in program_header(compiles, m).parameter_shapes) for m in variants}) > 1:
        return causes
    histograms = compiles.each(text_histogram)
    if histograms is None:
        return causes
    keys = [frozenset(h.items()) for h in histograms]
    if len(set(keys)) == 1:
        return causes
    representatives: dict[frozenset[tuple[str, int]], tuple[DumpModule, Counter[str]]] = {}
    for key, module, histogram in zip(keys, variants, histograms):
        representatives.setdefault(key, (module, histogram))
    parsed = programs(compiles.of([m for m, _ in representatives.values()]))
    placed = list(zip(parsed, [h for _, h in representatives.values()]))
    return [*causes, branch_cause(histograms, placed, "branch_on_shape")]


def text_histogram(module: DumpModule) -> Counter[str]:
    """Opcodes the program computes with, counted without building a model, the `SIGNATURE_OPS` left
    out. A program with `call` instructions (jax keeps nested jits as calls, 0.10 and 0.11 in different
    numbers) is counted per computation, calls inlined (`ops.inlined`): by the line-level reader, else
    from the parsed module."""
    stage = program_stage(module)
    text = program_text(module)
    if not has_call(text):  # one pass over the text: a storm of 1,000 programs is read fast
        return Counter(op for op in opcodes(text) if op not in SIGNATURE_OPS)
    lines = scan(text)
    counts = opcode_counts(*(line_counts(lines) if lines is not None else computation_counts(module.module(stage))))
    return Counter({op: n for op, n in counts.items() if op not in SIGNATURE_OPS})


def branch_cause(histograms: list[Counter[str]], parsed: list[tuple[Module, Counter[str]]], reason: Reason) -> Cause:
    """Per variant the ops only it has (beyond what all share), and the source lines of the first of
    them in `parsed` (programs with their histograms, one per distinct histogram; none when they did
    not parse)."""
    common = functools.reduce(lambda a, b: a & b, histograms)
    only = [h - common for h in histograms]
    placed = [(_placed_ops(p), h - common) for p, h in parsed]
    shared = functools.reduce(lambda a, b: a & b, (set(p) for p, _ in placed)) if placed else set[tuple[str, str]]()
    sources = tuple(dict.fromkeys(s for p, o in placed for s in _first_sources(p, shared, o)))
    return Cause("branch", None, None, tuple(op_counts(o) for o in only), reason=reason, sources=sources)


def op_counts(ops: Counter[str]) -> tuple[tuple[str, int], ...]:
    """(opcode, count) pairs by opcode: a value of a branch cause, the ops one program has that others lack."""
    return tuple(sorted(ops.items()))


def same_signature_branch(bodies: Compiles, histograms: list[Counter[str]]) -> Cause:
    """Other ops for the same signature: a Python `if` on a static argument (without source lines where
    a program does not parse: it is skipped)."""
    return branch_cause(histograms, list(zip(programs(bodies), histograms)), "branch_on_static")


def _placed_ops(module: Module) -> list[tuple[str, str]]:
    """(opcode, file:line) of the instructions that have a source, the ENTRY computation's first."""
    placed = ((i.opcode, module.source_of(i)) for i in [*module.entry.instructions, *module.instructions()])
    return [(opcode, source) for opcode, source in placed if source]


def _first_sources(placed: list[tuple[str, str]], shared: set[tuple[str, str]], ops: Counter[str]) -> list[str]:
    """file:line of the first two instructions whose opcode is in `ops` at a line no other program has it."""
    found: list[str] = []
    for opcode, source in placed:
        if opcode in ops and (opcode, source) not in shared and source not in found:
            found.append(source)
            if len(found) == 2:
                break
    return found
