"""Why a function was compiled more than once: the variants of one HloModule name, diffed.

Reads the least it can: `HloModule` header lines (entry_computation_layout, input_output_alias)
for every function compiled more than once, debug_options files, the programs of the distinct
signatures (to see whether a Python branch picked another program), and HLO bodies where the
signatures are the same (a static argument, a captured constant, a re-created function object).

Each cause has its detector (sqlglot's optimizer rules are the model): `DETECTORS` compare the first
compiles of the distinct signatures, each taking the causes found so far and returning them with its
own (some refine earlier ones: per-device shapes become a sharding cause, `#i` the argument's name);
`flags` compares every compile and `bodies` the compiles of one signature. The gate is in `gate`; the
words for causes and advice are in `xlainspect.report.causes`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from xlainspect.analysis.origin import Origin, module_origin, module_origins
from xlainspect.analysis.recompiles import branch, sharding, signature, unused
from xlainspect.analysis.recompiles.body import bodies
from xlainspect.analysis.recompiles.explained import explanations, logged_causes
from xlainspect.analysis.recompiles.flags import flags
from xlainspect.analysis.recompiles.gate import (
    NEW_FUNCTION_BUDGET,
    Budget,
    Violation,
    baseline_counts,
    budget_violations,
    check_budget_names,
)
from xlainspect.analysis.recompiles.model import Cause, Compiles, FunctionCompiles, new_values
from xlainspect.analysis.recompiles.signature import name_parameters, signature_causes
from xlainspect.dump.directory import Dump
from xlainspect.dump.jaxlog import LogCompile
from xlainspect.dump.module import DumpModule, SkippedFile, scoped_reads
from xlainspect.errors import AnalysisBug, XlaInspectError

__all__ = [
    "NEW_FUNCTION_BUDGET",
    "Budget",
    "Cause",
    "FunctionCompiles",
    "Recompiles",
    "Violation",
    "baseline_counts",
    "budget_violations",
    "check_budget_names",
    "count_recompiles",
    "name_parameters",
    "signature_causes",
]

Detector = Callable[[Compiles, list[Cause]], list[Cause]]

DETECTORS: tuple[Detector, ...] = (
    signature.parameters,
    unused.dropped_arguments,
    sharding.per_device_shapes,
    signature.results,
    signature.op_names,
    branch.branches,
    sharding.shardings,
)
"""The detectors between distinct signatures, in the order they run."""


@dataclass(slots=True)
class Recompiles:
    """count-recompiles' answer: per function, in first-compile order, its compiles and their causes;
    and the files that could not be read (named, their compiles counted but not explained)."""

    functions: list[FunctionCompiles]
    skipped: list[SkippedFile] = field(default_factory=list[SkippedFile])


def count_recompiles(
    dump: Dump, advance: Callable[[int], None] | None = None, logged: Mapping[DumpModule, LogCompile] | None = None
) -> Recompiles:
    """Per function, in first-compile order: the number of compiles and, where above one, why; in a
    dump of several hosts, those of one usual host (the hosts of one job compile alike; dumps of
    several runs, `load_dump([a, b])`, are compared instead). The dump is not changed: the files that
    could not be read are returned, and what its modules read and parsed while a function was explained
    is dropped after it (`scoped_reads`: memory stays that of one function's compiles). `advance(n)` is
    called with each function's module count (a progress bar's). `logged`: the run's jax log paired
    with the modules (`compile_times`), for the causes only it knows."""
    found = Recompiles([])
    for name, compiles in dump.functions().items():
        if advance is not None:
            advance(len(compiles))
        hosts = [compiles] if dump.runs else _by_host(compiles)
        try:
            with scoped_reads(compiles):
                found.functions += _function_rows(name, hosts, found.skipped, logged or {})
        except XlaInspectError:
            raise  # bad input, not a bug: the command reports it (exit 2); a file that cannot be read is skipped
        except Exception as error:  # noqa: BLE001 (not bad input: a bug, named with a file it was reading)
            raise AnalysisBug(_where(compiles), error) from error
    return found


def _where(compiles: list[DumpModule]) -> Path | str:
    """The HLO file of a function's first compile that has one, else the module's label."""
    return next((f.path for m in compiles if (f := m.hlo_file()) is not None), compiles[0].label)


def _function_rows(
    name: str, hosts: list[list[DumpModule]], skipped: list[SkippedFile], logged: Mapping[DumpModule, LogCompile]
) -> list[FunctionCompiles]:
    """The rows of one function (the user's compiles, then jax's eager ones of the same name), from the
    compiles of its usual host; unreadable files are recorded in `skipped`."""
    modules = _usual(hosts)
    readable = _readable(modules, skipped)
    unreadable = [m for m in modules if m not in readable]
    parts = _by_origin(readable, skipped) or [([], Origin(eager=False, source=None))]
    rows: list[FunctionCompiles] = []
    for number, (part, origin) in enumerate(parts):
        every = Compiles(part, {m: number for number, m in enumerate(part, 1)}, origin.eager, skipped)
        causes = logged_causes(every, _explain(every), logged) if len(part) > 1 else ()
        counted = part + unreadable if number == 0 else part  # the first part: the user's, if any
        rows.append(
            FunctionCompiles(
                name,
                len(counted),
                tuple(m.module_id for m in counted),
                origin.eager,
                causes,
                origin.source,
                len(counted) - len(part),
                len(hosts),
                explanations(every, logged),
            )
        )
    return rows


def _by_origin(modules: list[DumpModule], skipped: list[SkippedFile]) -> list[tuple[list[DumpModule], Origin]]:
    """The compiles of one name, as the user's and jax's eager ones (see `origin`), the user's first.
    A name whose first compile is the user's is the user's throughout (its compiles are not read again:
    a storm of 1,000 big modules); one whose first is eager has every compile read (eager modules are
    small), since a user's `def matmul` and an eager `x @ w` share the name jit_matmul."""
    if not modules:
        return []
    first = module_origin(modules[0], skipped)
    if not first.eager or len(modules) == 1:
        return [(modules, first)]
    origins = [first, *module_origins(modules[1:], skipped)]
    user = [(m, o) for m, o in zip(modules, origins) if not o.eager]
    if not user:
        return [(modules, first)]
    eager = [m for m, o in zip(modules, origins) if o.eager]
    return [([m for m, _ in user], user[0][1]), (eager, first)]


def _by_host(modules: list[DumpModule]) -> list[list[DumpModule]]:
    """The compiles of each host, in host order (a dump's modules are sorted by host first)."""
    hosts: dict[str, list[DumpModule]] = {}
    for module in modules:
        hosts.setdefault(module.host, []).append(module)
    return list(hosts.values())


def _usual(hosts: list[list[DumpModule]]) -> list[DumpModule]:
    """The compiles of the first host whose compile count is the most common one: a 64-host dump is
    explained from one host's files, not from 64 copies of them."""
    usual = Counter(len(compiles) for compiles in hosts).most_common(1)[0][0]
    return next(compiles for compiles in hosts if len(compiles) == usual)


def _readable(modules: list[DumpModule], skipped: list[SkippedFile]) -> list[DumpModule]:
    """The compiles whose HLO file has a readable header and is complete; the rest go to `skipped`."""
    readable: list[DumpModule] = []
    for module in modules:
        try:
            module.header()
        except XlaInspectError as error:
            skipped.append(SkippedFile.of(module.hlo_path(), error))
        else:
            readable.append(module)
    return readable


def _explain(every: Compiles) -> tuple[Cause, ...]:
    """The causes of one function's compiles: between distinct signatures (`DETECTORS`), then the
    flags of every compile, then within each signature compiled again (`bodies`)."""
    modules = every.modules
    signatures = {m: signature.signature(m.header()) for m in modules}  # headers cached by _readable
    groups: dict[signature.Signature, list[DumpModule]] = {}
    for module in modules:
        groups.setdefault(signatures[module], []).append(module)
    distinct = [group[0] for group in groups.values()]  # a storm of 1,000 compiles has a few signatures
    causes = _between_signatures(every.of(distinct))
    for cause in (found := flags(every)):  # one value per compile
        cause.compiles = new_values(cause.values, every.numbers())
    causes += found
    for group in groups.values():
        if len(group) > 1:
            causes += bodies(every.of(group))
    return tuple(causes)


def _between_signatures(distinct: Compiles) -> list[Cause]:
    """The causes between the first compiles of distinct signatures, each with the compiles it explains.
    Where the number of parameters differs (another pytree: a static flag that adds an argument), the
    shapes of the signatures with one count are compared among themselves too (the image sizes of a
    step compiled with and without its dropout key); their dtypes are already in the all-parameters
    cause."""
    causes = _detected(distinct)
    by_count: dict[int, list[DumpModule]] = {}
    for module in distinct.modules:
        by_count.setdefault(len(module.header().parameter_shapes), []).append(module)
    if len(by_count) > 1:
        seen: dict[tuple[object, ...], Cause] = {}  # a shape varying alike with and without the extra argument
        for group in (g for g in by_count.values() if len(g) > 1):
            for cause in (c for c in _detected(distinct.of(group)) if c.kind == "shape"):
                key = (cause.parameter, cause.index, cause.values, cause.dims)
                if key in seen:
                    seen[key].compiles = tuple(sorted(seen[key].compiles + cause.compiles))
                else:
                    causes.append(seen.setdefault(key, cause))
    return causes


def _detected(distinct: Compiles) -> list[Cause]:
    """`DETECTORS` run over signatures compared all at once (one value per signature), each cause with
    the compiles whose value is new."""
    causes: list[Cause] = []
    for detect in DETECTORS:
        causes = detect(distinct, causes)
    for cause in causes:
        cause.compiles = new_values(cause.values, distinct.numbers())
    return causes
