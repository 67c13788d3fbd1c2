"""The parsed-model cache's entries (`dump/model_cache.py`): a Module as plain tuples, dicts and
strings (an array shape as its printed text, a tuple shape as a tuple of those), written with marshal.
Loading one is mostly building the objects, several times faster than unpickling slotted objects,
which calls back into Python for each of them. Its own module: a run that finds its answer in the
command cache needs no model classes.
"""

from __future__ import annotations

import functools

from xlainspect.hlo.model import Computation, Instruction, Module, StackFrame
from xlainspect.hlo.shape import Shape, array_shape, tuple_shape

#: Bump when the model's classes change shape (fields added, renamed, retyped).
MODEL_FORMAT = 4


def module_record(module: Module) -> tuple:
    frames = tuple((i, f.file, f.function, f.line, f.column, f.parent) for i, f in module.stack_frames.items())
    computations = tuple(
        (
            c.name,
            c.is_entry,
            None if c.parameter_shapes is None else tuple((n, _shape_record(s)) for n, s in c.parameter_shapes),
            None if c.result_shape is None else _shape_record(c.result_shape),
            c.attributes,
            c.line,
            tuple(
                (
                    i.name,
                    i.opcode,
                    None if i.shape is None else _shape_record(i.shape),
                    i.operands,
                    i.attributes,
                    i.is_root,
                    i.line,
                    i.operand_shape_indices,
                )
                for i in c.instructions
            ),
        )
        for c in module.computations
    )
    layout = module.entry_computation_layout
    layout = None if layout is None else (tuple(_shape_record(s) for s in layout[0]), _shape_record(layout[1]))
    return (module.name, module.attributes, frames, module.line, module.has_header, computations, layout)


def module_of(record: tuple) -> Module:
    name, attributes, frames, line, has_header, computations, layout = record
    return Module(
        name=name,
        attributes=attributes,
        line=line,
        has_header=has_header,
        stack_frames={f[0]: StackFrame(*f[1:]) for f in frames},
        computations=[_computation(c) for c in computations],
        entry_computation_layout=None if layout is None else (tuple(map(_shape, layout[0])), _shape(layout[1])),
    )


def _computation(record: tuple) -> Computation:
    name, is_entry, parameters, result, attributes, line, instructions = record
    return Computation(
        name,
        [
            Instruction(n, o, None if s is None else _shape(s), ops, a, r, ln, x)
            for n, o, s, ops, a, r, ln, x in instructions
        ],
        is_entry,
        None if parameters is None else tuple((n, _shape(s)) for n, s in parameters),
        None if result is None else _shape(result),
        attributes,
        line,
    )


def _shape_record(shape: Shape):
    return tuple(_shape_record(s) for s in shape.tuple_shapes) if shape.is_tuple else str(shape)


@functools.lru_cache(maxsize=16384)
def _shape(record) -> Shape:
    return tuple_shape(tuple(_shape(r) for r in record)) if isinstance(record, tuple) else array_shape(record)
