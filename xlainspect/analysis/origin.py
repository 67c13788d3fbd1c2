"""Whose function a compiled module is: the user's own `jax.jit`, or jax's eager dispatch of one of its
own functions, and where in the user's source it lives (file:line from the module's stack frames).

Eager jax (`jnp.add(x, y)`, `jax.random.normal(key, shape)` outside any jit) compiles the primitive
(`dispatch.apply_primitive` jits a function named after it: `jit_add`, `jit_stage`) or the jax.numpy /
jax.nn / jax.random function (they are `jax.jit` functions themselves: `jit__reduce_sum`,
`jit__truncated_normal`). jax writes only *user* frames into the module's stack frames: frames in
jax's own package (and paths a library registered with `source_info_util.register_exclusion`, as flax
does) are left out. So a module traced from a user's function holds frames inside that function (its
qualified name ends with the function's name), while an eager module's every op carries one stack: the
line that called the jax function. The module's name alone decides nothing: a user's function may be
called `matmul`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xlainspect.dump.module import DumpModule, SkippedFile
from xlainspect.errors import HloParseError, XlaInspectError
from xlainspect.hlo.attributes import op_name_scopes, sequence_element
from xlainspect.hlo.fastpath import entry_opcodes, op_names, stack_frame_ids, stack_frames
from xlainspect.hlo.model import StackFrame

_SANITIZE = re.compile(r"[^\w.-]")


@dataclass(slots=True)
class Origin:
    """What one compile is: `eager` (jax's dispatch of one of its own functions) and where the user
    wrote it: for a user function the first line of it that was traced, for an eager op the line that
    called it (`file:line`; None when the dump has no stack frames)."""

    eager: bool
    source: str | None = None


def module_origin(module: DumpModule, skipped: list[SkippedFile]) -> Origin:
    """The origin of one compile, read from the program jax gave XLA (before_optimizations, else the
    compiled module). An unreadable file counts as a user function (it is never hidden as eager) and
    is added to `skipped`."""
    return module_origins([module], skipped)[0]


def module_origins(modules: list[DumpModule], skipped: list[SkippedFile]) -> list[Origin]:
    """`module_origin` of each module; a text met before is not classified again (an eager op's
    hundreds of compiles repeat a few programs, and reading one costs less than classifying it)."""
    known: dict[tuple[str, str], Origin] = {}
    origins: list[Origin] = []
    for module in modules:
        name = module.name or ""
        text = _program_text(module, skipped) if name.startswith("jit_") else None
        if text is None:
            origins.append(Origin(False))
            continue
        if (name, text) not in known:
            known[name, text] = origin_of_text(name, text)
        origins.append(known[name, text])
    return origins


def _program_text(module: DumpModule, skipped: list[SkippedFile]) -> str | None:
    """The text of the program jax gave XLA (before_optimizations, else the compiled module); None when
    there is none, or it cannot be read (then added to `skipped`)."""
    dump_file = module.program_file()
    if dump_file is None:
        return None
    try:
        return module.text(dump_file)
    except XlaInspectError as error:
        SkippedFile.of(dump_file.path, error).add_to(skipped)
        return None


def origin_of_text(name: str, text: str) -> Origin:
    """`module_origin` of an HLO text of module `name`."""
    frames = _frames(text)
    own = [f for f in frames.values() if _jit_name(f.function) == name]
    if own:
        first = min(own, key=lambda f: (f.file != own[0].file, f.line))
        return Origin(False, f"{first.file}:{first.line}")
    innermost = _innermost_frames(text)
    if frames and len(innermost) == 1:  # every op traced from one user line: the call of a jax function
        return Origin(True, _call_site(frames, innermost.pop()))
    if not frames:
        return Origin(_wraps_one_primitive(name, text))
    return Origin(False)


def _call_site(frames: dict[int, StackFrame], frame_id: int) -> str | None:
    """`file:line` of the eager call: the innermost frame outside installed packages (a flax or keras
    initializer calls jax for the user's line that built the layer), else the innermost one. XLA prints
    a frame's parent as its id + 1 (0: none; the outermost frame names itself)."""
    chain: list[StackFrame] = []
    seen: set[int] = set()
    while frame_id in frames and frame_id not in seen:
        seen.add(frame_id)
        chain.append(frames[frame_id])
        frame_id = frames[frame_id].parent - 1
    if not chain:
        return None
    frame = next((f for f in chain if not _INSTALLED.search(f.file)), chain[0])
    return f"{frame.file}:{frame.line}"


_INSTALLED = re.compile(r"[/\\](?:site|dist)-packages[/\\]")


def _jit_name(qualified: str) -> str:
    """The HloModule name jax gives a jit of the function with this qualified name (`jit__lambda` for
    `f.<locals>.<lambda>`): `jit_` and the function's `__name__`, sanitized as jax's lowering does."""
    return _SANITIZE.sub("_", "jit_" + qualified.rsplit(".", 1)[-1]).rstrip("_")


def _frames(text: str) -> dict[int, StackFrame]:
    """The module's stack frames (jax 0.4.36+); empty when it has none, or tables that do not parse (a
    module's origin is then told without them, as for older jax)."""
    try:
        return stack_frames(text)
    except HloParseError:
        return {}


def _innermost_frames(text: str) -> set[int]:
    """The stack frames ops point at; the scan stops at the second one (then the module is no call of
    one jax function, and a big module is not read to its end)."""
    seen: set[int] = set()
    for frame_id in stack_frame_ids(text):
        seen.add(frame_id)
        if len(seen) > 1:
            break
    return seen


def _wraps_one_primitive(name: str, text: str) -> bool:
    """Without stack frames (older jax, metadata disabled, or a program XLA optimized them away from):
    the module is jax's dispatch of one primitive. jax's rule (`dispatch.xla_primitive_callable`, jax
    0.10.2): `apply_primitive` jits `def prim_fun(*args): return prim.bind(*args, **params)` renamed
    to the primitive, so the module is `jit_<prim>`, its parameters are `args[0]`, `args[1]`, ... and
    every op it traced is the primitive's (`jit(sin)/sin`; older jax `jit(sin)/jit(main)/sin`; the
    jit's own sharding annotations `jit(sin)`). What XLA adds when it compiles carries no op_name of
    another function (copy insertion's `copy` has none, a reshape made a `bitcast` keeps its operand's
    `args[0]`): a persistent-cache hit dumps only that compiled program, and a convert to the dtype
    it has, or `jit_stage`, is then `args[0]` and a copy, no primitive op left.

    A program that computes nothing (its entry returns its parameters, XLA's copies aside) is eager
    whatever its parameters are named: jax writes stack frames on ops (`mlir.py`, each equation's
    source_info), so such a program has none to say whose it is, and jax's own jitted functions compile
    it where they have nothing to do: `jnp.real` of a real array returns `lax.asarray(val)`, its input
    (`@jit def real(val)`, jax/_src/numpy/ufuncs.py), a module `jit_real` with the parameter `val`."""
    entry = entry_opcodes(text)
    if entry is not None and set(entry) <= _NOTHING_COMPUTED:
        return True
    primitive = name.removeprefix("jit_")
    names = set(op_names(text))
    return bool(names) and all(_traced_by(primitive, n) for n in names if not _primitive_argument(n))


_NOTHING_COMPUTED = frozenset({"parameter", "tuple", "copy", "bitcast"})
"""A program's entry opcodes when it returns its parameters: XLA copies an output it may not alias and
makes a reshape that moves no byte a bitcast."""


def _primitive_argument(op_name: str) -> bool:
    """Whether an op_name is the one jax gives a parameter of `prim_fun(*args)`: `args[3]`, a path in its `*args`."""
    element = sequence_element(op_name)
    return element is not None and element[0] == "args"


def _traced_by(primitive: str, op_name: str) -> bool:
    """An op the primitive's jit traced: `jit(sin)/sin`, `jit(sin)/jit(main)/sin`, or `jit(sin)`."""
    scope, scopes = f"jit({primitive})", op_name_scopes(op_name)
    return op_name == scope or (bool(scopes) and scopes[0] == scope and scopes[-1] == primitive)
