"""cuBLAS and cuBLASLt gemms (`__cublas$gemm`, `__cublas$lt$matmul...`: XLA's `IsCublasGemm`,
`IsCublasLtMatmul`, `IsCublasLtMatmulF8`)."""

from __future__ import annotations

import math
from typing import Any

from xlainspect.analysis.cost.custom_calls.rule import Rule, backend_config, custom_call_bytes, without_workspace
from xlainspect.analysis.cost.model import Cost
from xlainspect.analysis.cost.operands import arrays, operand, result
from xlainspect.analysis.cost.static import Analysis
from xlainspect.hlo.model import Instruction


def gemm(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost | None:
    """cuBLAS: XLA's `GetDotFlops` of operand 0 and the result (the first tuple element) with the
    backend_config's dot dimension numbers: 2 x result elements (batch included) x the contracted
    size, as GpuHloCostAnalysis counts it; plus what XLA's HloCostAnalysis counts for the elementwise
    ops the call folds in (`_epilogue`). C is read as an operand; the workspace XLA appends to the
    result is scratch, not written."""
    config = backend_config(instruction, "gemm_backend_config")
    if config is None:
        return None
    numbers: dict[str, Any] = config.get("dot_dimension_numbers") or {}
    lhs = operand(instruction, 0, index)
    width = math.prod(lhs.dims[int(d)] for d in numbers.get("lhs_contracting_dimensions", ()))
    outputs = without_workspace(arrays(result(instruction)))
    elements = outputs[0].num_elements
    flops, transcendentals = _epilogue(config)
    return custom_call_bytes(instruction, index, outputs) + Cost(
        2 * elements * width + flops * elements, transcendentals * elements
    )


#: Per output element, (flops, transcendentals) of each part of a cuBLASLt epilogue
#: (xla/service/gpu/backend_configs.proto `GemmBackendConfig.Epilogue`) as XLA's HloCostAnalysis counts
#: the ops it replaces: the bias add, relu's maximum, tanh-approximated GELU (jax.nn.gelu: four
#: multiplies and x**3's two, two adds, tanh), SiLU (logistic and a multiply); AUX only adds an output.
_EPILOGUE_PARTS = {"BIAS": (1, 0), "RELU": (1, 0), "GELU": (8, 1), "SILU": (1, 1), "AUX": (0, 0), "DEFAULT": (0, 0)}


def _epilogue(config: dict[str, Any]) -> tuple[int, int]:
    """(flops, transcendentals) per output element of a gemm's alpha, beta and epilogue: alpha != 1 a
    multiply, beta != 0 an add of C (and a multiply unless beta is 1), then the epilogue's parts."""
    flops = int(config.get("alpha_real", 1) != 1 or config.get("alpha_imag", 0) != 0)
    beta = config.get("beta", 0)
    flops += (beta != 0) + (beta not in (0, 1))
    transcendentals = 0
    for part in str(config.get("epilogue", "DEFAULT")).split("_"):
        part_flops, part_transcendentals = _EPILOGUE_PARTS.get(part, (0, 0))
        flops += part_flops
        transcendentals += part_transcendentals
    return flops, transcendentals


RULE = Rule(gemm, targets=frozenset({"__cublas$gemm"}), prefixes=("__cublas$lt$matmul",))
