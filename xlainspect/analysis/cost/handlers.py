"""XLA's handlers, one per opcode HloCostAnalysis counts specially (xla/service/hlo_cost_analysis.cc
`Handle<Opcode>`), and the table that composes them (`HANDLERS`); `static_analysis` counts a module
with it. The opcodes without a handler are counted by `Analysis` (elementwise: one per element)."""

from __future__ import annotations

import math

from xlainspect.analysis.cost.convolution import convolution, window_of
from xlainspect.analysis.cost.fusion import fusion
from xlainspect.analysis.cost.model import Cost
from xlainspect.analysis.cost.operands import first_array, operand, result
from xlainspect.analysis.cost.sizes import accessed, leaves_size, size, total
from xlainspect.analysis.cost.static import Analysis, Handler
from xlainspect.hlo.attributes import decode_int_list
from xlainspect.hlo.model import Instruction, Module


def dot(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """2 x elements(result) x the product of the lhs contracting dims."""
    lhs = operand(instruction, 0, index)
    width = math.prod(lhs.dims[d] for d in decode_int_list(instruction.attributes.get("lhs_contracting_dims")))
    dims = list(result(instruction).dims)
    if instruction.opcode == "ragged-dot":  # XLA deletes dimension i for each rhs group dim i
        for i in range(len(decode_int_list(instruction.attributes.get("rhs_group_dims")))):
            del dims[i]
    return analysis.default_bytes(instruction, index) + Cost(flops=2 * math.prod(dims) * width)


def reduce(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """The reducer's cost x (elements(input) - elements(output))."""
    count = operand(instruction, 0, index).num_elements - first_array(result(instruction)).num_elements
    return analysis.default_bytes(instruction, index) + analysis.applied(instruction).scaled(count)


def reduce_window(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """The reducer's cost x (window - 1) x output elements; XLA's reduce-then-broadcast window is special-cased."""
    shape = result(instruction)
    window = window_of(instruction, shape.rank)
    elements = first_array(shape).num_elements
    count = (math.prod(d.size for d in window) - 1) * elements
    reduced = [d for d in window if d.size != 1]
    padded = [d for d in window if d.padding_low or d.padding_high]
    if len(reduced) == 1 and len(padded) == 1 and not shape.is_tuple:
        # XLA's special case: a reduce followed by a broadcast of one dimension.
        for position, d in enumerate(window):
            low, high = d.padding_low, d.padding_high
            if d.size != 1 and low and high and low == high and d.size == 2 * low + 1:
                span = shape.dims[position]
                if low == span - 1:
                    count = elements // span + span - 1
                break
    return analysis.default_bytes(instruction, index) + analysis.applied(instruction).scaled(count)


def map_(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """The mapped computation's cost x output elements."""
    return analysis.default_bytes(instruction, index) + analysis.applied(instruction).scaled(
        result(instruction).num_elements
    )


def select_and_scatter(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """The select computation x source elements x (window - 1), the scatter computation x source elements."""
    source = operand(instruction, 1, index).num_elements
    dims = window_of(instruction, result(instruction).rank)
    window = math.prod(d.size for d in dims)
    select = analysis.named(instruction.attributes.get("select", ""))
    scatter_ = analysis.named(instruction.attributes.get("scatter", ""))
    return (
        analysis.default_bytes(instruction, index)
        + analysis.computation(select, flops_only=True).scaled(source * (window - 1))
        + analysis.computation(scatter_, flops_only=True).scaled(source)
    )


def sort(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """Elements x ceil(log2 elements) of the first operand."""
    n = operand(instruction, 0, index).num_elements
    return analysis.default_bytes(instruction, index) + Cost(flops=n * max(n - 1, 0).bit_length())


def fft(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """8 x prod(floor(log2 length)) x elements."""
    logs = math.prod(max(n, 1).bit_length() - 1 for n in decode_int_list(instruction.attributes.get("fft_length")))
    elements = first_array(operand(instruction, 0, index)).num_elements
    return analysis.default_bytes(instruction, index) + Cost(flops=2 * 4 * logs * elements)


def rng(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """One transcendental per output element."""
    elements = sum(s.num_elements for s in result(instruction).leaves() if s.is_array)
    return analysis.default_bytes(instruction, index) + Cost(transcendentals=elements)


def all_reduce(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """One flop per output element."""
    read = [size(operand(instruction, i, index)) for i in range(len(instruction.operands))]
    shape = result(instruction)
    elements = sum(s.num_elements for s in shape.leaves() if s.is_array)
    return accessed(read, leaves_size(shape)) + Cost(flops=elements)


def slice_(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """Slice and dynamic-slice: the output read and written (and a dynamic-slice's start indices)."""
    out = size(result(instruction))
    extra = [size(operand(instruction, 1, index))] if instruction.opcode == "dynamic-slice" else []
    return accessed([out, *extra], out)


def dynamic_update_slice(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """The update read and written, and the start indices read."""
    update = size(operand(instruction, 1, index))
    return accessed([update, size(operand(instruction, 2, index))], update)


def gather(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """The output read and written, and the indices read."""
    out = size(result(instruction))
    return accessed([out, size(operand(instruction, 1, index))], out)


def scatter(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """The updates read twice and written, the indices read; the combiner x update elements."""
    n = (len(instruction.operands) - 1) // 2
    updates = total([size(operand(instruction, n + 1 + i, index)) for i in range(n)])
    elements = operand(instruction, n + 1, index).num_elements
    return accessed([updates, updates, size(operand(instruction, n, index))], updates) + analysis.applied(
        instruction
    ).scaled(elements)


def outfeed(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """Every array of every operand read, tuples by their elements (the token writes nothing)."""
    return accessed([leaves_size(operand(instruction, i, index)) for i in range(len(instruction.operands))], (0, 0))


def tuple_(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """Its index table written."""
    return accessed([], size(result(instruction)))


def custom_call(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """-1 flops and -1 bytes each, XLA's "unknown"."""
    return Cost(flops=-1, bytes=-1, written=-1, padded_bytes=-1, padded_written=-1)


def triangular_solve(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """Half of `a` and all of `b` read; 2 x a's last dim x elements(b)."""
    a, b = operand(instruction, 0, index), operand(instruction, 1, index)
    logical, padded = size(a)
    half = (logical // 2, padded // 2)
    return accessed([half, size(b)], size(result(instruction))) + Cost(flops=2 * a.dims[-1] * b.num_elements)


def cholesky(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """Half of `a` read and written; a's last dim x elements / 3."""
    a = operand(instruction, 0, index)
    logical, padded = size(a)
    half = (logical // 2, padded // 2)
    return accessed([half], half) + Cost(flops=a.dims[-1] * a.num_elements // 3)


def called_sum(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """Call and async-start: the called computation's properties; while: body + condition, once."""
    return sum(
        (analysis.computation(analysis.named(name)) for name in instruction.called_computations),
        Cost(),
    )


def conditional(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """The largest branch, per property (XLA's `HandleConditional`)."""
    branches = [tuple(analysis.computation(analysis.named(name))) for name in instruction.called_computations]
    return Cost(*(max(values) for values in zip(*branches))) if branches else Cost()


HANDLERS: dict[str, Handler] = {
    "dot": dot,
    "ragged-dot": dot,
    "convolution": convolution,
    "reduce": reduce,
    "reduce-window": reduce_window,
    "map": map_,
    "select-and-scatter": select_and_scatter,
    "sort": sort,
    "fft": fft,
    "rng": rng,
    "rng-bit-generator": rng,
    "all-reduce": all_reduce,
    "all-reduce-start": all_reduce,
    "slice": slice_,
    "dynamic-slice": slice_,
    "dynamic-update-slice": dynamic_update_slice,
    "gather": gather,
    "scatter": scatter,
    "tuple": tuple_,
    "custom-call": custom_call,
    "triangular-solve": triangular_solve,
    "cholesky": cholesky,
    "call": called_sum,
    "while": called_sum,
    "async-start": called_sum,
    "conditional": conditional,
    "fusion": fusion,
    "outfeed": outfeed,
}
"""Opcode -> XLA's handler; an async `-start` op without its own entry takes its op's."""


def static_analysis(module: Module) -> Analysis:
    """XLA's HloCostAnalysis of `module`, with every handler of `HANDLERS`."""
    return Analysis(module, HANDLERS)
