"""Triton kernels (`__gpu$xla.gpu.triton`)."""

from __future__ import annotations

from xlainspect.analysis.cost.custom_calls.rule import Rule, custom_call_bytes
from xlainspect.analysis.cost.model import Cost
from xlainspect.analysis.cost.operands import arrays, result
from xlainspect.analysis.cost.static import Analysis
from xlainspect.hlo.model import Instruction


def triton(analysis: Analysis, instruction: Instruction, index: dict[str, Instruction]) -> Cost | None:
    """A Triton kernel: the FLOPs of the computation it was emitted from; bytes its operands and results.
    A kernel given only as Triton IR in its backend_config (jax's Pallas calls) names no computation."""
    if not instruction.called_computations:
        return None
    inside = analysis.computation(analysis.called(instruction), flops_only=True)
    return custom_call_bytes(instruction, index, arrays(result(instruction))) + Cost(
        inside.flops, inside.transcendentals
    )


RULE = Rule(triton, targets=frozenset({"__gpu$xla.gpu.triton"}))
