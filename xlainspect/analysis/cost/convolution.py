"""A convolution's FLOPs as XLA's `GetConvolutionFlops` counts them (xla/service/hlo_cost_analysis.cc):
2 x (input features / feature groups) x output features x (batch / batch groups) x the valid (output
position, kernel tap) pairs of each spatial dim. The cuDNN rule counts its convolutions by it too."""

from __future__ import annotations

from xlainspect.analysis.cost.model import Cost
from xlainspect.analysis.cost.operands import operand, result
from xlainspect.analysis.cost.static import Analysis
from xlainspect.hlo.attributes import WindowDimension, decode_dim_labels, decode_group_count, decode_window
from xlainspect.hlo.model import Instruction
from xlainspect.hlo.shape import Shape


def convolution(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """XLA's `HandleConvolution`: valid (output position, kernel tap) pairs per spatial dim."""
    shapes = [operand(instruction, 0, index), operand(instruction, 1, index), result(instruction)]
    return analysis.default_bytes(instruction, index) + Cost(flops=convolution_flops(instruction, *shapes))


def convolution_flops(instruction: Instruction, lhs: Shape, rhs: Shape, out: Shape) -> int:
    """2 x FMAs of a convolution of `lhs` (input) by `rhs` (kernel) into `out`, as its window,
    `dim_labels` and group counts say (xla/service/hlo_cost_analysis.cc `GetConvolutionFlops`)."""
    attributes = instruction.attributes
    labels = decode_dim_labels(attributes.get("dim_labels", "b01f_01io->b01f"))
    positions = 1  # no spatial dims: XLA's one-element window, one valid position
    window = window_of(instruction, len(labels.input_spatial)) if labels.input_spatial else ()
    for k, dim in enumerate(window):
        positions *= valid_positions(
            lhs.dims[labels.input_spatial[k]],
            rhs.dims[labels.kernel_spatial[k]],
            out.dims[labels.output_spatial[k]],
            dim,
        )
    feature_groups = decode_group_count(attributes.get("feature_group_count"))
    batch_groups = decode_group_count(attributes.get("batch_group_count"))
    fmas = (
        (lhs.dims[labels.input_feature] // feature_groups)
        * out.dims[labels.output_feature]
        * (lhs.dims[labels.input_batch] // batch_groups)
        * positions
    )
    return 2 * fmas


def window_of(instruction: Instruction, rank: int) -> tuple[WindowDimension, ...]:
    """The instruction's `window=`; without one, `rank` dimensions of size 1 (at least one: XLA's
    convolution counting assumes a one-element window)."""
    return decode_window(instruction.attributes.get("window")) or (WindowDimension(),) * max(rank, 1)


def valid_positions(input_size: int, kernel: int, output: int, dim: WindowDimension) -> int:
    """The (output position, kernel tap) pairs of one spatial dim whose input index is inside the
    (base-dilated, padded) input: XLA's two closed forms, else counted tap by tap."""
    if (
        input_size == output
        and kernel == output
        and input_size == dim.base_dilation
        and dim.window_dilation == 1
        and max(1, input_size - 1) == dim.stride
        and dim.padding_low == 0
        and dim.padding_high == 0
    ):
        return input_size
    if (
        input_size == 1
        and kernel == output
        and dim.window_dilation == 1
        and dim.base_dilation == 1
        and dim.stride == 1
        and dim.padding_high == output - 1
        and dim.padding_low == output - 1
    ):
        return output
    count = 0
    for tap in range(kernel):
        offset = tap * dim.window_dilation - dim.padding_low
        if dim.base_dilation == 1:  # the outputs whose input index falls inside: one range per tap
            first, last = -(offset // dim.stride), (input_size - 1 - offset) // dim.stride
            count += max(0, min(output - 1, last) - max(0, first) + 1)
            continue
        for position in range(output):
            undilated = position * dim.stride + offset
            if undilated % dim.base_dilation == 0 and 0 <= undilated // dim.base_dilation < input_size:
                count += 1
    return count
