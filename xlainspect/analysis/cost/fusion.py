"""A fusion's cost as XLA counts it: the FLOPs of its fused instructions; bytes its outputs (a
dynamic-update-slice root only its update), what it reads of each parameter
(`FusionParameterReadBytes`: a parameter read only through slices is charged the slices) and the
large constants inside."""

from __future__ import annotations

from xlainspect.analysis.cost.model import Cost
from xlainspect.analysis.cost.operands import operand, result, root
from xlainspect.analysis.cost.sizes import Size, accessed, leaves_size, size
from xlainspect.analysis.cost.static import Analysis
from xlainspect.hlo.model import Computation, Instruction
from xlainspect.hlo.shape import Shape


def fusion(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """The fused instructions' FLOPs; bytes: outputs, parameter reads and large constants."""
    body = analysis.called(instruction)
    if instruction.attributes.get("kind") == "kCustom":
        inner = next((i for i in body.instructions if i.opcode in ("gather", "scatter")), None)
        if inner is not None:
            return analysis.handlers[inner.opcode](analysis, inner, analysis.index(body))
    inside = analysis.computation(body, flops_only=True)
    read = [
        _parameter_read(analysis, body, parameter) for parameter in body.instructions if parameter.opcode == "parameter"
    ]
    read += [size(result(i)) for i in body.instructions if i.opcode == "constant" and result(i).num_elements > 1]
    return accessed(read, _fusion_written(analysis, instruction, body)) + Cost(inside.flops, inside.transcendentals)


def _fusion_written(analysis: Analysis, fusion: Instruction, body: Computation) -> Size:
    """Each array output, except a dynamic-update-slice root writes only its update."""
    body_root, index = root(body), analysis.index(body)
    shape = result(fusion)
    if not shape.is_tuple:
        return size(operand(body_root, 1, index)) if body_root.opcode == "dynamic-update-slice" else size(shape)
    total = [0, 0]
    for i, element in enumerate(shape.tuple_shapes):
        if body_root.opcode == "tuple" and not element.is_tuple:
            output = index[body_root.operands[i]]
            written = size(operand(output, 1, index) if output.opcode == "dynamic-update-slice" else element)
        else:
            written = leaves_size(element)
        total[0] += written[0]
        total[1] += written[1]
    return total[0], total[1]


def _parameter_read(analysis: Analysis, body: Computation, parameter: Instruction) -> Size:
    """`FusionParameterReadBytes`, for a tuple parameter per leaf through its get-tuple-elements."""
    shape = result(parameter)
    if not shape.is_tuple:
        return _read_bytes(analysis, body, parameter)
    users = analysis.users(body)
    total = [0, 0]
    for leaf_index in _leaf_indices(shape):
        value = parameter
        for position in leaf_index:
            value = next(
                (u for u in users.get(value.name, ()) if u.tuple_index == position),
                value,
            )
        read = _read_bytes(analysis, body, value)
        total[0] += read[0]
        total[1] += read[1]
    return total[0], total[1]


def _leaf_indices(shape: Shape, prefix: tuple[int, ...] = ()) -> list[tuple[int, ...]]:
    if not shape.is_tuple:
        return [prefix]
    return [leaf for i, s in enumerate(shape.tuple_shapes) for leaf in _leaf_indices(s, (*prefix, i))]


def _read_bytes(analysis: Analysis, body: Computation, value: Instruction) -> Size:
    """What a fused computation reads of one parameter: slices read their size, broadcasts and
    reshapes the whole, other users share one whole read (XLA's `FusionParameterReadBytes`)."""
    total, seen = [0, 0], False
    for user in analysis.users(body).get(value.name, ()):
        sliced = _sliced_read(user, value, seen)
        if user.opcode == "fusion":
            read = _nested_read(analysis, body, user, value)
        elif sliced is not None:
            read, seen = sliced
        elif user.opcode in ("broadcast", "reshape"):
            read = size(result(value))
        else:
            read, seen = ((0, 0) if seen else size(result(value))), True
        total[0] += read[0]
        total[1] += read[1]
    return total[0], total[1]


def _sliced_read(user: Instruction, value: Instruction, seen: bool) -> tuple[Size, bool] | None:
    """(bytes charged, whole read seen) when `user` slices `value`: a slice or dynamic-slice of it reads
    the slice; its start indices and a dynamic-update-slice's update share the one whole read; the
    buffer a dynamic-update-slice updates in place is not read. None for other users."""
    if user.opcode == "slice":
        return size(result(user)), seen
    if user.opcode == "dynamic-slice" and user.operands[0] == value.name:
        return size(result(user)), seen
    if user.opcode == "dynamic-update-slice" and user.operands[0] == value.name:
        return (0, 0), seen
    if user.opcode in ("dynamic-slice", "dynamic-update-slice"):
        return ((0, 0) if seen else size(result(value))), True
    return None


def _nested_read(analysis: Analysis, body: Computation, nested: Instruction, value: Instruction) -> Size:
    """A parameter read by a nested fusion: XLA charges by how the nested fusion's users slice it when
    the parameter feeds the nested root directly, else by how the nested computation reads it, once."""
    inner = analysis.called(nested)
    parameters = {p.parameter_number: p for p in inner.instructions if p.opcode == "parameter"}
    total = [0, 0]
    for position, name in enumerate(nested.operands):
        if name != value.name:
            continue
        parameter, inner_root = parameters[position], root(inner)
        simple = (
            not inner_root.operands
            or inner_root.opcode in ("parameter", "constant")
            or inner_root.operands[0] == parameter.name
        )
        seen = False
        for user in analysis.users(body).get(nested.name, ()):
            sliced = _sliced_read(user, nested, seen) if simple else None
            if sliced is not None:
                read, seen = sliced
            else:
                read, seen = ((0, 0) if seen else _read_bytes(analysis, inner, parameter)), True
            total[0] += read[0]
            total[1] += read[1]
    return total[0], total[1]
