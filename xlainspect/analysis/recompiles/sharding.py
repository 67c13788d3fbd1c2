"""Causes in how the arguments and the output are sharded: per-device shapes that differ while the
global ones agree, and entry parameters or outputs whose sharding differs (in PartitionSpec terms where
the module carries jax's mesh; `xlainspect.hlo.attributes` decodes the shardings)."""

from __future__ import annotations

from xlainspect.analysis.recompiles.model import Cause, Compiles, programs
from xlainspect.analysis.recompiles.signature import shape_cause
from xlainspect.hlo.attributes import decode_mesh_axes, decode_partition_spec
from xlainspect.hlo.model import Instruction, Module


def per_device_shapes(compiles: Compiles, causes: list[Cause]) -> list[Cause]:
    """Detector: per-device shapes that differ while the global (before_optimizations) shapes agree are
    a sharding change. Where the global shapes differ too, the shape causes are given in global shapes
    (what the user passed), the per-device ones beside them."""
    if not any(c.kind == "shape" for c in causes) or any(m.file("hlo", "before") is None for m in compiles.modules):
        return causes  # without the programs jax gave XLA, no global shapes to compare
    before = compiles.each(lambda m: m.header("before"))
    if before is None:
        return causes
    if len({tuple(s.dims for s in h.parameter_shapes) for h in before}) > 1:
        return _global_shapes(before, causes)
    parsed = compiles.each(lambda m: m.module("before"))
    sharded = sharding_causes(parsed) if parsed else []
    return [c for c in causes if c.kind != "shape"] + sharded if sharded else causes


def shardings(compiles: Compiles, causes: list[Cause]) -> list[Cause]:
    """Detector: for the user's partitioned functions, parameters or outputs sharded otherwise (the
    per-device shapes may agree), unless a sharding cause was already found."""
    partitioned = compiles.modules[0].header().num_partitions > 1
    if len(compiles.modules) < 2 or compiles.eager or not partitioned or any(c.kind == "sharding" for c in causes):
        return causes
    parsed = programs(compiles)
    return causes + sharding_causes(parsed) if parsed else causes


def _global_shapes(before: list[Module], causes: list[Cause]) -> list[Cause]:
    """Shape causes recomputed on the global shapes, the per-device sizes kept beside them."""
    if any(h.num_partitions == 1 for h in before) or len({len(h.parameter_shapes) for h in before}) > 1:
        return causes
    result: list[Cause] = []
    for cause in causes:
        if cause.kind != "shape" or cause.index is None:
            result.append(cause)
            continue
        seen = shape_cause(cause.parameter, cause.index, [h.parameter_shapes[cause.index] for h in before])
        result.append(
            Cause("shape", cause.parameter, cause.index, seen.values, seen.dims, "per_device", per_device=cause.values)
        )
    return result


def sharding_causes(modules: list[Module]) -> list[Cause]:
    """Entry parameters whose sharding differs (the per-device shapes may still be equal), in mesh terms
    where the module carries Shardy's attributes, then the output's sharding (`out_shardings`)."""
    per_module = [{p.parameter_number: p for p in m.entry.parameters} for m in modules]
    causes: list[Cause] = []
    for index in sorted(i for i in per_module[0] if i is not None):
        seen = [sharding_text(parameters.get(index), _mesh_axes(m)) for m, parameters in zip(modules, per_module)]
        if len(set(seen)) > 1:
            name = per_module[0][index].op_name or f"#{index}"
            causes.append(Cause("sharding", name, index, tuple(seen)))
    outputs = [sharding_text(m.entry.root, _mesh_axes(m)) for m in modules]
    if len(set(outputs)) > 1:
        causes.append(Cause("out_sharding", None, None, tuple(outputs)))
    return causes


def _mesh_axes(module: Module) -> tuple[tuple[str, int], ...]:
    return decode_mesh_axes(module.attributes.get("frontend_attributes"))


def sharding_text(instruction: Instruction | None, axes: tuple[tuple[str, int], ...]) -> str | None:
    """`P('data', None)` where the sharding reads as a PartitionSpec (what the user wrote; `P()` where
    every dimension is replicated), else XLA's text; None where there is none (jax left it to the
    partitioner)."""
    if instruction is None:
        return None
    sharding = instruction.attributes.get("sharding")
    spec = decode_partition_spec(instruction.attributes.get("frontend_attributes"), sharding, axes)
    if spec is not None:
        return "P()" if set(spec) <= {"None"} else f"P({', '.join(spec)})"
    return sharding or None
