"""cuDNN convolutions (`__cudnn$conv...`, xla/service/gpu/cublas_cudnn.h)."""

from __future__ import annotations

from xlainspect.analysis.cost.convolution import convolution_flops
from xlainspect.analysis.cost.custom_calls.rule import Rule, custom_call_bytes
from xlainspect.analysis.cost.model import Cost
from xlainspect.analysis.cost.operands import arrays, operand, result
from xlainspect.analysis.cost.static import Analysis
from xlainspect.hlo.model import Instruction


def dnn_convolution(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost:
    """CuDNN convolutions: the FLOPs of the forward convolution each computes (its input, kernel and
    output taken from operands and result by the kind, as xla/service/gpu/gpu_conv_runner.cc binds
    them: backward-input reads the output gradient and kernel and writes the input gradient,
    backward-filter reads the input and output gradient and writes the kernel gradient), from its
    window, `dim_labels` and feature groups. GpuHloCostAnalysis passes operand 0, operand 1 and the
    result as printed to `GetConvolutionFlops` whatever the kind, which for a backward convolution
    counts another convolution (on gpu_loop_twins' CNN 0.99 instead of 4.7 MFLOP for backward-input,
    half for backward-filter); we follow its rule for the forward kind and bind the backward kinds'
    roles. Bytes: operands and the result, not the scratch buffer (`GpuHloCostAnalysis` counts
    `tuple_shapes(0)` only)."""
    output = arrays(result(instruction))[0]
    first, second = operand(instruction, 0, index), operand(instruction, 1, index)
    roles = {
        "__cudnn$convBackwardInput": (output, second, first),
        "__cudnn$convBackwardFilter": (first, output, second),
    }.get(instruction.custom_call_target or "", (first, second, output))
    return custom_call_bytes(instruction, index, [output]) + Cost(flops=convolution_flops(instruction, *roles))


RULE = Rule(
    dnn_convolution,
    targets=frozenset(
        {
            "__cudnn$convForward",
            "__cudnn$convBackwardInput",
            "__cudnn$convBackwardFilter",
            "__cudnn$convBiasActivationForward",
            "__cudnn$convForwardGraph",
        }
    ),
)
