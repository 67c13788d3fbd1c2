"""Custom calls by target, as xla/service/gpu/model/gpu_hlo_cost_analysis.cc `HandleCustomCall` counts
them: one rule per module, composed in `RULES`; a target no rule matches counts 0 and is listed."""

from __future__ import annotations

from xlainspect.analysis.cost.custom_calls import dnn_convolution, fused_attention, gemm, triton
from xlainspect.analysis.cost.custom_calls.rule import Rule

RULES: tuple[Rule, ...] = (gemm.RULE, dnn_convolution.RULE, fused_attention.RULE, triton.RULE)
"""Their targets are disjoint: the first that matches is the only one."""


def rule_for(target: str) -> Rule | None:
    """The rule that counts `target`, or None."""
    return next((rule for rule in RULES if rule.matches(target)), None)
