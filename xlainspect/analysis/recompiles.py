"""Why a function was compiled more than once: the variants of one HloModule name, diffed.

Reads the least it can: `HloModule` header lines (entry_computation_layout, input_output_alias)
for every function compiled more than once, debug_options files, and HLO bodies only where the
signatures are the same (a static argument, a captured constant, a re-created function object).
"""

from __future__ import annotations

import contextlib
import functools
import math
import operator
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xlainspect.dump.directory import Dump, DumpModule
from xlainspect.dump.files import read_bytes, read_text
from xlainspect.errors import DumpError, XlaInspectError, no_match

if TYPE_CHECKING:
    from xlainspect.hlo.model import Computation, Module

EAGER_OPS = frozenset(
    "abs acos acosh add all any arange argmax argmin argsort asarray asin asinh atan atan2 atanh broadcast_in_dim "
    "broadcast_to cbrt ceil clip clamp concatenate conj convert_element_type copy cos cosh cumsum cumprod "
    "cumulative_sum divide dot dot_general dynamic_slice dynamic_update_slice einsum equal erf exp exp2 expand_dims "
    "expm1 eye floor full full_like gather greater greater_equal imag integer_pow iota isfinite less less_equal "
    "log log1p logistic matmul max maximum mean min minimum multiply ne negative not_equal ones ones_like pad "
    "power prod real reduce_max reduce_min reduce_precision reduce_sum rem reshape rsqrt scatter scatter_add "
    "select select_n sign sin sinh slice sort split sqrt square squeeze stack stage std subtract sum take tan "
    "tanh transpose tril triu var where zeros zeros_like "
    "_argmax _argmin _reduce_max _reduce_min _reduce_sum _reduce_prod _where _mean _var _cumsum _take "
    "_multi_slice".split()
)
"""jax.numpy / lax functions that eager (un-jitted) code compiles as one-op `jit_<op>` modules
(`jit_stage` is `jnp.asarray` staging a host array)."""


@dataclass(frozen=True, slots=True)
class Cause:
    """One difference between the compiles of a function. `values` has one entry per distinct signature
    in compile order (for body causes: per compile of one signature; for identical: the module ids)."""

    kind: str
    parameter: str | None = None
    """The entry parameter, by its `op_name` metadata when jax recorded one, else `#<index>`."""
    index: int | None = None
    values: tuple = ()
    dims: tuple[int, ...] = ()
    """For shape causes: the dimensions (0-based) whose size varies."""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class FunctionCompiles:
    """The compiles of one function (HloModule name) and what explains them."""

    name: str
    modules: int
    module_ids: tuple[int | None, ...]
    eager: bool
    causes: tuple[Cause, ...] = ()
    suggestion: str | None = None


def is_eager(name: str) -> bool:
    """A single-op module compiled by eager jax code (`jit_add`, `jit__reduce_sum`, `jit_convert_element_type`)."""
    return name.startswith("jit_") and name[4:] in EAGER_OPS


def count_recompiles(dump: Dump, advance: Callable[[int], None] | None = None) -> list[FunctionCompiles]:
    """Per function, in first-compile order: the number of compiles and, where above one, why.
    `advance(n)` is called with each function's module count (a progress bar's)."""
    rows = []
    for name, modules in dump.functions().items():
        if advance is not None:
            advance(len(modules))
        modules = _readable(dump, modules)
        if not modules:
            continue
        eager = is_eager(name)
        causes = _explain(dump, modules) if len(modules) > 1 else ()
        rows.append(
            FunctionCompiles(
                name,
                len(modules),
                tuple(m.module_id for m in modules),
                eager,
                causes,
                _suggest(name, causes, eager, len(modules)),
            )
        )
    return rows


def _readable(dump: Dump, modules: list[DumpModule]) -> list[DumpModule]:
    """The compiles whose HLO file has a readable header and is complete; the rest go to dump.skipped."""
    readable = []
    for module in modules:
        try:
            module.header()
        except XlaInspectError as error:
            dump.skip(module.hlo_file().path, error)
        else:
            readable.append(module)
    return readable


def _explain(dump: Dump, modules: list[DumpModule]) -> tuple[Cause, ...]:
    headers = {m: m.header() for m in modules}  # cached by _readable
    variants = modules
    signatures = {m: _signature(headers[m]) for m in variants}
    first_of: dict[tuple, DumpModule] = {}
    for module in variants:
        first_of.setdefault(signatures[module], module)
    distinct = list(first_of.values())  # a storm of 1,000 compiles has a few signatures: diff those
    causes = signature_causes([headers[m] for m in distinct])
    if any(c.kind == "shape" for c in causes):
        causes = _sharded_shapes(dump, distinct, causes)
    if causes:
        causes = _name_parameters(dump, distinct[0], causes)
    causes += _flag_causes(variants)
    groups: dict[tuple, list[DumpModule]] = {}
    for module in variants:
        groups.setdefault(signatures[module], []).append(module)
    for group in groups.values():
        if len(group) > 1:
            causes += _body_causes(dump, group)
    return tuple(causes)


@functools.lru_cache(maxsize=4096)
def _signature(header) -> tuple:
    """What decides a cache hit as the header shows it: parameter shapes with layouts, and donation.
    Cached: identical header lines share one parsed header, and a storm of 1,000 compiles has a few."""
    return (tuple(str(s) for s in header.parameter_shapes), header.attributes.get("input_output_alias", ""))


def signature_causes(headers: list[Module]) -> list[Cause]:
    """How the entry signatures of header-only modules differ: per parameter, then donation."""
    shapes = [h.parameter_shapes for h in headers]
    if len({len(s) for s in shapes}) > 1:
        causes = [
            Cause(
                "shape",
                "(parameter count)",
                None,
                tuple(len(s) for s in shapes),
                detail="the number of parameters differs (a different pytree of arguments)",
            )
        ]
        dtypes = [",".join(dict.fromkeys(p.dtype for p in s)) for s in shapes]
        if len(set(dtypes)) > 1:  # parameters cannot be paired by index; their element types still tell
            causes.append(Cause("dtype", "(all parameters)", None, tuple(dtypes)))
        return causes
    causes = []
    for index in range(len(shapes[0])):
        cause = _parameter_cause(index, [s[index] for s in shapes])
        if cause is not None:
            causes.append(cause)
    if len({_signature(h)[1] for h in headers}) > 1:
        causes += _donation_causes(headers)
    return causes


def _parameter_cause(index: int, shapes: list) -> Cause | None:
    """The first way in which parameter `index` differs between compiles: dtype, dims, then layout."""
    parameter = f"#{index}"
    if len({s.dtype for s in shapes}) > 1:
        return Cause("dtype", parameter, index, tuple(s.dtype for s in shapes))
    if len({s.dims for s in shapes}) > 1:
        if len({s.rank for s in shapes}) > 1:
            return Cause("shape", parameter, index, tuple(s.dims for s in shapes), detail="the rank differs")
        varying = tuple(d for d in range(shapes[0].rank) if len({s.dims[d] for s in shapes}) > 1)
        if len(varying) == 1:
            values = tuple(s.dims[varying[0]] for s in shapes)
        else:
            values = tuple(tuple(s.dims[d] for d in varying) for s in shapes)
        return Cause("shape", parameter, index, values, varying)
    if len({str(s.layout) for s in shapes}) > 1:
        values = tuple(str(s).split(s.dtype, 1)[-1] if s.is_array else str(s) for s in shapes)
        spaces = {s.layout.memory_space if s.layout else 0 for s in shapes}
        return Cause("layout", parameter, index, values, detail="memory space differs" if len(spaces) > 1 else "")
    return None


def _sharded_shapes(dump: Dump, variants: list[DumpModule], causes: list[Cause]) -> list[Cause]:
    """Per-device shapes that differ while the global (before_optimizations) shapes agree: a sharding change."""
    try:
        if len({tuple(s.dims for s in m.header("before").parameter_shapes) for m in variants}) > 1:
            return causes
        sharded = _sharding_causes([m.module("before").entry for m in variants])
    except XlaInspectError:
        return causes
    return [c for c in causes if c.kind != "shape"] + sharded if sharded else causes


def _donation_causes(headers) -> list[Cause]:
    donated = [{a.parameter for a in h.input_output_alias} for h in headers]
    causes = []
    for index in sorted(set().union(*donated) - set.intersection(*donated)):
        causes.append(
            Cause(
                "donation",
                f"#{index}",
                index,
                tuple(index in d for d in donated),
                detail="donated (input_output_alias) in some compiles only",
            )
        )
    return causes


def _name_parameters(dump: Dump, module: DumpModule, causes: list[Cause]) -> list[Cause]:
    """Replace `#i` by the parameter's `op_name` (jax records the argument path there), when the body parses."""
    try:
        parameters = {p.parameter_number: p.op_name for p in _entry_computation(module).parameters}
    except XlaInspectError as error:
        dump.skip(module.hlo_file().path, error)
        return causes
    return name_parameters(causes, parameters)


def _entry_computation(module: DumpModule) -> Computation:
    """The compiled module's ENTRY computation, parsed alone when its piece of the text parses alone:
    its parameters are all that is needed, and a big module's other computations cost far more."""
    from xlainspect.hlo.parser import parse_hlo, split_computations

    text = read_text(module.hlo_file().path)
    for piece in split_computations(text):
        if piece.startswith("ENTRY ") or "\nENTRY " in piece:
            with contextlib.suppress(XlaInspectError):
                entry = parse_hlo(piece)[0].entry
                if entry.is_entry:
                    return entry
            break
    return module.module().entry


def name_parameters(causes: list[Cause], op_names: dict[int | None, str | None]) -> list[Cause]:
    """Causes with `#i` replaced by parameter i's `op_name` (jax records the argument path there)."""
    return [_renamed(c, op_names.get(c.index)) for c in causes]


def _renamed(cause: Cause, op_name: str | None) -> Cause:
    if cause.index is None or not op_name:
        return cause
    return Cause(cause.kind, op_name, cause.index, cause.values, cause.dims, cause.detail)


def _flag_causes(variants: list[DumpModule]) -> list[Cause]:
    """Compiler flags (the non-default debug options XLA writes next to every module) that differ."""
    texts = [_read_bytes(m.file("debug_options", stage=None)) for m in variants]
    if any(t is None for t in texts) or len(set(texts)) == 1:  # the common case: one text, nothing to parse
        return []
    decoded = {text: _debug_options(text) for text in set(texts)}
    options = [decoded[t] for t in texts]
    if len({frozenset(o.items()) for o in options}) == 1:
        return []
    keys = sorted({k for o in options for k, v in o.items() if any(other.get(k) != v for other in options)})
    return [
        Cause(
            "flags",
            None,
            None,
            tuple(tuple(f"{k}={o.get(k, '(default)')}" for k in keys) for o in options),
            detail="debug_options differ: " + ", ".join(keys),
        )
    ]


def _read_bytes(dump_file) -> bytes | None:
    """A file's bytes (decompressed); None when it is absent or unreadable."""
    if dump_file is None:
        return None
    try:
        return read_bytes(dump_file.location)
    except DumpError:
        return None


def _debug_options(text: bytes) -> dict[str, str]:
    """`key: value` lines of a debug_options file, without the dump's own flags (xla_dump_*)."""
    pairs = (line.partition(":") for line in text.decode("utf-8", errors="replace").splitlines() if ":" in line)
    return {k.strip(): v.strip() for k, _, v in pairs if not k.strip().startswith("xla_dump_")}


def _body_causes(dump: Dump, group: list[DumpModule]) -> list[Cause]:
    """Same signature compiled again: a byte-identical module (the jitted function object was re-created)
    or a different body (a static argument or captured Python value baked in as constants)."""
    texts = [_read_bytes(m.hlo_file()) for m in group]
    if None in texts:
        return []
    ids = tuple(m.module_id for m in group)
    if len(set(texts)) == 1:
        return [
            Cause(
                "identical",
                None,
                None,
                ids,
                detail="byte-identical modules: the function object was re-created, so jax's cache missed",
            )
        ]
    first_with: dict[bytes, DumpModule] = {}  # compiles that alternate between a few bodies: each body once
    for module, text in zip(group, texts):
        first_with.setdefault(text, module)
    try:
        computations = dict(zip(first_with, _differing_computations(dump, list(first_with.values()))))
    except _Skipped:
        return []
    entries = {text: next((c for c in found if c.is_entry), None) for text, found in computations.items()}
    if all(entries.values()):  # an ENTRY text common to all compiles has the same shardings everywhere
        shardings = _sharding_causes([entries[text] for text in texts])
        if shardings:
            return shardings
    lines_of = {text: _instruction_lines(found) for text, found in computations.items()}
    common = functools.reduce(operator.and_, lines_of.values())
    differing_of = {text: sorted((lines - common).elements()) for text, lines in lines_of.items()}
    differing = [differing_of[text] for text in texts]
    if not any(differing):
        return [
            Cause(
                "identical",
                None,
                None,
                ids,
                detail="same instructions, only metadata differs: the function "
                "object was re-created, so jax's cache missed",
            )
        ]
    constants = [tuple(line for line in lines if " constant(" in line) for lines in differing]
    if all(constants):
        return [
            Cause(
                "body",
                None,
                None,
                tuple(", ".join(c) for c in constants),
                detail="same signature, constants differ: a static argument or Python value baked in",
            )
        ]
    return [
        Cause(
            "body",
            None,
            None,
            tuple("; ".join(lines[:3]) + (" ..." if len(lines) > 3 else "") for lines in differing),
            detail="same signature, different instructions: a static argument or Python value changes the program",
        )
    ]


class _Skipped(Exception):
    """A module of the group could not be read or parsed; dump.skip has recorded it."""


def _differing_computations(dump: Dump, modules: list[DumpModule]) -> list[list[Computation]]:
    """Per module, its computations whose text is not in every module of the group, parsed.

    The program XLA was given (before_optimizations, when dumped) is cut into computations and the
    ones printed identically in every module are dropped before parsing: a static argument changes a
    constant or two, and the rest of a module of any size costs one text comparison. A module whose
    pieces do not parse alone is parsed whole (what is common to all cancels out either way).
    """
    from xlainspect.hlo.parser import parse_hlo, split_computations

    pieces = []
    for module in modules:
        try:
            pieces.append(split_computations(read_text(module.hlo_file(_program_stage(module)).path)))
        except XlaInspectError as error:
            dump.skip(module.hlo_file().path, error)
            raise _Skipped from None
    common = functools.reduce(operator.and_, map(Counter, pieces))
    found = []
    for module, module_pieces in zip(modules, pieces):
        remaining, kept = common.copy(), []
        for piece in module_pieces:
            if remaining[piece] > 0:
                remaining[piece] -= 1
            else:
                kept.append(piece)
        try:
            found.append([c for parsed in parse_hlo("".join(kept)) for c in parsed.computations] if kept else [])
        except XlaInspectError:
            try:
                found.append(list(module.module(_program_stage(module)).computations))
            except XlaInspectError as error:
                dump.skip(module.hlo_file().path, error)
                raise _Skipped from None
    return found


def _program_stage(module: DumpModule) -> str:
    """The HLO XLA was given, when it was dumped (before_optimizations); else the compiled module."""
    return "before" if module.file("hlo", "before") else "after"


def _sharding_causes(entries: list[Computation]) -> list[Cause]:
    """Entry parameters whose `sharding={...}` differs (the per-device shapes may still be equal)."""
    per_module = [
        {p.parameter_number: (p.op_name, p.attributes.get("sharding", "")) for p in entry.parameters}
        for entry in entries
    ]
    causes = []
    for index in sorted(per_module[0]):
        seen = [parameters.get(index, (None, ""))[1] for parameters in per_module]
        if len(set(seen)) > 1:
            causes.append(Cause("sharding", per_module[0][index][0] or f"#{index}", index, tuple(seen)))
    return causes


def _instruction_lines(computations: list[Computation]) -> Counter:
    """Instructions without names or metadata, so that only what the program computes is compared."""
    lines: Counter = Counter()
    for instruction in (i for computation in computations for i in computation.instructions):
        attributes = ", ".join(
            f"{k}={v}"
            for k, v in sorted(instruction.attributes.items())
            if k not in ("metadata", "frontend_attributes")
            and not k.startswith(("calls", "to_apply", "body", "condition"))
        )
        operands = f"({', '.join(instruction.operands)})" if instruction.opcode in ("constant", "parameter") else ""
        lines[f"{instruction.shape} {instruction.opcode}{operands}" + (f", {attributes}" if attributes else "")] += 1
    return lines


def _suggest(name: str, causes: tuple[Cause, ...], eager: bool, count: int) -> str | None:
    if eager and count >= 1:
        return "eager op-by-op code: put the loop or step inside one jax.jit function"
    advice = []
    for kind in dict.fromkeys(c.kind for c in causes):
        if kind == "shape":
            advice += [_bucket_advice(c) for c in causes if c.kind == "shape" and c.dims and len(c.dims) == 1][:1]
            advice += (
                ["keep the argument pytree (number of parameters) the same"]
                if any(c.index is None for c in causes if c.kind == "shape")
                else []
            )
        else:
            advice.append(_ADVICE[kind])
    return "; ".join(a for a in advice if a) or None


_ADVICE = {
    "dtype": "cast the inputs to one dtype before the call",
    "layout": "pass inputs with one layout and memory space (the same device_put / memory kind every call)",
    "sharding": "give the inputs the same sharding every call (device_put with one NamedSharding)",
    "donation": "donate the same arguments on every call (donate_argnums)",
    "body": "a static argument or captured Python value changes the program: make it a traced argument, or keep "
    "its values few",
    "identical": "the jitted function is re-created (e.g. jax.jit(lambda ...) in a loop): create it once and reuse it",
    "flags": "compiler flags (XLA_FLAGS / compiler options) changed between compiles",
}


def _bucket_advice(cause: Cause) -> str:
    """Padding buckets computed from the sizes seen: powers of two, and multiples of a round step."""
    sizes = sorted(set(cause.values))
    powers = sorted({1 << max(0, math.ceil(math.log2(v))) for v in sizes if v > 0})
    step = next((s for s in (128, 64, 32, 16, 8) if s <= min(sizes) or s < max(sizes) / 2), 8)
    multiples = sorted({-(-v // step) * step for v in sizes})
    where = f"{cause.parameter} dim {cause.dims[0]}"
    return (
        f"pad {where} (sizes {', '.join(map(str, sizes))}) to buckets: powers of two {powers} -> {len(powers)} "
        f"compiles, multiples of {step} {multiples} -> {len(multiples)}, or always {max(sizes)} -> 1 compile"
    )


def describe_cause(cause: Cause) -> str:
    """`shape x dim 0: 100 -> 5`: one cause in the words the table, the report and the pytest plugin share."""
    values = " -> ".join(map(str, cause.values))
    if cause.kind == "shape" and cause.dims:
        return f"shape {cause.parameter} dim {','.join(map(str, cause.dims))}: {values}"
    if cause.kind in ("shape", "dtype", "layout", "sharding", "donation"):
        return f"{cause.kind} {cause.parameter}: {values}" + (f" ({cause.detail})" if cause.detail else "")
    if cause.kind == "identical":
        return f"identical modules {values}: function re-created"
    return f"{cause.kind}: {values}" if cause.kind == "body" else f"{cause.kind}: {cause.detail}"


def explain_recompiles(rows: list[FunctionCompiles]) -> str:
    """The functions compiled more than once, each with its causes and suggestion, as indented plain text:
    the explanation where no table can be drawn (a pytest failure message)."""
    lines = []
    for row in sorted((r for r in rows if r.modules > 1), key=lambda r: -r.modules):
        lines.append(f"{row.name}: {row.modules} compiles (module ids {', '.join(map(str, row.module_ids))})")
        lines += [f"  why: {describe_cause(c)}" for c in row.causes]
        lines += [f"  suggestion: {row.suggestion}"] if row.suggestion else []
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Budget:
    """The CI gate: compile budgets per function and in total; a baseline's counts are budgets too."""

    max_per_function: int | None = None
    per_name: tuple[tuple[str, int], ...] = ()
    max_total: int | None = None
    ignore_eager: bool = False
    baseline: tuple[tuple[str, int], ...] | None = None
    """Per-function counts of an earlier run; None without one. A function absent from it is new: its
    budget is `max_per_function`, else NEW_FUNCTION_BUDGET, so a baseline never waves one through."""
    named_by: str = "--max"
    """How the messages name a per-function budget and the total one (`--max NAME`, `--max-total`):
    the option a person set, which the pytest plugin spells `max_compiles`."""
    names_must_exist: bool = True
    """A per-name budget naming no function of the dump is a usage error (a misspelt name would
    otherwise budget nothing); off in the pytest plugin, where a test may compile a function 0 times."""


NEW_FUNCTION_BUDGET = 1
"""Compiles allowed to a function the baseline does not hold, without --max-per-function: one (a new
function compiles once; a new function that recompiles fails the gate)."""


def budget_violations(rows: list[FunctionCompiles], budget: Budget) -> list[str]:
    """One message per function (or total) over its budget; empty when everything is within.
    Raises NoMatchError for a per-name budget naming no function (when `names_must_exist`)."""
    per_name, baseline = dict(budget.per_name), dict(budget.baseline or ())
    if budget.names_must_exist:
        _check_budget_names(rows, per_name, budget.named_by)
    counted = [r for r in rows if not (budget.ignore_eager and r.eager)]
    messages = []
    for row in counted:
        limits = [
            (f"{budget.named_by} {row.name}", per_name.get(row.name, budget.max_per_function)),
            ("baseline", baseline.get(row.name)),
        ]
        if row.name not in per_name and budget.max_per_function is not None:
            limits[0] = ("--max-per-function", budget.max_per_function)
        if budget.baseline is not None and row.name not in baseline and limits[0][1] is None:
            limits.append(("new: not in the baseline", NEW_FUNCTION_BUDGET))
        over = [(limit, source) for source, limit in limits if limit is not None and row.modules > limit]
        if over:
            limit, source = min(over)
            messages.append(f"{row.name} compiled {row.modules} times, budget {limit} ({source})")
    total = sum(r.modules for r in counted)
    if budget.max_total is not None and total > budget.max_total:
        messages.append(f"{total} compiles in total, budget {budget.max_total} ({budget.named_by}-total)")
    return messages


def _check_budget_names(rows: list[FunctionCompiles], per_name: dict[str, int], option: str) -> None:
    names = [r.name for r in rows]
    for name in per_name:
        if name not in names:
            raise no_match(option, name, names)


def baseline_counts(rows: list[FunctionCompiles]) -> dict:
    """The document `--update-baseline` writes: compile counts per function."""
    return {"functions": {r.name: r.modules for r in rows}}
