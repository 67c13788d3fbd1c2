"""count-recompiles' causes in words: one cause (`describe_cause`), a function's causes together
(`causes_text`: which compiles each explains, where they explain different ones), the advice that
reduces the compile count (`suggestion`), the gate's messages (`violation_text`), and the plain-text
explanation the pytest plugin prints (`explain_recompiles`). The analysis returns the data
(`xlainspect.analysis.recompiles.Cause`: kind, values, the compiles it explains); the words are here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xlainspect.analysis.recompiles import Cause, FunctionCompiles, Violation
from xlainspect.analysis.recompiles.buckets import Bucketing, bucketings, ragged_last_batch
from xlainspect.analysis.recompiles.model import Kind, Reason
from xlainspect.dump.jaxlog import Explanation

WHOLE: dict[str, str] = {
    "shape": "(parameter count)",
    "dtype": "(all parameters)",
    "pytree": "(argument paths)",
    "out_sharding": "(output)",
}
"""What a cause of no one parameter (`Cause.parameter` None) is of, by its kind, where a parameter is named."""


def parameter_text(kind: str, parameter: str | None) -> str | None:
    """The parameter a cause (or a diff's signature change) is of, as printed: its name, else `WHOLE`'s."""
    return parameter or WHOLE.get(kind, parameter)


_IDENTICAL_SHORT = (
    "the HLO cannot tell apart the function re-created, a static argument's value, a weak type, a pytree jax "
    "prunes to the same program (an unused key, a keyword call) or a tracing context; jax's log says which: "
    "xlainspect capture -- python train.py"
)
_NO_OPS_OF_ITS_OWN = "only ops every program has"
"""A branch side whose program adds no op to what all programs share (the others add theirs)."""

_REASONS: dict[Reason, str] = {
    "parameter_count": "the number of parameters differs (a different pytree of arguments)",
    "rank": "the rank differs",
    "prng_key": "a PRNG key array",
    "memory_space": "memory space differs",
    "partial_donation": "donated (input_output_alias) in some compiles only",
    "static_argument": "a static argument",
    "branch_on_shape": "the program differs beyond the signature: a Python branch or loop on a shape",
    "branch_on_static": "another program for the same signature: a Python branch on a static argument",
    "instructions": "same signature, different instructions: a static argument or Python value changes the program",
}
_KINDS: dict[Kind, str] = {
    "identical": "identical programs (metadata aside): jax's cache keys on the function object, static "
    "arguments' values, weak types, the argument pytree and the tracing context, and the HLO shows none of "
    "them; jax's log says which (xlainspect capture -- python train.py)",
    "weak_type": "the same program compiled again for jax's own function: an argument's weak type differs (a "
    "Python scalar and an array of the same dtype), which jax's cache tells apart and HLO does not show",
    "pytree": "the same arrays under other pytree paths (dict keys, dataclass fields)",
    "unused": "a static argument or Python value changes what the function uses: jax leaves an argument "
    "the program does not use out of it (jit's keep_unused=False)",
    "out_sharding": "output sharding changed",
    "static_argument": "the program is the same: jax keys its cache on a static argument's value",
    "context": "a config option or context manager",
}
"""The detail of the kinds that have one reason."""


def cause_detail(cause: Cause) -> str:
    """Why, in a few words (`a loop unrolled 2x (a static count)`); "" where the kind and values say it."""
    reason = cause.reason
    if reason == "per_device":
        return f"per device {' -> '.join(map(str, cause.per_device))}"
    if reason in ("branch_on_shape", "branch_on_static") and cause.sources:
        return f"{_REASONS[reason]}, at {', '.join(cause.sources)}"
    if reason == "baked_in":
        return f"a Python {_python_type(cause.constant_types)} baked in: {' -> '.join(cause_values(cause))}"
    if reason == "unrolled":
        return f"a loop unrolled {cause.factor}x (a static count)"
    if cause.kind == "flags":
        return "debug_options differ: " + ", ".join(option for option, _ in cause.values[0])
    if cause.reason == "keys":
        return "jit drops an unused one: the program is the same" if cause.compiles else ""
    return _REASONS.get(reason, "") if reason is not None else _KINDS.get(cause.kind, "")


def signature_detail(reason: Reason | None) -> str:
    """The detail of a signature cause (shape, dtype, layout, donation) by its reason: `diff` shows it."""
    return _REASONS.get(reason, "") if reason is not None else ""


def _python_type(constant_types: tuple[str, ...]) -> str:
    """The Python type a baked-in value had, from its constants' element types (`f32`: a float)."""
    if set(constant_types) <= {"f16", "bf16", "f32", "f64"}:
        return "float"
    if set(constant_types) == {"pred"}:
        return "bool"
    return "int" if all(t[:1] in "su" for t in constant_types) else "value"


def cause_values(cause: Cause) -> tuple[Any, ...]:
    """A cause's values as the table and the JSON show them: ops as `add x2, multiply`, constants and
    argument paths joined, an instruction difference by its first three lines, options as `key=value`,
    shardings with `(replicated)` and `unspecified` spelt out."""
    if cause.kind == "branch":
        return tuple(_ops_text(v) for v in cause.values)
    if cause.reason == "unrolled":
        return tuple(", ".join(f"{op} x{n}" for op, n in v) for v in cause.values)
    if cause.reason == "baked_in":
        return tuple(", ".join(v) or "(folded away)" for v in cause.values)
    if cause.reason == "instructions":
        return tuple("; ".join(v[:3]) + (" ..." if len(v) > 3 else "") for v in cause.values)
    if cause.kind == "pytree" and cause.reason is None and all(isinstance(v, tuple) for v in cause.values):
        return tuple(", ".join(v) for v in cause.values)
    if cause.kind == "unused":
        return tuple(_used_text(v, cause.parameter) for v in cause.values)
    if cause.kind == "flags":
        return tuple(tuple(f"{k}={'(default)' if v is None else v}" for k, v in options) for options in cause.values)
    if cause.kind in ("sharding", "out_sharding"):
        return tuple("unspecified" if v is None else "P() (replicated)" if v == "P()" else v for v in cause.values)
    return cause.values


def _used_text(dropped: tuple[str, ...], parameter: str | None) -> str:
    """`used`, `unused` (every argument the cause names left out), or the names of those left out."""
    if not dropped:
        return "used"
    return "unused" if ", ".join(dropped) == parameter else f"{', '.join(dropped)} unused"


def _ops_text(ops: tuple[tuple[str, int], ...]) -> str:
    """`add x2, multiply`: the ops one program has that others lack."""
    return ", ".join(f"{op} x{n}" if n > 1 else op for op, n in ops)


def cause_record(cause: Cause) -> dict[str, Any]:
    """A cause's JSON: its fields, `values` and `detail` as the table words them, and `reason`."""
    return {
        "kind": cause.kind,
        "parameter": parameter_text(cause.kind, cause.parameter),
        "index": cause.index,
        "values": cause_values(cause),
        "dims": cause.dims,
        "detail": cause_detail(cause),
        "compiles": cause.compiles,
        "same_as": cause.same_as,
        "reason": cause.reason,
    }


def _logged_text(cause: Cause, values: str, detail: str) -> str | None:
    """The causes of weak types and those only jax's log tells (a keyword or keys pytree, a static
    argument, the tracing context, a new function); None for the others."""
    if cause.kind == "weak_type" and cause.parameter is not None:
        return f"weak type {cause.parameter}: {_weak_type_text(*cause.values)}"
    if cause.reason == "keyword":
        before, now = cause.values
        return f"pytree {cause.parameter}: passed as a {now} argument where it was {before}"
    if cause.reason == "keys":
        keys, change = cause.values
        return f"pytree {cause.parameter}: key{'s' * (len(keys) > 1)} {', '.join(map(repr, keys))} {change}{detail}"
    if cause.kind in ("static_argument", "context"):
        return f"{cause.kind.replace('_', ' ')} {cause.parameter}: {values}{detail}"
    if cause.kind == "new_function":
        return _new_function_text(cause)
    if cause.kind == "weak_type":  # an eager op's: the HLO alone
        return f"weak type: modules {', '.join(map(str, cause.values))} are one program (a Python scalar and an array)"
    return None


def describe_cause(cause: Cause) -> str:
    """`shape x dim 0: 100 -> 5`: one cause in the words the table, the report and the pytest plugin share."""
    shown = cause_values(cause)
    values = " -> ".join(map(str, shown))
    detail_text = cause_detail(cause)
    detail = f" ({detail_text})" if detail_text else ""
    if (logged := _logged_text(cause, values, detail)) is not None:
        return logged
    if cause.kind == "shape" and cause.dims:
        return f"shape {cause.parameter} dim {','.join(map(str, cause.dims))}: {values}{detail}"
    if cause.kind in ("shape", "dtype", "layout", "sharding", "donation", "pytree"):
        return f"{cause.kind} {parameter_text(cause.kind, cause.parameter)}: {values}{detail}"
    if cause.kind == "result":
        return f"result {values}{detail}"
    if cause.kind == "unused":
        return f"argument {cause.parameter}: {values}{detail}"
    if cause.kind == "out_sharding":
        return f"output sharding {values}"
    if cause.kind == "identical":
        return f"identical programs (modules {', '.join(map(str, shown))}): {_IDENTICAL_SHORT}"
    if cause.kind == "branch":
        sides = " vs ".join(dict.fromkeys(str(v) or _NO_OPS_OF_ITS_OWN for v in shown))
        return f"branch: {detail_text}: {sides}"
    if cause.kind == "body" and detail_text:
        distinct = " vs ".join(dict.fromkeys(map(str, shown)))
        return f"body: {detail_text}" + ("" if cause.reason == "baked_in" else f": {distinct}")
    return f"{cause.kind}: {values}" if cause.kind == "body" else f"{cause.kind}: {detail_text}"


def _weak_type_text(before: str, now: str) -> str:
    """`a Python float where a float32 array was`: jax's types (`float32[]`, `float32[] weak_type`) in words."""

    def said(typed: str) -> str:
        dtype = typed.partition("[")[0]
        if typed.endswith("weak_type"):
            return f"a Python {_PYTHON_SCALARS.get(dtype[:3], 'scalar')}"
        return f"a {dtype} array"

    return f"{said(now)} where {said(before)} was"


_PYTHON_SCALARS = {"flo": "float", "int": "int", "uin": "int", "com": "complex", "boo": "bool"}
"""The Python scalar a weak type stands for, by its dtype's first letters (jax: float32, int32, complex64)."""


def _new_function_text(cause: Cause) -> str:
    """A function object jax had not seen, where it was defined, and whether one was defined on that line before."""
    (defined_at,) = cause.values
    where = f" defined at {defined_at}" if defined_at else " (a built-in: no source)"
    if cause.reason == "same_line":
        return f"new function{where}: a new function object on every call (jax.jit(lambda ...) or a def in a loop)"
    return f"new function{where}: another function object of the same name"


def jax_said(row: FunctionCompiles) -> list[str]:
    """The explanations jax gave, quoted beside ours: `jax, compile 2: different input types: * at x, now ...`
    (the lines that say what differs, without the call site and the `for f defined at` line)."""
    return [f"jax, compile {number}: {_quoted(e)}" for number, e in row.explanations]


def _quoted(explanation: Explanation) -> str:
    """The lines of an explanation that say what differs (`never seen function`: the function's line
    and what jax suspects), one line."""
    skipped = ("TRACING CACHE MISS", "for ", "all previously seen cache keys differ", "never seen function")
    kept = [line.strip() for line in explanation.lines[1:] if not line.strip().startswith(skipped)]
    return " ".join(kept) or explanation.lines[0]


def causes_text(causes: tuple[Cause, ...]) -> list[str]:
    """A function's causes in words. Where they explain different compiles, each names its compiles
    (`compiles 2-3: identical to compile 1 (...)`, `compile 4: branch: ...`), causes of the same
    compiles together; where all explain the same ones, as `describe_cause` says them."""
    if len({c.compiles for c in causes}) <= 1:
        return [describe_cause(c) for c in causes]
    grouped: dict[tuple[int, ...], list[Cause]] = {}
    for cause in sorted(causes, key=lambda c: c.compiles):
        grouped.setdefault(cause.compiles, []).append(cause)
    return [f"{_numbers(compiles)}: {', '.join(map(_named, group))}" for compiles, group in grouped.items()]


_BRIEF_REASONS: dict[Reason, str] = {
    "parameter_count": "the number of parameters",
    "prng_key": "a PRNG key",
    "static_argument": "a static argument",
    "branch_on_shape": "a Python branch on a shape",
    "branch_on_static": "a Python branch on a static argument",
    "baked_in": "a Python value baked in",
    "unrolled": "a loop unrolled",
}
_BRIEF_KINDS: dict[Kind, str] = {
    "identical": "identical programs",
    "weak_type": "a weak type",
    "static_argument": "a static argument",
    "context": "the tracing context",
    "new_function": "a new function object",
    "out_sharding": "output sharding",
    "pytree": "argument paths",
    "body": "other instructions",
    "flags": "XLA flags",
    "branch": "another program",
}
"""What a cause is, in two or three words: by its reason where it has one, else by its kind."""


def causes_in_brief(causes: tuple[Cause, ...]) -> str:
    """What changed, without the values (`shape of 8 parameters, the number of parameters, dtype`): the
    one line a function's recompiles fold to on the report's first screen (`causes_text` says it all)."""
    parameters: dict[str, set[str]] = {}
    for cause in causes:
        kind = _BRIEF_KINDS.get(cause.kind, cause.kind)
        what = _BRIEF_REASONS.get(cause.reason, kind) if cause.reason is not None else kind
        named = parameters.setdefault(what, set())
        if cause.parameter:  # None: no one parameter (`WHOLE`)
            named.add(cause.parameter)
    return ", ".join(_brief(what, named) for what, named in parameters.items())


def _brief(what: str, parameters: set[str]) -> str:
    if len(parameters) > 1:
        return f"{what} of {len(parameters)} parameters"
    return f"{what} of {next(iter(parameters))}" if parameters else what


def _named(cause: Cause) -> str:
    """A cause beside others: a repeated program says which compile it repeats."""
    if cause.kind == "identical" and cause.same_as:
        return f"identical to compile {cause.same_as} ({_IDENTICAL_SHORT})"
    if cause.kind == "weak_type" and cause.same_as:
        return f"the program of compile {cause.same_as} again (a weak type: a Python scalar, then an array)"
    if cause.kind == "branch":  # the ops of the programs these compiles brought, then why
        ops = list(dict.fromkeys(str(v) or _NO_OPS_OF_ITS_OWN for v in cause_values(cause)))[1:]
        detail = cause_detail(cause)
        return f"another program ({'; '.join(ops)}): {detail.partition(': ')[2] or detail}"
    return describe_cause(cause)


def _numbers(compiles: tuple[int, ...]) -> str:
    """`compile 4`, `compiles 2-3`, `compiles 2, 4-6`: runs of consecutive compiles as ranges."""
    if not compiles:
        return "no compile"
    runs: list[list[int]] = []
    for number in compiles:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    text = ", ".join(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]) for run in runs)
    return f"compile {text}" if len(compiles) == 1 else f"compiles {text}"


def explain_recompiles(rows: list[FunctionCompiles]) -> str:
    """The user's functions compiled more than once, each with its causes and suggestion, then the eager
    traffic in one line, as indented plain text: the explanation where no table can be drawn (a pytest
    failure message)."""
    user, eager = for_people(rows)
    lines: list[str] = []
    for row in (r for r in user if r.modules > 1):
        where = f", {row.source}" if row.source else ""
        lines.append(f"{row.name}: {row.modules} compiles{where} (module ids {', '.join(map(str, row.module_ids))})")
        lines += [f"  why: {text}" for text in causes_text(row.causes)]
        lines += [f"  suggestion: {advice}"] if (advice := suggestion(row)) else []
    if eager is not None:
        lines.append(
            f"eager ops: {compiles_text(eager.compiles)} of {len(eager.functions)} jax functions: {eager.summary()}"
        )
        lines.append(f"  suggestion: {_EAGER_ADVICE}")
    return "\n".join(lines)


def compiles_text(n: int) -> str:
    """`1 compile`, `3 compiles`."""
    return f"{n} compile" + "s" * (n != 1)


_EAGER_ADVICE = "eager op-by-op code: put the loop or step inside one jax.jit function"
_UNROLLED_ADVICE = (
    "a static count unrolls a Python loop: loop with jax.lax.fori_loop / jax.lax.scan over a traced count, "
    "or keep the counts few"
)
_ADVICE = {
    "dtype": "cast the inputs to one dtype before the call",
    "layout": "pass inputs with one layout and memory space (the same device_put / memory kind every call)",
    "sharding": "give the inputs the same sharding every call (device_put with one NamedSharding)",
    "out_sharding": "jit the function once, with one out_shardings",
    "donation": "donate the same arguments on every call (donate_argnums)",
    "result": "a static argument sets the result's shape: each new value compiles again; keep its values few",
    "branch": "a Python if/for on a shape or static value picks the program: keep the shapes or values few, or "
    "use jax.lax.cond / jnp.where on traced values",
    "body": "a static argument or captured Python value changes the program: pass it as a traced argument "
    "(a jnp array), or keep its values few",
    "identical": "create the jitted function once and reuse it (not jax.jit(lambda ...) in a loop), drop a "
    "static argument that changes nothing, pass a scalar as the same kind every call (jnp.float32(x), not "
    "sometimes a Python float)",
    "pytree": "pass the arguments in one pytree structure (the same dict keys) on every call",
    "unused": "a static argument or Python value (a train flag) decides which arguments the function uses: "
    "each value compiles its own program; keep its values few, or pass it as a traced value and choose with "
    "jax.lax.cond",
    "flags": "compiler flags (XLA_FLAGS / compiler options) changed between compiles",
    "weak_type": "pass the argument as the same kind every call (jnp.float32(x), not sometimes a Python float)",
    "static_argument": "a static argument's value that does not change the program still compiles it again: "
    "pass it as a traced argument, or keep its values few",
    "context": "call the function under one configuration (the same config values and context managers)",
    "new_function": "create the jitted function once, outside the loop, and call that",
}


def suggestion(row: FunctionCompiles) -> str | None:
    """Advice that reduces the compile count, one sentence per kind of cause; none where nothing would."""
    if row.eager:
        return _EAGER_ADVICE
    causes, advice = row.causes, list[str]()
    for kind in dict.fromkeys(c.kind for c in causes):
        if kind == "shape":
            advice += _shape_advice([c for c in causes if c.kind == "shape"])
        elif kind == "pytree" and any(c.reason == "keyword" for c in causes):
            advice.append("pass each argument the same way every call (by position or by keyword)")
        elif any(c.reason == "unrolled" for c in causes):
            advice.append(_UNROLLED_ADVICE)
        else:
            advice.append(_ADVICE.get(kind, ""))
    return "; ".join(dict.fromkeys(a for a in advice if a)) or None


def _shape_advice(causes: list[Cause]) -> list[str]:
    """The ragged last batch, or padding buckets that reduce the compile count (not for PRNG keys, whose
    padding would invent keys); a pytree that changes shape."""
    if any(c.index is None for c in causes):
        return ["keep the argument pytree (number of parameters) the same"]
    sized = [c for c in causes if len(c.dims) == 1 and c.reason != "prng_key"]
    if not sized:
        return []
    cause = sized[0]
    names = ", ".join(
        dict.fromkeys(str(c.parameter) for c in sized if (c.values, c.dims) == (cause.values, cause.dims))
    )
    if ragged_last_batch(sizes := tuple(dict.fromkeys(cause.values))):
        full, last = sizes
        return [
            f"the last batch is ragged ({names} dim {cause.dims[0]}: {last} after batches of {full}): drop it "
            f"(drop_remainder=True / drop_last=True), or pad it to {full} and mask the padded rows in the loss "
            "-> 1 compile"
        ]
    choices = bucketings(cause.values)
    if not choices:
        return []
    sizes_text = ", ".join(map(str, sorted(set(cause.values))))
    options = "; ".join(
        f"{_bucket_label(b)} {list(b.buckets)} -> {compiles_text(len(b.buckets))}, up to {b.padding:.0%} padding"
        for b in choices
    )
    return [f"pad {names} dim {cause.dims[0]} (sizes {sizes_text}) to buckets: {options}"]


def _bucket_label(bucketing: Bucketing) -> str:
    if bucketing.rule == "powers_of_two":
        return "powers of two"
    return f"multiples of {bucketing.step}" if bucketing.rule == "multiples" else f"always {bucketing.step}"


def violation_text(violation: Violation, option: str = "--max") -> str:
    """`jit_f compiled 3 times, budget 1 (--max jit_f)`: a budget exceeded, naming the option that set it
    (`option`: the CLI's `--max`, the pytest plugin's `max_compiles`)."""
    if violation.function is None:
        return f"{violation.compiles} compiles in total, budget {violation.budget} ({option}-total)"
    source = {
        "per_name": f"{option} {violation.function}",
        "per_function": "--max-per-function",
        "baseline": "baseline",
        "new": "new: not in the baseline",
    }[violation.limit]
    return f"{violation.function} compiled {violation.compiles} times, budget {violation.budget} ({source})"


@dataclass(slots=True)
class EagerTraffic:
    """Eager ops folded into one line for people: how many functions and compiles, and where called."""

    functions: tuple[FunctionCompiles, ...]
    compiles: int
    call_sites: tuple[str, ...]

    def summary(self) -> str:
        names = ", ".join(f"{r.name} x{r.modules}" if r.modules > 1 else r.name for r in self.functions)
        sites = _short_sites(self.call_sites)
        return f"{names}" + (f"; called at {sites}" if sites else "")


def for_people(rows: list[FunctionCompiles]) -> tuple[list[FunctionCompiles], EagerTraffic | None]:
    """What a person reads first: the user's functions (recompiled ones first, most compiles first),
    then the eager traffic as one summary (one problem, one fix), or None without eager ops."""
    user = sorted((r for r in rows if not r.eager), key=lambda r: (r.modules == 1, -r.modules))
    eager = sorted((r for r in rows if r.eager), key=lambda r: -r.modules)
    if not eager:
        return user, None
    sites = tuple(sorted({r.source for r in eager if r.source}, key=_site_order))
    return user, EagerTraffic(tuple(eager), sum(r.modules for r in eager), sites)


def _site_order(site: str) -> tuple[str, int]:
    file, _, line = site.rpartition(":")
    return file, int(line) if line.isdigit() else 0


def _short_sites(sites: tuple[str, ...], limit: int = 6) -> str:
    """`generate.py:296, :297, :299` (a file named once), the first `limit` call sites."""
    parts: list[str] = []
    last_file = None
    for site in sites[:limit]:
        file, _, line = site.rpartition(":")
        parts.append(f":{line}" if file == last_file else site)
        last_file = file
    return ", ".join(parts) + (f" and {len(sites) - limit} more" if len(sites) > limit else "")
