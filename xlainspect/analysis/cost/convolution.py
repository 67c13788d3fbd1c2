"""A convolution's FLOPs as XLA's `GetConvolutionFlops` counts them (xla/service/hlo_cost_analysis.cc):
2 x (input features / feature groups) x output features x (batch / batch groups) x the valid (output
position, kernel tap) pairs of each spatial dim. The cuDNN rule counts its convolutions by it too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from xlainspect.analysis.cost.model import Cost
from xlainspect.analysis.cost.operands import operand, result
from xlainspect.analysis.cost.static import Analysis
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
    labels = _dim_labels(attributes.get("dim_labels", "b01f_01io->b01f"))
    positions = 1  # no spatial dims: XLA's one-element window, one valid position
    window = window_dimensions(attributes.get("window"), len(labels["lhs_spatial"])) if labels["lhs_spatial"] else ()
    for k, dim in enumerate(window):
        positions *= valid_positions(
            lhs.dims[labels["lhs_spatial"][k]],
            rhs.dims[labels["rhs_spatial"][k]],
            out.dims[labels["out_spatial"][k]],
            dim,
        )
    feature_groups = int(attributes.get("feature_group_count", "1"))
    batch_groups = int(attributes.get("batch_group_count", "1"))
    fmas = (
        (lhs.dims[labels["lhs_feature"]] // feature_groups)
        * out.dims[labels["out_feature"]]
        * (lhs.dims[labels["lhs_batch"]] // batch_groups)
        * positions
    )
    return 2 * fmas


@dataclass(slots=True)
class WindowDim:
    """One dimension of a convolution's or reduce-window's window."""

    size: int = 1
    stride: int = 1
    pad_low: int = 0
    pad_high: int = 0
    base_dilation: int = 1
    window_dilation: int = 1


def window_dimensions(text: str | None, rank: int) -> list[WindowDim]:
    """`{size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=1x1 rhs_dilate=1x1}` per dimension; no window is one
    dimension of size 1 (as XLA's convolution counting assumes)."""
    fields = dict(item.split("=", 1) for item in (text or "").strip("{} ").split() if "=" in item)
    sizes = _parts(fields.get("size"))
    rank = len(sizes) or max(rank, 1)
    pads = [p.split("_") for p in fields["pad"].split("x")] if "pad" in fields else [["0", "0"]] * rank

    def each(key: str) -> list[int]:
        values = _parts(fields.get(key))
        return values if values else [1] * rank

    return [
        WindowDim(size, stride, int(low), int(high), base, dilation)
        for size, stride, (low, high), base, dilation in zip(
            sizes or [1] * rank, each("stride"), pads, each("lhs_dilate"), each("rhs_dilate")
        )
    ]


def _parts(text: str | None) -> list[int]:
    return [int(p) for p in text.split("x")] if text else []


class _DimLabels(TypedDict):
    """Positions of a convolution's dims in its operands and output, from `dim_labels`."""

    lhs_batch: int
    lhs_feature: int
    out_feature: int
    lhs_spatial: list[int]
    rhs_spatial: list[int]
    out_spatial: list[int]


def _dim_labels(text: str) -> _DimLabels:
    """Positions of batch, feature and spatial dims in `b01f_01io->b01f` (lhs_rhs->output)."""
    lhs, rest = text.split("_", 1)
    rhs, out = rest.split("->")
    digits = sorted(c for c in lhs if c.isdigit())
    return {
        "lhs_batch": lhs.index("b"),
        "lhs_feature": lhs.index("f"),
        "out_feature": out.index("f"),
        "lhs_spatial": [lhs.index(d) for d in digits],
        "rhs_spatial": [rhs.index(d) for d in digits],
        "out_spatial": [out.index(d) for d in digits],
    }


def valid_positions(input_size: int, kernel: int, output: int, dim: WindowDim) -> int:
    """The (output position, kernel tap) pairs of one spatial dim whose input index is inside the
    (base-dilated, padded) input: XLA's two closed forms, else counted tap by tap."""
    if (
        input_size == output
        and kernel == output
        and input_size == dim.base_dilation
        and dim.window_dilation == 1
        and max(1, input_size - 1) == dim.stride
        and dim.pad_low == 0
        and dim.pad_high == 0
    ):
        return input_size
    if (
        input_size == 1
        and kernel == output
        and dim.window_dilation == 1
        and dim.base_dilation == 1
        and dim.stride == 1
        and dim.pad_high == output - 1
        and dim.pad_low == output - 1
    ):
        return output
    count = 0
    for tap in range(kernel):
        offset = tap * dim.window_dilation - dim.pad_low
        if dim.base_dilation == 1:  # the outputs whose input index falls inside: one range per tap
            first, last = -(offset // dim.stride), (input_size - 1 - offset) // dim.stride
            count += max(0, min(output - 1, last) - max(0, first) + 1)
            continue
        for position in range(output):
            undilated = position * dim.stride + offset
            if undilated % dim.base_dilation == 0 and 0 <= undilated // dim.base_dilation < input_size:
                count += 1
    return count
