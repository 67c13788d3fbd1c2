"""Causes the HLO cannot show, from jax's log of the same run (`xlainspect capture` records it): a weak
type, a pytree jax prunes back to the same program (an unused key, a keyword call), a static argument's
value, a tracing context (a config or context manager), a new function object each call.

jax keys its tracing cache on the function object, the argument pytree (static arguments are its
metadata) and each leaf's type, weak type included, and the tracing context (`trace_to_jaxpr`'s
`weakref_lru_cache`, jax/_src/interpreters/partial_eval.py); `explain` there names the difference from
the closest earlier key. A program equal to an earlier one (`identical`) is what all of those compile;
the log says which. jax's own words stay beside ours (`FunctionCompiles.explanations`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from xlainspect.analysis.recompiles.model import Cause, Compiles
from xlainspect.dump.jaxlog import Argument, Difference, Explanation, LogCompile
from xlainspect.dump.module import DumpModule
from xlainspect.errors import XlaInspectError

_HLO_BLIND = frozenset({"identical", "weak_type"})
"""What the HLO says of a compile whose program an earlier one had: nothing it can tell apart."""
_STATIC = re.compile(r"Static\(val=(?P<value>.*)\)$")
_KEYS = re.compile(r"symmetric difference of key sets: \{(?P<keys>.*)\}")
_CHILDREN = re.compile(r"with (?P<n>\d+) child")
_KEY = re.compile(r"'((?:[^'\\]|\\.)*)'")


def explanations(compiles: Compiles, logged: Mapping[DumpModule, LogCompile]) -> tuple[tuple[int, Explanation], ...]:
    """The explanation jax gave of each compile after the first, by compile number, where the log has one."""
    found = ((compiles.position[m], logged[m].explanation) for m in compiles.modules[1:] if m in logged)
    return tuple((number, e) for number, e in found if e is not None)


def logged_causes(
    compiles: Compiles, causes: tuple[Cause, ...], logged: Mapping[DumpModule, LogCompile]
) -> tuple[Cause, ...]:
    """`causes` with the compiles the HLO explains only as a repeated program explained by the log instead,
    where it can; the others stay as they were."""
    blind = {n for c in causes if c.kind in _HLO_BLIND and c.parameter is None for n in c.compiles}
    known: list[Cause] = []
    for module in compiles.modules[1:]:
        number = compiles.position[module]
        if number in blind and module in logged:
            found = _causes(compiles, module, logged)
            for cause in found:
                cause.compiles = (number,)
            known += found
    if not known:
        return causes
    explained = {n for c in known for n in c.compiles}
    kept = [_without(c, explained) if c.kind in _HLO_BLIND else c for c in causes]
    return tuple(sorted([c for c in kept if c.compiles] + _merged(known), key=lambda c: c.compiles))


def _without(cause: Cause, explained: set[int]) -> Cause:
    """A repeated-program cause less the compiles the log explained."""
    cause.compiles = tuple(n for n in cause.compiles if n not in explained)
    return cause


def _merged(causes: list[Cause]) -> list[Cause]:
    """Causes saying the same of several compiles, as one naming them all."""
    merged: dict[tuple[object, ...], Cause] = {}
    for cause in causes:
        key = (cause.kind, cause.parameter, cause.values, cause.reason)
        if key in merged:
            merged[key].compiles += cause.compiles
        else:
            merged[key] = cause
    return list(merged.values())


def _causes(compiles: Compiles, module: DumpModule, logged: Mapping[DumpModule, LogCompile]) -> list[Cause]:
    """What the log says changed for this compile: its explanation, else its argument types beside the
    earlier compiles' (a weak type)."""
    said = logged[module].explanation
    if said is not None and said.kind == "new_function":
        return [Cause("new_function", values=(said.defined_at,), reason="same_line" if said.same_line else None)]
    if said is not None and said.kind == "context":
        return [Cause("context", d.path, values=(d.before, d.now)) for d in said.differences]
    if said is not None and said.kind == "pytree":
        return [_pytree_cause(d) for d in said.differences if not _keyword_length(d)]
    return _weak_types(compiles, module, logged)


def _weak_types(compiles: Compiles, module: DumpModule, logged: Mapping[DumpModule, LogCompile]) -> list[Cause]:
    """The arguments whose weak type alone differs from the closest earlier compile's, named by the HLO
    parameter at the same place (jax's types are the kept arguments', in parameter order)."""
    now = logged[module].arguments
    earlier = [
        a
        for m in compiles.modules
        if compiles.position[m] < compiles.position[module] and m in logged
        if (a := logged[m].arguments) is not None and len(a) == len(now or ())
    ]
    if now is None or not earlier:
        return []
    before = min(earlier, key=lambda a: sum(x != y for x, y in zip(a, now)))
    changed = [i for i, (x, y) in enumerate(zip(before, now)) if x != y]
    if not changed or any(before[i].type != now[i].type for i in changed):
        return []
    names = _parameter_names(compiles, module)
    return [Cause("weak_type", names.get(i) or f"#{i}", i, (_typed(before[i]), _typed(now[i]))) for i in changed]


def _typed(argument: Argument) -> str:
    """`float32[]` or `float32[] weak_type`."""
    return argument.type + (" weak_type" if argument.weak_type else "")


def _parameter_names(compiles: Compiles, module: DumpModule) -> dict[int, str]:
    """The entry parameters' op_names (the argument paths jax records) by number; empty where unreadable."""
    try:
        parameters = module.signature().entry.parameters
        return {p.parameter_number: p.op_name for p in parameters if p.op_name and p.parameter_number is not None}
    except XlaInspectError as error:
        compiles.skip(module, error)
        return {}


def _keyword_length(difference: Difference) -> bool:
    """The positional arguments' tuple changing length, which the keyword's own difference says better."""
    return difference.path == "[0]" and "tuple of length" in difference.now


def _pytree_cause(difference: Difference) -> Cause:
    """One pytree difference: a static argument's value, keys added or removed (a keyword where a
    positional argument was, when at the keywords' dict `[1]`), else jax's two descriptions."""
    path = argument_path(difference.path)
    static_now, static_before = _STATIC.search(difference.now), _STATIC.search(difference.before)
    if static_now and static_before:
        return Cause("static_argument", path, values=(static_before["value"], static_now["value"]))
    keys = _KEYS.search(difference.why)
    grew = _children(difference.now) > _children(difference.before)
    if keys and difference.path == "[1]":
        names = tuple(_KEY.findall(keys["keys"]))
        return Cause(
            "pytree",
            ", ".join(names),
            values=("positional", "keyword") if grew else ("keyword", "positional"),
            reason="keyword",
        )
    if keys:
        return Cause(
            "pytree", path, values=(tuple(_KEY.findall(keys["keys"])), "added" if grew else "removed"), reason="keys"
        )
    return Cause("pytree", path, values=(difference.before, difference.now))


def _children(description: str) -> int:
    found = _CHILDREN.search(description)
    return int(found["n"]) if found else 0


def argument_path(path: str) -> str:
    """The input path jax gives over `(args, kwargs)` as the argument it is: `[0][1]['hi']` -> `args[1]['hi']`,
    `[1]['y']` -> `y`."""
    if path.startswith("[1]['") and (end := path.find("']")) > 0:
        return path[5:end] + path[end + 2 :]
    return "args" + path.removeprefix("[0]") if path.startswith("[0]") else path
