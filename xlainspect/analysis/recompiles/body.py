"""Causes within one signature compiled again: an identical program (the jitted function re-created; for
an eager op, a weak type), or a program that differs in its body (output sharding, a loop unrolled more,
a branch, constants, the arguments' pytree paths)."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Hashable
from typing import NamedTuple

from xlainspect.analysis.recompiles.branch import same_signature_branch, text_histogram
from xlainspect.analysis.recompiles.model import (
    Cause,
    Compiles,
    Skipped,
    file_bytes,
    program,
    program_path,
    program_text,
    programs,
)
from xlainspect.analysis.recompiles.sharding import sharding_causes
from xlainspect.dump.module import DumpModule
from xlainspect.errors import XlaInspectError
from xlainspect.hlo.attributes import single_literal_value
from xlainspect.hlo.model import Computation
from xlainspect.hlo.parser import parse_hlo, split_computations
from xlainspect.workers import OWNED


def bodies(compiles: Compiles) -> list[Cause]:
    """Detector for one signature compiled again. A compile whose program (instructions, metadata aside)
    an earlier compile had is identical to it: the jitted function object was re-created (for an eager
    op, an argument's weak type, which HLO does not show). Where programs differ, what differs (one body
    cause). Both may hold for one function (re-created three times, then a static flag picks another
    program)."""
    group = compiles.modules
    texts = [file_bytes(compiles, m, m.program_file()) for m in group]
    if any(t is None for t in texts):
        return []
    # one body compiled again and again is compared byte for byte, not hashed: hashing a 1,000-compile
    # storm's bodies costs more than reading them
    program_of: dict[bytes | None, Hashable] = {texts[0]: texts[0]}
    causes: list[Cause] = []
    if any(text != texts[0] for text in texts):
        first_with: dict[bytes | None, DumpModule] = {}  # compiles that alternate between a few bodies: each once
        for module, text in zip(group, texts):
            first_with.setdefault(text, module)
        try:
            computations = dict(zip(first_with, _differing_computations(compiles.of(list(first_with.values())))))
        except Skipped:
            return []
        differing = dict(zip(first_with, _differing_lines(computations, list(first_with))))
        program_of = {text: tuple(lines) for text, lines in differing.items()}  # equal lines: one program
        programs: dict[tuple[Line, ...], bytes | None] = {}
        for text, lines in differing.items():
            programs.setdefault(tuple(lines), text)
        if len(programs) > 1:
            changed = [first_with[text] for text in programs.values()]
            causes.append(_body_cause(compiles.of(changed), [list(lines) for lines in programs]))
            causes[-1].compiles = tuple(compiles.position[m] for m in changed[1:])
        elif renamed := _renamed_arguments(list(computations.values())):
            renamed.compiles = tuple(compiles.position[m] for m in list(first_with.values())[1:])
            return [renamed]
    repeats = _repeats(compiles, [program_of[t] for t in texts])
    return sorted(repeats + causes, key=lambda c: c.compiles)


def _repeats(compiles: Compiles, programs: list[Hashable]) -> list[Cause]:
    """One identical (eager: weak_type) cause per program compiled again: the compiles that repeat it,
    the compile they repeat, and the module ids of all of them."""
    of_program: dict[Hashable, list[DumpModule]] = {}
    for module, found in zip(compiles.modules, programs):
        of_program.setdefault(found, []).append(module)
    return [
        Cause(
            "weak_type" if compiles.eager else "identical",
            values=tuple(m.module_id for m in repeated),
            compiles=tuple(compiles.position[m] for m in repeated[1:]),
            same_as=compiles.position[repeated[0]],
        )
        for repeated in of_program.values()
        if len(repeated) > 1
    ]


def _renamed_arguments(found: list[list[Computation]]) -> Cause | None:
    """Programs equal but for the entry parameters' op_names: the same leaves under other pytree paths
    (other dict keys or fields), a new pytree structure to jax's cache."""
    entries = [next((c for c in computations if c.is_entry), None) for computations in found]
    names = [[p.op_name or "" for p in entry.parameters] for entry in entries if entry is not None]
    if len(names) < len(entries) or len({tuple(n) for n in names}) == 1 or len({len(n) for n in names}) > 1:
        return None
    changed = [i for i in range(len(names[0])) if len({n[i] for n in names}) > 1]
    return Cause("pytree", None, None, tuple(tuple(n[i] for i in changed) for n in names))


class Line(NamedTuple):
    """An instruction without its name and metadata, as compiles are compared: its text, and for a
    constant its literal as printed and its dtype."""

    text: str
    literal: str | None = None
    dtype: str | None = None


def _differing_lines(
    computations: dict[bytes | None, list[Computation]], texts: list[bytes | None]
) -> list[list[Line]]:
    """Per compile, its instructions (without names and metadata) that not every compile has."""
    lines_of = {text: _instruction_lines(found) for text, found in computations.items()}
    common = functools.reduce(lambda a, b: a & b, lines_of.values())
    differing_of = {text: sorted((lines - common).elements()) for text, lines in lines_of.items()}
    return [differing_of[text] for text in texts]


def _body_cause(changed: Compiles, differing: list[list[Line]]) -> Cause:
    """The one cause a same-signature body difference has: output sharding, a loop unrolled, another
    branch, or constants (a Python value baked in). A program that cannot be read is skipped and the
    causes that need it are not looked for."""
    parsed = programs(changed)
    shardings = [c for c in sharding_causes(parsed) if c.kind == "out_sharding"] if parsed else []
    if shardings:
        return shardings[0]
    constants = [
        tuple(dict.fromkeys(_constant_value(line) for line in lines if line.literal is not None)) for lines in differing
    ]
    histograms = changed.each(text_histogram) or []
    structure = None
    if len({frozenset(h.items()) for h in histograms}) > 1:
        structure = _unrolled(histograms) or same_signature_branch(changed, histograms)
    if any(constants) and (structure is None or _folded(histograms)):
        types = tuple(sorted({line.dtype for lines in differing for line in lines if line.dtype is not None}))
        return Cause("body", None, None, tuple(constants), reason="baked_in", constant_types=types)
    if structure is not None:
        return structure
    return Cause(
        "body", None, None, tuple(tuple(line.text for line in lines) for lines in differing), reason="instructions"
    )


_FOLDABLE = frozenset({"add", "subtract", "multiply", "divide"})


def _folded(histograms: list[Counter[str]]) -> bool:
    """Only arithmetic ops differ in count: in the HLO XLA is given, `x * 1.0` and `x + 0` are already
    simplified away (jax 0.10.2 lowers them, its StableHLO conversion drops them), so a baked-in value
    of 1 or 0 removes the op that would apply it."""
    first = histograms[0]
    return all(op in _FOLDABLE for h in histograms for op in set(h) | set(first) if h[op] != first[op])


def _unrolled(histograms: list[Counter[str]]) -> Cause | None:
    """A loop unrolled (a static count) when every op that changes count grows by one whole factor."""
    first = histograms[0]
    changed = {op for h in histograms for op in set(h) | set(first) if h[op] != first[op]}
    factors = {h[op] / first[op] if first[op] else 0.0 for h in histograms[1:] for op in changed}
    if len(factors) != 1 or (factor := factors.pop()) <= 1 or factor != int(factor):
        return None
    values = tuple(tuple((op, h[op]) for op in sorted(changed)) for h in histograms)
    return Cause("body", None, None, values, reason="unrolled", factor=int(factor))


def _constant_value(line: Line) -> str:
    """`-0.05` of `f32[] constant(-0.05)` or `f32[1]{0} constant({-0.05})` (a literal of one value);
    the whole line for a constant of more values."""
    one = single_literal_value(line.literal or "")
    return line.text if one is None else one


def _differing_computations(compiles: Compiles) -> list[list[Computation]]:
    """Per module, its computations whose text is not in every module of the group, parsed.

    The program XLA was given (before_optimizations, when dumped) is cut into computations and the
    ones printed identically in every module are dropped before parsing: a static argument changes a
    constant or two, and the rest of a module of any size costs one text comparison. A module whose
    pieces do not parse alone is parsed whole (what is common to all cancels out either way).
    """
    pieces: list[list[str]] = []
    for module in compiles.modules:
        try:
            pieces.append(split_computations(program_text(module)))
        except XlaInspectError as error:
            compiles.skip(module, error, program_path(module))
            raise Skipped from None
    common = functools.reduce(lambda a, b: a & b, (Counter(p) for p in pieces))
    return [_parsed_pieces(compiles, module, found, common) for module, found in zip(compiles.modules, pieces)]


def _parsed_pieces(
    compiles: Compiles, module: DumpModule, pieces: list[str], common: Counter[str]
) -> list[Computation]:
    """The computations of `pieces` not in `common`, parsed (the whole module where they do not parse alone)."""
    remaining, kept = common.copy(), list[str]()
    for piece in pieces:
        if remaining[piece] > 0:
            remaining[piece] -= 1
        else:
            kept.append(piece)
    try:
        return [c for parsed in parse_hlo("".join(kept), runner=OWNED) for c in parsed.computations] if kept else []
    except XlaInspectError:  # the pieces alone do not parse: the whole program is read, and skipped if bad
        try:
            return list(program(module).computations)
        except XlaInspectError as error:
            compiles.skip(module, error, program_path(module))
            raise Skipped from None


def _instruction_lines(computations: list[Computation]) -> Counter[Line]:
    """Instructions without names or metadata, so that only what the program computes is compared."""
    lines: Counter[Line] = Counter()
    for instruction in (i for computation in computations for i in computation.instructions):
        attributes = ", ".join(
            f"{k}={v}"
            for k, v in sorted(instruction.attributes.items())
            if k not in ("metadata", "frontend_attributes")
            and not k.startswith(("calls", "to_apply", "body", "condition"))
        )
        operands = f"({', '.join(instruction.operands)})" if instruction.opcode in ("constant", "parameter") else ""
        text = f"{instruction.shape} {instruction.opcode}{operands}" + (f", {attributes}" if attributes else "")
        if instruction.opcode == "constant":
            dtype = instruction.shape.dtype if instruction.shape else None
            lines[Line(text, ", ".join(instruction.operands), dtype)] += 1
        else:
            lines[Line(text)] += 1
    return lines
