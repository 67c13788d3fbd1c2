"""The typed model of an HLO module: plain objects, no parser objects, XLA's own vocabulary.

Attribute values stay the raw text XLA printed (`attributes["replica_groups"] == "[2,4]<=[8]"`);
decoders in `xlainspect.hlo.attributes` interpret them on demand, so a newer XLA's attribute
never breaks a parse. Classes use `__slots__`: a 50 MB module has hundreds of thousands of
instructions.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from sys import intern

from xlainspect.hlo.attributes import (
    Metadata,
    called_computation_names,
    decode_input_output_alias,
    decode_metadata,
    unquote,
)
from xlainspect.hlo.shape import Shape, array_shape, tuple_shape


def attribute_dict(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Attributes in printed order from (key, value) pairs; a pair with an empty key is a bare name
    that continues the previous value (`calls=%a, %b`).

    Keys and values are interned: a large module repeats the same few thousand of them (kinds,
    metadata, backend configs) hundreds of thousands of times, and memory is the parse's limit.
    """
    result: dict[str, str] = {}
    last: str | None = None
    for key, value in pairs:
        if key:
            result[intern(key)] = intern(value)
            last = key
        elif last is not None:
            result[last] += ", " + value
    return result


@dataclass(slots=True, eq=False)
class Instruction:
    """One `[ROOT] name = shape opcode(operands), attr=value, ...` line."""

    name: str
    """Without the leading `%`."""
    opcode: str
    """An open set: any opcode a newer XLA prints is kept as written."""
    shape: Shape | None
    operands: tuple[str, ...]
    """Operand names; for `parameter` the number, for `constant` the literal text."""
    attributes: dict[str, str]
    """Raw attribute text by name, in printed order."""
    is_root: bool = False
    line: int = 0
    """1-based line of the instruction in its file."""
    operand_shape_indices: tuple[tuple[int, ...], ...] = ()
    """Per operand, the ShapeIndex into the operand instruction's tuple that a compact
    get-tuple-element operand names (`%p0#1#0` -> `(1, 0)`; `()` for the whole value); empty when
    no operand is written that way (XLA 2026-06, printed by default since jax 0.11)."""

    def operand_shape_index(self, k: int) -> tuple[int, ...]:
        """The ShapeIndex of operand `k` into its instruction's value (`()`: the whole value)."""
        return self.operand_shape_indices[k] if self.operand_shape_indices else ()

    @property
    def metadata(self) -> Metadata:
        return decode_metadata(self.attributes.get("metadata"))

    @property
    def op_name(self) -> str | None:
        return self.metadata.op_name

    @property
    def called_computations(self) -> tuple[str, ...]:
        """Names of the computations this instruction calls (fusion body, to_apply, while body...)."""
        return called_computation_names(self.attributes)

    @property
    def custom_call_target(self) -> str | None:
        """A custom-call's target, unquoted (`__cublas$gemm`); None for other instructions."""
        target = self.attributes.get("custom_call_target")
        return unquote(target) if self.opcode == "custom-call" and target is not None else None

    @property
    def parameter_number(self) -> int | None:
        return int(self.operands[0]) if self.opcode == "parameter" and self.operands else None

    @property
    def tuple_index(self) -> int | None:
        """A get-tuple-element's `index=` (the element it reads); None for other instructions."""
        index = self.attributes.get("index")
        return int(index) if self.opcode == "get-tuple-element" and index is not None else None

    def to_record(self) -> InstructionRecord:
        return (
            self.name,
            self.opcode,
            None if self.shape is None else _shape_record(self.shape),
            self.operands,
            self.attributes,
            self.is_root,
            self.line,
            self.operand_shape_indices,
        )

    @staticmethod
    def from_record(record: InstructionRecord) -> Instruction:
        name, opcode, shape, operands, attributes, is_root, line, indices = record
        return Instruction(
            name, opcode, None if shape is None else _shape_of(shape), operands, attributes, is_root, line, indices
        )


@dataclass(slots=True, eq=False)
class Computation:
    """A named list of instructions; the last `ROOT` (or, without one, the last line) is the root."""

    name: str
    instructions: list[Instruction]
    is_entry: bool = False
    parameter_shapes: tuple[tuple[str, Shape], ...] | None = None
    """The printed program signature `(p0: f32[8]) -> ...` (long text only), names with shapes."""
    result_shape: Shape | None = None
    attributes: dict[str, str] = field(default_factory=dict[str, str])
    """Attributes after the closing brace, e.g. `execution_thread`."""
    line: int = 0

    @property
    def root(self) -> Instruction | None:
        roots = [i for i in self.instructions if i.is_root]
        if roots:
            return roots[-1]
        return self.instructions[-1] if self.instructions else None

    @property
    def parameters(self) -> list[Instruction]:
        """`parameter` instructions sorted by parameter number."""
        params = [i for i in self.instructions if i.opcode == "parameter"]
        return sorted(params, key=lambda i: i.parameter_number or 0)

    def __iter__(self):
        return iter(self.instructions)

    def __len__(self) -> int:
        return len(self.instructions)

    def to_record(self) -> ComputationRecord:
        return (
            self.name,
            self.is_entry,
            None if self.parameter_shapes is None else tuple((n, _shape_record(s)) for n, s in self.parameter_shapes),
            None if self.result_shape is None else _shape_record(self.result_shape),
            self.attributes,
            self.line,
            tuple(i.to_record() for i in self.instructions),
        )

    @staticmethod
    def from_record(record: ComputationRecord) -> Computation:
        name, is_entry, parameters, result, attributes, line, instructions = record
        return Computation(
            name,
            [Instruction.from_record(i) for i in instructions],
            is_entry,
            None if parameters is None else tuple((n, _shape_of(s)) for n, s in parameters),
            None if result is None else _shape_of(result),
            attributes,
            line,
        )


@dataclass(slots=True, eq=False)
class StackFrame:
    """One resolved entry of the module's StackFrames table."""

    file: str
    function: str
    line: int
    column: int = 0
    parent: int = 0


@dataclass(eq=False)
class Module:
    """An `HloModule`: header attributes, optional stack-frame table, computations."""

    name: str
    computations: list[Computation]
    attributes: dict[str, str] = field(default_factory=dict[str, str])
    """Raw header attributes (`entry_computation_layout`, `input_output_alias`, ...)."""
    stack_frames: dict[int, StackFrame] = field(default_factory=dict[int, "StackFrame"])
    path: str | None = None
    line: int = 1
    has_header: bool = True
    """False for header-less text (computations only); the name is then `module_<entry>`."""
    entry_computation_layout: tuple[tuple[Shape, ...], Shape] | None = None
    """`(parameter shapes, result shape)` of the header's `entry_computation_layout`, decoded by
    the parser; None when the header has none."""

    @functools.cached_property
    def entry(self) -> Computation:
        """The ENTRY computation, or the last one when none is marked (as XLA's parser decides).

        Cached: analyses ask for it per instruction, and a big module has 50,000 computations."""
        for computation in self.computations:
            if computation.is_entry:
                return computation
        return self.computations[-1]

    @functools.cached_property
    def computations_by_name(self) -> dict[str, Computation]:
        return {c.name: c for c in self.computations}

    def called_root(self, instruction: Instruction) -> Instruction | None:
        """The root of the first computation an instruction calls: what a fusion computes, what an
        async-start runs (its `calls=`); None when it calls nothing this module holds."""
        body = self.computations_by_name.get(next(iter(instruction.called_computations), ""))
        return body.root if body is not None else None

    def instructions(self) -> Iterator[Instruction]:
        """Every instruction of every computation, in printed order."""
        for computation in self.computations:
            yield from computation.instructions

    def source_of(self, instruction: Instruction) -> str | None:
        """`file:line` of an instruction: inline metadata, else its innermost stack frame.

        Newer jax prints only `stack_frame_id=N` and the module's StackFrames table holds the place.
        """
        metadata = instruction.metadata
        if metadata.source or metadata.stack_frame_id is None:
            return metadata.source
        frame = self.stack_frames.get(metadata.stack_frame_id)
        return f"{frame.file}:{frame.line}" if frame is not None else None

    @property
    def instruction_count(self) -> int:
        return sum(len(c.instructions) for c in self.computations)

    @property
    def is_scheduled(self) -> bool:
        return self.attributes.get("is_scheduled") == "true"

    @property
    def num_partitions(self) -> int:
        return int(self.attributes.get("num_partitions", "1"))

    @property
    def replica_count(self) -> int:
        return int(self.attributes.get("replica_count", "1"))

    @property
    def parameter_shapes(self) -> tuple[Shape, ...]:
        """Entry parameter shapes: from the header layout, else from the entry's parameters."""
        if self.entry_computation_layout:
            return self.entry_computation_layout[0]
        return tuple(p.shape for p in self.entry.parameters if p.shape is not None)

    @property
    def result_shape(self) -> Shape | None:
        if self.entry_computation_layout:
            return self.entry_computation_layout[1]
        root = self.entry.root
        return root.shape if root else None

    @functools.cached_property
    def input_output_alias(self):
        """Decoded `input_output_alias` entries (output index, parameter, parameter index, kind)."""
        return decode_input_output_alias(self.attributes.get("input_output_alias"))

    def to_record(self) -> ModuleRecord:
        """Every field but `path` (where the text was read: the caller's to say) as plain tuples, dicts,
        strings and numbers: what the parsed-model cache writes with marshal and the tests compare."""
        layout = self.entry_computation_layout
        return (
            self.name,
            self.attributes,
            tuple((k, f.file, f.function, f.line, f.column, f.parent) for k, f in self.stack_frames.items()),
            self.line,
            self.has_header,
            tuple(c.to_record() for c in self.computations),
            None if layout is None else (tuple(_shape_record(s) for s in layout[0]), _shape_record(layout[1])),
        )

    @staticmethod
    def from_record(record: ModuleRecord, path: str | None = None) -> Module:
        name, attributes, frames, line, has_header, computations, layout = record
        decoded = None if layout is None else (tuple(map(_shape_of, layout[0])), _shape_of(layout[1]))
        return Module(
            name=name,
            computations=[Computation.from_record(c) for c in computations],
            attributes=attributes,
            stack_frames={f[0]: StackFrame(f[1], f[2], f[3], f[4], f[5]) for f in frames},
            path=path,
            line=line,
            has_header=has_header,
            entry_computation_layout=decoded,
        )


ShapeRecord = str | tuple["ShapeRecord", ...]
"""An array shape as XLA prints it; a tuple shape as the tuple of its elements' records."""
InstructionRecord = tuple[
    str, str, ShapeRecord | None, tuple[str, ...], dict[str, str], bool, int, tuple[tuple[int, ...], ...]
]
"""An Instruction's fields in its constructor's order, its shape as a record."""
ComputationRecord = tuple[
    str,
    bool,
    tuple[tuple[str, ShapeRecord], ...] | None,
    ShapeRecord | None,
    dict[str, str],
    int,
    tuple[InstructionRecord, ...],
]
"""name, is_entry, parameter_shapes, result_shape, attributes, line, instructions."""
ModuleRecord = tuple[
    str,
    dict[str, str],
    tuple[tuple[int, str, str, int, int, int], ...],
    int,
    bool,
    tuple[ComputationRecord, ...],
    tuple[tuple[ShapeRecord, ...], ShapeRecord] | None,
]
"""name, attributes, stack frames (id first), line, has_header, computations, entry_computation_layout.

The one plain form of the model (`Module.to_record`, `Module.from_record`): the parsed-model cache
writes it with marshal, a worker process sends its part of a parse in it, and the tests compare
models by it. Loading one is mostly building the objects, several times faster than unpickling
slotted objects, which calls back into Python for each of them."""


def _shape_record(shape: Shape) -> ShapeRecord:
    return tuple(_shape_record(s) for s in shape.tuple_shapes) if shape.is_tuple else str(shape)


@functools.lru_cache(maxsize=16384)
def _shape_of(record: ShapeRecord) -> Shape:
    """A record's shape; the same text decoded once (a module repeats a few hundred shapes)."""
    return tuple_shape(tuple(_shape_of(r) for r in record)) if isinstance(record, tuple) else array_shape(record)
