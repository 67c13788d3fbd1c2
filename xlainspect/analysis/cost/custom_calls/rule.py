"""What a custom-call rule is (the targets it counts and how), and what the rules share: the bytes of a
call (its operands read, the results that are not scratch written) and its JSON backend_config."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from xlainspect.analysis.cost.model import Cost
from xlainspect.analysis.cost.operands import operand
from xlainspect.analysis.cost.sizes import accessed, size, total
from xlainspect.analysis.cost.static import Analysis
from xlainspect.hlo.attributes import decode_json
from xlainspect.hlo.model import Instruction
from xlainspect.hlo.shape import Shape

Count = Callable[[Analysis, Instruction, dict[str, Instruction]], "Cost | None"]
"""One execution of a call, or None where the call lacks what the rule reads (it then counts 0)."""


@dataclass(frozen=True, slots=True)
class Rule:
    """How GpuHloCostAnalysis counts the custom calls of some targets (xla/service/gpu/cublas_cudnn.h
    names them): those named in `targets`, and those whose name starts with one of `prefixes`."""

    count: Count
    targets: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()

    def matches(self, target: str) -> bool:
        return target in self.targets or target.startswith(self.prefixes)


def custom_call_bytes(instruction: Instruction, index: dict[str, Instruction], written: list[Shape]) -> Cost:
    """Every operand read, the `written` results written."""
    read = [size(operand(instruction, k, index)) for k in range(len(instruction.operands))]
    return accessed(read, total([size(shape) for shape in written]))


def backend_config(instruction: Instruction, key: str) -> dict[str, Any] | None:
    """The object under `key` of the call's JSON backend_config; None without one."""
    config = (decode_json(instruction.attributes.get("backend_config")) or {}).get(key)
    return cast("dict[str, Any]", config) if isinstance(config, dict) else None  # a JSON object: str keys


def without_workspace(outputs: list[Shape]) -> list[Shape]:
    """The results but the s8/u8 workspace XLA appends to a cuBLAS or cuDNN call's tuple (scratch)."""
    if len(outputs) > 1 and outputs[-1].dtype in ("s8", "u8"):
        return outputs[:-1]
    return outputs
