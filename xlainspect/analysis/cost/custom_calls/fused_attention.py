"""cuDNN fused attention: `__cudnn$fmhaSoftmax`, `...ScaleBiasSoftmax...`, `...Dropout`, `...Backward`,
`...F8` (xla/service/gpu/cublas_cudnn.h)."""

from __future__ import annotations

import math
from typing import Any

from xlainspect.analysis.cost.custom_calls.rule import Rule, backend_config, custom_call_bytes, without_workspace
from xlainspect.analysis.cost.model import Cost
from xlainspect.analysis.cost.operands import arrays, operand, result
from xlainspect.analysis.cost.static import Analysis
from xlainspect.hlo.model import Instruction


def fused_attention(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost | None:
    """CuDNN fused (flash) attention: the two batched matmuls of the score matrix, whose [batch, heads,
    q length, kv length] shape the backend_config's `intermediate_tensor_shape` holds (as jax's
    fused_attention_stablehlo.py writes it), Q's head size D and V's Dv the last dims of operands 0 and 2:
    forward Q.K^T and P.V, 2 x scores x (D + Dv); backward recomputes Q.K^T and runs dQ, dK (D) and dP,
    dV (Dv): 2 x scores x (3D + 2Dv). Masked (causal) blocks are counted as the shapes say."""
    config = backend_config(instruction, "cudnn_fmha_backend_config")
    scores_shape: dict[str, Any] = (config or {}).get("intermediate_tensor_shape") or {}
    dims = scores_shape.get("dimensions")
    if not dims:
        return None
    scores = math.prod(int(d) for d in dims)
    head, value_head = operand(instruction, 0, index).dims[-1], operand(instruction, 2, index).dims[-1]
    matmuls = 3 * head + 2 * value_head if "Backward" in (instruction.custom_call_target or "") else head + value_head
    outputs = without_workspace(arrays(result(instruction)))
    return custom_call_bytes(instruction, index, outputs) + Cost(flops=2 * scores * matmuls)


RULE = Rule(fused_attention, prefixes=("__cudnn$fmha",))
