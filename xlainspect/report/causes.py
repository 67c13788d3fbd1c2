"""count-recompiles' causes in words: one cause (`describe_cause`), a function's causes together
(`causes_text`: which compiles each explains, where they explain different ones), and the plain-text
explanation the pytest plugin prints (`explain_recompiles`). The analysis returns the data
(`xlainspect.analysis.recompiles.Cause`: kind, values, the compiles it explains); the words are here.
"""

from __future__ import annotations

from xlainspect.analysis.recompiles import Cause, FunctionCompiles, compiles_text, for_people

_IDENTICAL_SHORT = "the function re-created, a static argument that changes nothing, or a weak type"
_NO_OPS_OF_ITS_OWN = "only ops every program has"
"""A branch side whose program adds no op to what all programs share (the others add theirs)."""


def describe_cause(cause: Cause) -> str:
    """`shape x dim 0: 100 -> 5`: one cause in the words the table, the report and the pytest plugin share."""
    values = " -> ".join(map(str, cause.values))
    detail = f" ({cause.detail})" if cause.detail else ""
    if cause.kind == "shape" and cause.dims:
        return f"shape {cause.parameter} dim {','.join(map(str, cause.dims))}: {values}{detail}"
    if cause.kind in ("shape", "dtype", "layout", "sharding", "donation", "pytree"):
        return f"{cause.kind} {cause.parameter}: {values}{detail}"
    if cause.kind == "result":
        return f"result {values}{detail}"
    if cause.kind == "out_sharding":
        return f"output sharding {values}"
    if cause.kind == "identical":
        return f"identical programs (modules {', '.join(map(str, cause.values))}): {_IDENTICAL_SHORT}"
    if cause.kind == "weak_type":
        return f"weak type: modules {', '.join(map(str, cause.values))} are one program (a Python scalar and an array)"
    if cause.kind == "branch":
        sides = " vs ".join(dict.fromkeys(str(v) or _NO_OPS_OF_ITS_OWN for v in cause.values))
        return f"branch: {cause.detail}: {sides}"
    if cause.kind == "body" and cause.detail:
        distinct = " vs ".join(dict.fromkeys(map(str, cause.values)))
        return f"body: {cause.detail}" + ("" if "->" in cause.detail else f": {distinct}")
    return f"{cause.kind}: {values}" if cause.kind == "body" else f"{cause.kind}: {cause.detail}"


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


def _named(cause: Cause) -> str:
    """A cause beside others: a repeated program says which compile it repeats."""
    if cause.kind == "identical" and cause.same_as:
        return f"identical to compile {cause.same_as} ({_IDENTICAL_SHORT})"
    if cause.kind == "weak_type" and cause.same_as:
        return f"the program of compile {cause.same_as} again (a weak type: a Python scalar, then an array)"
    if cause.kind == "branch":  # the ops of the programs these compiles brought, then why
        ops = list(dict.fromkeys(str(v) or _NO_OPS_OF_ITS_OWN for v in cause.values))[1:]
        return f"another program ({'; '.join(ops)}): {cause.detail.partition(': ')[2] or cause.detail}"
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
    lines = []
    for row in (r for r in user if r.modules > 1):
        where = f", {row.source}" if row.source else ""
        lines.append(f"{row.name}: {row.modules} compiles{where} (module ids {', '.join(map(str, row.module_ids))})")
        lines += [f"  why: {text}" for text in causes_text(row.causes)]
        lines += [f"  suggestion: {row.suggestion}"] if row.suggestion else []
    if eager is not None:
        lines.append(
            f"eager ops: {compiles_text(eager.compiles)} of {len(eager.functions)} jax functions: {eager.summary()}"
        )
        lines.append(f"  suggestion: {eager.functions[0].suggestion}")
    return "\n".join(lines)
