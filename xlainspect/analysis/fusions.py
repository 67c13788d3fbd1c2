"""What is inside each `fusion`: kind, fused computation, op histogram, bytes, library calls.

Unfused ops, precisely: instructions of the entry computation and of the computations it runs
as control flow (while body/condition, conditional branches, `call`, async wrapped computations;
not fusion bodies, not reducer regions such as `to_apply` of reduce/all-reduce/sort) whose opcode
does real work of its own: everything except `fusion` itself and the opcodes in `NOT_COMPUTE`
(parameters, constants, tuples and get-tuple-element, bitcasts, control flow, custom calls,
collectives and async plumbing, ids and tokens). Before optimizations nearly every op counts;
after them what remains are the kernels the fusion passes left alone.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import cast

from xlainspect.analysis.cost import control_flow_costs
from xlainspect.analysis.lookup import control_flow_computations, instruction_index, module_label, operand_shapes
from xlainspect.analysis.rows import group_sums
from xlainspect.graph import CallEdges, module_calls, reachable
from xlainspect.hlo.attributes import backend_config_kind
from xlainspect.hlo.model import Instruction, Module

#: Opcodes that are not counted as unfused compute (structure, calls, communication, plumbing).
NOT_COMPUTE = frozenset(
    {
        "parameter",
        "constant",
        "tuple",
        "get-tuple-element",
        "bitcast",
        "fusion",
        "while",
        "conditional",
        "call",
        "custom-call",
        "after-all",
        "add-dependency",
        "opt-barrier",
        "partition-id",
        "replica-id",
        "domain",
        "infeed",
        "outfeed",
        "send",
        "send-done",
        "recv",
        "recv-done",
        "copy-start",
        "copy-done",
        "async-start",
        "async-update",
        "async-done",
        "all-reduce",
        "all-reduce-start",
        "all-reduce-done",
        "all-gather",
        "all-gather-start",
        "all-gather-done",
        "reduce-scatter",
        "all-to-all",
        "ragged-all-to-all",
        "collective-permute",
        "collective-permute-start",
        "collective-permute-done",
        "collective-broadcast",
        "collective-reduce",
    }
)

#: The matrix-multiplying opcodes `unfused_contractions` names one by one.
CONTRACTIONS = frozenset({"dot", "convolution", "ragged-dot"})


@dataclass
class Fusion:
    """One fusion instruction: its kind, the computation it fuses, the ops inside and its bytes."""

    module: str
    computation: str
    """The computation the fusion instruction sits in."""
    name: str
    kind: str
    """`kLoop`, `kInput`, `kOutput` or `kCustom` as printed."""
    backend_kind: str | None
    """The backend's fusion kind from a JSON backend_config (GPU: `__triton_gemm`, `__cudnn$fusion`...;
    CPU: `__ynn_fusion`)."""
    fused_computation: str
    root: str | None
    """Opcode of the fused computation's root."""
    ops: dict[str, int] = field(hash=False)
    """Opcode -> count inside the fused computation and what it calls (parameters excluded)."""
    output_shape: str
    output_bytes: int
    operand_bytes: int
    custom_call_targets: tuple[str, ...]
    op_name: str | None


@dataclass(slots=True)
class UnfusedContraction:
    """A dot or convolution no fusion took, with its FLOPs as XLA counts them."""

    module: str
    computation: str
    name: str
    opcode: str
    shape: str
    flops: float
    op_name: str | None


@dataclass(slots=True)
class FusionKindTotal:
    """A module's fusions of one kind: count and output bytes."""

    module: str
    kind: str
    """`backend_kind` where present, else `kind`."""
    count: int
    output_bytes: int


def fusions(module: Module) -> list[Fusion]:
    """Every fusion instruction of the module (nested fusions included), in printed order."""
    rows: list[Fusion] = []
    calls = module_calls(module)
    for computation in module.computations:
        index: dict[str, Instruction] | None = None
        for instruction in computation.instructions:
            if instruction.opcode != "fusion":
                continue
            index = index or instruction_index(computation)
            body_name = next(iter(instruction.called_computations), "")
            ops, targets = _contents(module, body_name, calls)
            body = module.computations_by_name.get(body_name)
            root = body.root if body else None
            shape = instruction.shape
            rows.append(
                Fusion(
                    module=module_label(module),
                    computation=computation.name,
                    name=instruction.name,
                    kind=instruction.attributes.get("kind", ""),
                    backend_kind=backend_config_kind(instruction.attributes.get("backend_config")),
                    fused_computation=body_name,
                    root=root.opcode if root else None,
                    ops=ops,
                    output_shape=str(shape) if shape else "",
                    output_bytes=shape.padded_bytes if shape else 0,
                    operand_bytes=sum(s.padded_bytes for s in operand_shapes(instruction, index) if s),
                    custom_call_targets=targets,
                    op_name=instruction.op_name,
                )
            )
    return rows


def _contents(module: Module, body_name: str, calls: CallEdges) -> tuple[dict[str, int], tuple[str, ...]]:
    """Op histogram and custom-call targets of a fused computation and everything it calls."""
    ops: Counter[str] = Counter()
    targets: dict[str, None] = {}
    for name in reachable(calls, [body_name]):
        computation = module.computations_by_name.get(name)
        for instruction in computation.instructions if computation else ():
            if instruction.opcode != "parameter":
                ops[instruction.opcode] += 1
            if instruction.opcode == "custom-call":
                targets[instruction.custom_call_target or ""] = None
    return dict(sorted(ops.items(), key=lambda item: (-item[1], item[0]))), tuple(targets)


def largest_fusions(rows: list[Fusion], top: int) -> list[Fusion]:
    """The `top` fusions that move the most bytes (output and operands: what a memory-bound fusion
    costs), largest first; a dump of many modules has thousands of fusions."""
    return sorted(rows, key=lambda r: -(r.output_bytes + r.operand_bytes))[:top]


def fusion_kind_totals(rows: list[Fusion]) -> list[FusionKindTotal]:
    """Count and output bytes per module and kind (the backend kind where there is one)."""
    totals = group_sums(rows, lambda r: (r.module, r.backend_kind or r.kind), ["output_bytes"])
    # cast: output_bytes is never None, so neither is its sum (group_sums allows None for any)
    return [FusionKindTotal(module, kind, *cast(list[int], sums)) for (module, kind), sums in totals.items()]


def unfused_contractions(module: Module) -> list[UnfusedContraction]:
    """Every dot and convolution outside fusions (the unfused ops of those opcodes), by name."""
    label = module_label(module)
    return [
        UnfusedContraction(
            label,
            computation.name,
            instruction.name,
            instruction.opcode,
            str(instruction.shape),
            cost.flops,
            instruction.op_name,
        )
        for computation, instruction, cost in control_flow_costs(module, lambda i: i.opcode in CONTRACTIONS)
    ]


def unfused_ops(module: Module) -> Counter[str]:
    """Opcode -> count of compute ops outside any fusion (definition in the module docstring)."""
    counts: Counter[str] = Counter()
    for name in control_flow_computations(module):
        computation = module.computations_by_name[name]
        counts.update(i.opcode for i in computation.instructions if i.opcode not in NOT_COMPUTE)
    return counts
