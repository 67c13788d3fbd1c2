"""Causes in the signature jax's cache keys on, as the `HloModule` header line shows it: the entry
parameters (count, dtype, dims, layout), donation (`input_output_alias`) and the result."""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

from xlainspect.analysis.recompiles.model import Cause, Compiles
from xlainspect.dump.module import DumpModule
from xlainspect.errors import XlaInspectError
from xlainspect.hlo.model import Module
from xlainspect.hlo.shape import Shape

Signature = tuple[tuple[str, ...], str, str]


@functools.lru_cache(maxsize=4096)
def signature(header: Module) -> Signature:
    """What decides a cache hit as the header shows it: parameter shapes with layouts, the result (a
    static argument may decide it alone), and donation. Cached: identical header lines share one parsed
    header, and a storm of 1,000 compiles has a few."""
    return (
        tuple(str(s) for s in header.parameter_shapes),
        header.attributes.get("input_output_alias", ""),
        str(header.result_shape),
    )


def parameters(compiles: Compiles, causes: list[Cause]) -> list[Cause]:
    """Detector: how the entry parameters of the distinct signatures differ."""
    return causes + signature_causes([m.header() for m in compiles.modules])


def results(compiles: Compiles, causes: list[Cause]) -> list[Cause]:
    """Detector: results that differ where the parameters agree (in the program jax gave XLA, whose
    shapes are global where the compiled one is partitioned)."""
    return causes + result_causes([program_header(compiles, m) for m in compiles.modules])


def op_names(compiles: Compiles, causes: list[Cause]) -> list[Cause]:
    """Detector: `#i` replaced by the parameter's `op_name` (jax records the argument path there), when
    the entry computation parses."""
    if not causes:
        return causes
    module = compiles.modules[0]
    try:
        names = {p.parameter_number: p.op_name for p in module.signature().entry.parameters}
    except XlaInspectError as error:
        compiles.skip(module, error)
        return causes
    return name_parameters(causes, names)


def signature_causes(headers: list[Module]) -> list[Cause]:
    """How the entry parameters of header-only modules differ: every way each parameter differs, then
    donation."""
    shapes = [h.parameter_shapes for h in headers]
    if len({len(s) for s in shapes}) > 1:
        causes = [
            Cause(
                "shape",
                None,
                None,
                tuple(len(s) for s in shapes),
                reason="parameter_count",
            )
        ]
        dtypes = [",".join(dict.fromkeys(p.dtype for p in s)) for s in shapes]
        if len(set(dtypes)) > 1:  # parameters cannot be paired by index; their element types still tell
            causes.append(Cause("dtype", None, None, tuple(dtypes)))
        return causes
    causes: list[Cause] = []
    for index in range(len(shapes[0])):
        causes += _parameter_causes(index, [s[index] for s in shapes])
    if len({signature(h)[1] for h in headers}) > 1:
        causes += _donation_causes(headers)
    return causes


def _parameter_causes(index: int, shapes: list[Shape]) -> list[Cause]:
    """Every way parameter `index` differs between compiles: dtype, dims, layout (a dtype change does
    not hide a shape change of the same parameter)."""
    parameter: str = f"#{index}"
    causes: list[Cause] = []
    if len({s.dtype for s in shapes}) > 1:
        causes.append(Cause("dtype", parameter, index, tuple(s.dtype for s in shapes)))
    if len({s.dims for s in shapes}) > 1:
        causes.append(shape_cause(parameter, index, shapes))
    elif len({str(s.layout) for s in shapes}) > 1:
        values = tuple(s.dims_and_layout_text() if s.is_array else str(s) for s in shapes)
        spaces = {s.layout.memory_space if s.layout else 0 for s in shapes}
        causes.append(Cause("layout", parameter, index, values, reason="memory_space" if len(spaces) > 1 else None))
    return causes


def shape_cause(parameter: str | None, index: int, shapes: list[Shape]) -> Cause:
    """The dims of parameter `index` that vary: one value per compile (a tuple of sizes where several
    dims vary)."""
    if len({s.rank for s in shapes}) > 1:
        return Cause("shape", parameter, index, tuple(s.dims for s in shapes), reason="rank")
    varying = tuple(d for d in range(shapes[0].rank) if len({s.dims[d] for s in shapes}) > 1)
    values: tuple[Any, ...]
    if len(varying) == 1:
        values = tuple(s.dims[varying[0]] for s in shapes)
    else:
        values = tuple(tuple(s.dims[d] for d in varying) for s in shapes)
    return Cause("shape", parameter, index, values, varying, reason="prng_key" if _is_key(shapes[0]) else None)


def _is_key(shape: Shape) -> bool:
    """PRNG keys reach XLA as u32 arrays whose last dim is the key's data (2 for threefry, 4 for
    rbg): padding them to a bucket would invent keys, so they get no bucket advice."""
    return shape.dtype == "u32" and shape.rank >= 1 and shape.dims[-1] in (2, 4)


def result_causes(headers: list[Module]) -> list[Cause]:
    """Results that differ where the parameters agree: a static argument (a shape, a size, an axis)
    decides what the function returns."""
    found: dict[tuple[tuple[str, ...], str], list[Module]] = {}
    for header in headers:
        found.setdefault(signature(header)[:2], []).append(header)
    return [
        Cause("result", None, None, tuple(_without_layout(h.result_shape) for h in seen), reason="static_argument")
        for seen in found.values()
        if len({signature(h)[2] for h in seen}) > 1
    ]


def _donation_causes(headers: list[Module]) -> list[Cause]:
    donated = [{a.parameter for a in h.input_output_alias} for h in headers]
    return [
        Cause(
            "donation",
            f"#{index}",
            index,
            tuple(index in d for d in donated),
            reason="partial_donation",
        )
        for index in sorted(set[int]().union(*donated) - donated[0].intersection(*donated[1:]))
    ]


def name_parameters(causes: list[Cause], names: dict[int | None, str | None]) -> list[Cause]:
    """Causes with `#i` replaced by parameter i's `op_name` (jax records the argument path there)."""
    return [_renamed(c, names.get(c.index)) for c in causes]


def _renamed(cause: Cause, op_name: str | None) -> Cause:
    if cause.index is None or not op_name:
        return cause
    return replace(cause, parameter=op_name)


def _without_layout(shape: Shape | None) -> str:
    return shape.without_layout() if shape is not None else str(shape)


def program_header(compiles: Compiles, module: DumpModule) -> Module:
    """The header of the program jax gave XLA where the compiled one has per-device shapes (a partitioned
    program); else the compiled one's, already read (also where the program's cannot be read: it is
    recorded in `compiles.skipped`)."""
    if module.header().num_partitions == 1 or module.file("hlo", "before") is None:
        return module.header()
    try:
        return module.header("before")
    except XlaInspectError as error:
        compiles.skip(module, error, module.hlo_path("before"))
        return module.header()
