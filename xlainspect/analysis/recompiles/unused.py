"""Causes where the number of parameters differs because jax left out an argument the program does not
use: a static argument or Python value (a `train` flag) changed what the function uses.

jax's rule (jax 0.10.2): `jax.jit(..., keep_unused=False)` is the default (`_src/pjit.py`), and
`pxla.lower_sharding_computation` runs `_dce_jaxpr`, which prunes the jaxpr's unused inputs
(`prune_unused_inputs`) before lowering: an argument that one variant reads and another does not is an
entry parameter of the first only. The arguments jax passed are the same in both (the same pytree), the
shapes may be too; the program is another. From the HLO alone: the parameters of every variant are,
by their `op_name` (the pytree path jax records there) and element type, the parameters of the widest
variant in the same order, less some. A leaf that is a sequence's next element (`xs[3]` where `xs[2]`
is kept) is a list that grew, a pytree change: not this cause.
"""

from __future__ import annotations

from xlainspect.analysis.recompiles.model import Cause, Compiles
from xlainspect.errors import XlaInspectError
from xlainspect.hlo.attributes import sequence_element

Leaves = list[tuple[str, str]]
"""(op_name, element type) of each entry parameter, in parameter order."""


def dropped_arguments(compiles: Compiles, causes: list[Cause]) -> list[Cause]:
    """Detector: a parameter count cause (and the element types of all parameters beside it) replaced by
    an `unused` cause where the variants' parameters pair one-for-one with a subset of the widest
    variant's (see the module docstring)."""
    if not any(c.reason == "parameter_count" for c in causes):
        return causes
    leaves: list[Leaves] = []
    for module in compiles.modules:
        try:
            parameters = module.signature().entry.parameters
        except XlaInspectError as error:
            compiles.skip(module, error)
            return causes
        leaves.append([(p.op_name or "", p.shape.dtype if p.shape else "") for p in parameters])
    dropped = _dropped(leaves)
    if dropped is None:
        return causes
    kept = [c for c in causes if c.reason != "parameter_count" and not (c.kind == "dtype" and c.parameter is None)]
    names = ", ".join(dict.fromkeys(name for names in dropped for name in names))
    return [*kept, Cause("unused", names, None, dropped)]


def _dropped(variants: list[Leaves]) -> tuple[tuple[str, ...], ...] | None:
    """Per variant, the op_names of the widest variant's parameters it lacks; None where a variant's
    parameters are not the widest's less some (unnamed, renamed, reordered, another element type) or
    a lacking one is a sequence's next element."""
    widest = max(variants, key=len)
    names = [name for name, _ in widest]
    if not all(names) or len(set(names)) < len(names):
        return None
    found: list[tuple[str, ...]] = []
    for variant in variants:
        if not _is_subsequence(variant, widest):
            return None
        present = {name for name, _ in variant}
        lacking = tuple(name for name in names if name not in present)
        if any(_next_element(name, present) for name in lacking):
            return None
        found.append(lacking)
    return tuple(found)


def _is_subsequence(variant: Leaves, widest: Leaves) -> bool:
    """Every (op_name, element type) of `variant` is in `widest`, in the same order (jax flattens the
    arguments in one order and prunes without reordering)."""
    remaining = iter(widest)
    return all(leaf in remaining for leaf in variant)


def _next_element(name: str, present: set[str]) -> bool:
    """`xs[3]` lacking where `xs[2]` is present: the sequence is shorter, not an argument unused."""
    element = sequence_element(name)
    return element is not None and f"{element[0]}[{element[1] - 1}]" in present
