"""Compile seconds of a dump's modules, from the jax log of the same run.

A dump names no times and the log names no module ids, so they are paired by order: per function
(HloModule name), the log's compiles that XLA ran (a persistent-cache hit compiles nothing and dumps
no HLO) against the dump's modules in increasing module id. Where the counts differ (a log of another
run, a dump made with a module filter or over the module cap) the first ones are paired and the
difference is reported in `unpaired`.

A *recompile* is, as in count-recompiles, every compile of a function after its first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xlainspect.dump import Dump, DumpModule
from xlainspect.jaxlog import JaxLog, LogCompile


@dataclass(frozen=True, slots=True)
class FunctionTimes:
    """The compile seconds of one function's dump modules, in compile order."""

    name: str
    seconds: tuple[float | None, ...]
    """Per dump module; None where the log has no compile to pair with it."""
    total_seconds: float
    recompile_seconds: float
    """The seconds of every compile after the first."""


@dataclass
class CompileTimes:
    functions: dict[str, FunctionTimes]
    by_module: dict[DumpModule, LogCompile] = field(default_factory=dict)
    unpaired: list[str] = field(default_factory=list)
    """One sentence per function whose log and dump compiles do not pair one to one."""

    @property
    def recompile_seconds(self) -> float:
        return sum(f.recompile_seconds for f in self.functions.values())

    def seconds(self, module: DumpModule) -> float | None:
        paired = self.by_module.get(module)
        return None if paired is None else paired.seconds


def compile_times(dump: Dump, log: JaxLog) -> CompileTimes:
    """Pair the log's compiles with the dump's modules per function, in order, and sum their seconds."""
    logged = {name: [c for c in compiles if c.compiled] for name, compiles in log.by_module().items()}
    result = CompileTimes({})
    for name, modules in dump.functions().items():
        compiles = logged.pop(name, [])
        result.by_module.update(zip(modules, compiles))
        if len(compiles) != len(modules):
            result.unpaired.append(f"{name}: {len(modules)} compile(s) in the dump, {len(compiles)} in the log "
                                   f"{log.path}; the first {min(len(modules), len(compiles))} paired in order")
        seconds = tuple(c.seconds for c in compiles[: len(modules)]) + (None,) * (len(modules) - len(compiles))
        known = [s or 0.0 for s in seconds]
        result.functions[name] = FunctionTimes(name, seconds, sum(known, 0.0), sum(known[1:], 0.0))
    for name, compiles in logged.items():
        if compiles:
            result.unpaired.append(f"{name}: {len(compiles)} compile(s) in the log {log.path}, none in the dump")
    return result
