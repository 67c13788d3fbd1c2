"""Compile seconds of a dump's modules, from the jax log of the same run.

A dump names no times and the log names no module ids, so they are paired by order: per function
(HloModule name), the log's compiles against the dump's modules in increasing module id. A
persistent-cache hit compiles nothing, yet XLA dumps the executable jax loaded (on CPU, jax 0.10.2:
`module_N.jit_f.after_optimizations.txt`, no platform prefix, no before_optimizations), so hits pair
too; where the dump holds only the compiles XLA ran, those are paired. Where the counts differ still
(a log of another run, a dump made with a module filter or over the module cap) the first ones are
paired and the difference is reported in `unpaired`.

A *recompile* is, as in count-recompiles, every compile of a function after its first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from xlainspect.dump.directory import Dump
from xlainspect.dump.jaxlog import JaxLog, LogCompile
from xlainspect.dump.module import DumpModule


@dataclass(slots=True)
class FunctionTimes:
    """The compile seconds of one function's dump modules, in compile order."""

    name: str
    seconds: tuple[float | None, ...]
    """Per dump module; None where the log has no compile to pair with it."""
    cache: tuple[str | None, ...]
    """Per dump module: the persistent-cache outcome (LogCompile.cache), "hit" for an executable jax loaded."""
    total_seconds: float | None
    """The seconds of the compiles the log has; None where it has none of this function (unknown, not 0)."""
    recompile_seconds: float | None
    """The seconds of every compile after the first that the log has; None where it has none of them."""


@dataclass(frozen=True, slots=True)
class Unpaired:
    """A function whose log and dump compiles do not pair one to one: how many each holds (the first
    `min(dumped, logged)` are paired in order)."""

    function: str
    dumped: int
    logged: int


@dataclass
class CompileTimes:
    """Compile seconds from a jax log, per function and per dump module."""

    functions: dict[str, FunctionTimes]
    by_module: dict[DumpModule, LogCompile] = field(default_factory=dict[DumpModule, LogCompile])
    unpaired: list[Unpaired] = field(default_factory=list[Unpaired])
    """The functions whose log and dump compiles do not pair one to one."""
    log: Path | None = None
    """The log read (where it is named)."""

    @property
    def total_seconds(self) -> float | None:
        """The seconds of every paired compile; None where the log pairs with none (unknown, not 0)."""
        return _known_sum(tuple(s for f in self.functions.values() for s in f.seconds))

    @property
    def recompile_seconds(self) -> float | None:
        """The seconds of every paired compile after a function's first; None where there are such
        compiles and the log pairs with none of them."""
        return _known_sum(tuple(s for f in self.functions.values() for s in f.seconds[1:]))


def compile_times(dump: Dump, log: JaxLog) -> CompileTimes:
    """Pair the log's compiles with the dump's modules per function, in order, and sum their seconds."""
    logged = log.by_module()
    result = CompileTimes({}, log=log.path)
    for name, modules in dump.functions().items():
        compiles = _paired_compiles(logged.pop(name, []), len(modules))
        result.by_module.update(zip(modules, compiles))
        if len(compiles) != len(modules):
            result.unpaired.append(Unpaired(name, len(modules), len(compiles)))
        missing = (None,) * (len(modules) - len(compiles))
        seconds = tuple(c.seconds for c in compiles[: len(modules)]) + missing
        cache = tuple(c.cache for c in compiles[: len(modules)]) + missing
        result.functions[name] = FunctionTimes(name, seconds, cache, _known_sum(seconds), _known_sum(seconds[1:]))
    for name, compiles in logged.items():
        result.unpaired.append(Unpaired(name, 0, len(compiles)))
    return result


def _known_sum(seconds: tuple[float | None, ...]) -> float | None:
    """The sum of the seconds the log has; None where there are compiles and the log has none of them (a
    time unknown is never counted as 0), 0.0 where there are none."""
    known = [s for s in seconds if s is not None]
    return sum(known, 0.0) if known or not seconds else None


def _paired_compiles(compiles: list[LogCompile], dumped: int) -> list[LogCompile]:
    """All of a function's logged compiles, or the ones XLA ran when only those match the dump's count."""
    compiled = [c for c in compiles if c.compiled]
    return compiled if len(compiles) != dumped and len(compiled) == dumped else compiles
