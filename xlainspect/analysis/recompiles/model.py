"""What count-recompiles finds (`Cause`, `FunctionCompiles`) and what its detectors read (`Compiles`).

Data only: the words for a cause, the advice and the gate's messages are in `xlainspect.report.causes`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from xlainspect.dump.jaxlog import Explanation
from xlainspect.dump.module import DumpModule, SkippedFile
from xlainspect.dump.names import DumpFile
from xlainspect.errors import DumpError, XlaInspectError
from xlainspect.hlo.model import Module

Kind = Literal[
    "shape",
    "dtype",
    "layout",
    "sharding",
    "out_sharding",
    "donation",
    "result",
    "pytree",
    "unused",
    "identical",
    "weak_type",
    "branch",
    "body",
    "flags",
    "static_argument",
    "context",
    "new_function",
]
"""What differs between compiles: a part of the signature (shape ... result), the arguments' pytree paths,
the arguments the program uses (unused: jax leaves the others out), nothing (identical, weak_type), the
ops a program runs (branch), its instructions (body), the flags; and from jax's log where the programs are
equal: a static argument's value, the tracing context (a config or context manager), a new function
object (weak_type and pytree too, with the parameter they are of)."""

Reason = Literal[
    "parameter_count",
    "rank",
    "prng_key",
    "per_device",
    "memory_space",
    "partial_donation",
    "static_argument",
    "branch_on_shape",
    "branch_on_static",
    "baked_in",
    "unrolled",
    "instructions",
    "keyword",
    "keys",
    "same_line",
]
"""Why, where a kind of cause has several: the number of parameters, the rank or a PRNG key's size
changed (shape, the per-device sizes of a global shape beside it: `per_device`); another memory space
(layout); some compiles donate (donation); a static argument decides the result (result); a Python
branch on a shape or on a static argument (branch); a Python value baked in, a loop unrolled, other
instructions (body); from jax's log, an argument passed by keyword where it was positional or the
other way, dict keys added or removed (pytree), a function defined anew on the line of the last one
(new_function)."""


@dataclass(slots=True)
class Cause:
    """One difference between the compiles of a function. `values` has one entry per distinct signature
    in compile order (for body causes: per distinct program of one signature; for identical: the module
    ids of the compiles of one program)."""

    kind: Kind
    parameter: str | None = None
    """The entry parameter, by its `op_name` metadata when jax recorded one, else `#<index>`; None for a
    cause of no one parameter (the number of parameters, a dtype cause of every parameter at once, the
    arguments' pytree paths, the output's sharding: `report.causes.WHOLE` words what it is of)."""
    index: int | None = None
    values: tuple[Any, ...] = ()
    """Per kind: sizes (or tuples of sizes, or dims), dtypes, layouts, results as text; shardings as a
    PartitionSpec `P(...)` (`P()`: replicated) or XLA's text, None where unspecified; donated or not;
    per pytree leaf the changed paths; per signature the arguments jax left out (unused); module ids
    (identical, weak_type); per program the (opcode, count) pairs only it has (branch; a loop unrolled:
    those of every changed op); the constants (baked_in) or the differing instructions (instructions);
    the (option, value) pairs of the differing debug options, value None where left at its default
    (flags)."""
    dims: tuple[int, ...] = ()
    """For shape causes: the dimensions (0-based) whose size varies."""
    reason: Reason | None = None
    compiles: tuple[int, ...] = ()
    """The compiles (1-based, in the function's compile order) this cause explains: those where its value
    is new (a cache keyed on it alone would have missed). A function's causes together explain every
    compile after the first."""
    same_as: int | None = None
    """For identical and weak_type causes: the compile whose program `compiles` repeat."""
    per_device: tuple[Any, ...] = ()
    """For shape causes given in global shapes (reason per_device): the per-device values."""
    sources: tuple[str, ...] = ()
    """For branch causes: `file:line` of the first ops only one program has."""
    factor: int | None = None
    """For a loop unrolled: how many times more the changed ops run."""
    constant_types: tuple[str, ...] = ()
    """For a Python value baked in: the element types of the constants that differ (`f32`, `pred`)."""


@dataclass(slots=True)
class FunctionCompiles:
    """The compiles of one function (HloModule name) and what explains them."""

    name: str
    modules: int
    module_ids: tuple[int | None, ...]
    eager: bool
    causes: tuple[Cause, ...] = ()
    source: str | None = None
    """`file:line`: for a user function the first of its lines jax traced, for an eager op the line
    that called it (from the dump's stack frames; None without them)."""
    unreadable: int = 0
    """Compiles among `modules` whose HLO file could not be read (named in the skipped files): counted,
    since XLA wrote files for them, but not explained."""
    hosts: int = 1
    """Hosts (per-host folders of one dump) that compiled the function; `modules` and the causes are
    those of one host that compiled it as often as most hosts did (`doctor` names the others)."""
    explanations: tuple[tuple[int, Explanation], ...] = ()
    """jax's own explanation of compiles after the first, by compile number, from the run's log."""


_T = TypeVar("_T")


@dataclass(slots=True)
class Compiles:
    """What a detector reads: compiles of one function (`modules`, in compile order), each with its
    1-based number among all the function's compiles (`position`), whether they are jax's eager ops,
    and the files found unreadable so far (`skipped`: returned to the caller, the dump is not changed)."""

    modules: list[DumpModule]
    position: dict[DumpModule, int]
    eager: bool
    skipped: list[SkippedFile] = field(default_factory=list[SkippedFile])

    def of(self, modules: list[DumpModule]) -> Compiles:
        """The same function's compiles narrowed to `modules`, skips recorded in the same list."""
        return Compiles(modules, self.position, self.eager, self.skipped)

    def skip(self, module: DumpModule, error: XlaInspectError, path: Path | None = None) -> None:
        """Record the file of `module` (`path`, else its HLO file) that could not be read, once: several
        detectors may meet it."""
        SkippedFile.of(path or module.hlo_path(), error).add_to(self.skipped)

    def each(self, read: Callable[[DumpModule], _T]) -> list[_T] | None:
        """`read` of every module's program, in order; None where one meets an input error (recorded in
        `skipped` under the program's file): a detector then explains nothing rather than something from
        part of the compiles."""
        found: list[_T] = []
        for module in self.modules:
            try:
                found.append(read(module))
            except XlaInspectError as error:
                self.skip(module, error, program_path(module))
                return None
        return found

    def numbers(self) -> list[int]:
        return [self.position[m] for m in self.modules]


class Skipped(Exception):
    """A module of the group could not be read or parsed; `Compiles.skip` has recorded it."""


def new_values(values: tuple[Any, ...], numbers: list[int]) -> tuple[int, ...]:
    """The compiles (`numbers`, one per value) whose value no earlier one had."""
    seen: list[Any] = list(values[:1])
    new: list[int] = []
    for value, number in zip(values[1:], numbers[1:]):
        if value not in seen:
            seen.append(value)
            new.append(number)
    return tuple(new)


def program_stage(module: DumpModule) -> str:
    """The HLO XLA was given, when it was dumped (before_optimizations); else the compiled module."""
    return "before" if module.file("hlo", "before") else "after"


def program_path(module: DumpModule) -> Path:
    """The path of the program jax gave XLA (`DumpModule.program_file`), as a skipped file names it."""
    found = module.program_file()
    return found.path if found is not None else module.hlo_path()


def program_text(module: DumpModule) -> str:
    """The text of the program jax gave XLA (`DumpModule.program_file`), read once per module."""
    dump_file = module.program_file()
    if dump_file is None:
        raise DumpError(f"module {module.label}: no HLO text file")
    return module.text(dump_file)


def program(module: DumpModule) -> Module:
    """The program jax gave XLA, parsed (raises XlaInspectError where it does not parse)."""
    return module.module(program_stage(module))


def file_bytes(compiles: Compiles, module: DumpModule, dump_file: DumpFile | None) -> bytes | None:
    """The bytes of one of the module's files (decompressed, read once); None when absent, or unreadable
    (recorded in `compiles.skipped`)."""
    if dump_file is None:
        return None
    try:
        return module.read(dump_file)
    except DumpError as error:
        compiles.skip(module, error, dump_file.path)
        return None


def programs(compiles: Compiles) -> list[Module]:
    """The programs jax gave XLA (before_optimizations, else the compiled ones), parsed; empty when one
    does not parse (it is recorded in `compiles.skipped`)."""
    return compiles.each(program) or []
