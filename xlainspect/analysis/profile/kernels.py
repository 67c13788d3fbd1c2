"""Kernel stats: one row per distinct GPU kernel launch of the compiled functions, with its registers,
shared memory, block, grid, theoretical occupancy and whether it runs on tensor cores (XProf's
kernel_stats, with the op it ran for and a rule for tensor cores that holds on sm80/sm90 names).

* **The launch** is what XLA's CUPTI collector writes on every kernel event as `kernel_details`
  (xla/backends/profiler/gpu/kernel_details.h, `ToString`: `regs:168 static_shared:0
  dynamic_shared:232448 grid:22,5,1 block:384,1,1 occ_pct:18.75`); XProf's kernel_stats parses the same
  string (xprof's kernel_stats_utils.cc, `ParseKernelLaunchParams`) and lists one row per launch and
  TensorFlow op. A string that does not read is skipped with its reason, never guessed.
* **Occupancy** is the trace's `occ_pct`: CUPTI's `cudaOccMaxActiveBlocksPerMultiprocessor` active blocks
  x threads a block / the SM's threads. What limits it is recomputed here by the CUDA occupancy
  calculator's rules (cuda_occupancy.h: registers allocated per warp in units of 256 in each of 4 SM
  sub-partitions, shared memory per block in units of 128 bytes, warps a block, blocks an SM) with the
  SM's limits per compute capability (the CUDA C++ Programming Guide, "Technical Specifications per
  Compute Capability"). On the committed traces it gives the trace's `occ_pct` for all 771 launches.
* **Tensor cores** by the kernels' own names (`tensor_cores`), else, for XLA's Triton GEMM fusions
  whose kernels take the fusion's name, by what the op is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from xlainspect.analysis.cost.custom_calls.dnn_convolution import RULE as CONVOLUTION_CALLS
from xlainspect.analysis.cost.custom_calls.gemm import RULE as GEMM_CALLS
from xlainspect.analysis.fusions import CONTRACTIONS
from xlainspect.analysis.profile.model import CudaCoreContraction, KernelIdle, KernelSkipped, KernelStat, OpTime
from xlainspect.analysis.profile.ops import OpEvents, grouped
from xlainspect.dump.xplane import Trace


@dataclass(frozen=True, slots=True)
class SmLimits:
    """An SM's limits for one compute capability (CUDA C++ Programming Guide, "Technical Specifications
    per Compute Capability"; allocation units from cuda_occupancy.h)."""

    threads: int
    blocks: int
    registers: int
    shared_bytes: int
    """Shared memory an SM holds at the largest carveout (what CUPTI's occupancy assumes)."""
    reserved_shared_bytes: int = 0
    """Shared memory counted per block beyond the kernel's: the driver reserves 1 KB a block from compute
    capability 8.0 on (the Programming Guide), but the occupancy XLA's CUPTI collector writes (`occ_pct`)
    counts none (on mixer_profile 15 of 547 launches read one block an SM fewer with it), and the limit
    named is the one that made the trace's figure."""
    register_unit: int = 256
    shared_unit: int = 128
    sub_partitions: int = 4


SM_LIMITS = {
    (8, 0): SmLimits(2048, 32, 65536, 164 * 1024),
    (8, 6): SmLimits(1536, 16, 65536, 100 * 1024),
    (8, 9): SmLimits(1536, 24, 65536, 100 * 1024),
    (9, 0): SmLimits(2048, 32, 65536, 228 * 1024),
    (10, 0): SmLimits(2048, 32, 65536, 228 * 1024),
}
"""By compute capability (major, minor): A100 8.0, RTX 30xx 8.6, L4/L40 8.9, H100/H200 9.0, B200 10.0."""

WARP = 32

_DETAIL_KEYS = ("regs", "static_shared", "dynamic_shared", "grid", "block", "occ_pct")


@dataclass(frozen=True, slots=True)
class Launch:
    """One `kernel_details` string, read."""

    registers: int
    static_shared: int
    dynamic_shared: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    occupancy: float


def read_details(text: str) -> Launch | str:
    """A `kernel_details` string read, or why it does not read (every key of kernel_details.h's
    `ToString` once, integers, three dimensions each)."""
    pairs: dict[str, str] = {}
    for part in text.split():
        key, _, value = part.partition(":")
        pairs[key] = value
    missing = [key for key in _DETAIL_KEYS if key not in pairs]
    if missing:
        return f"no {', '.join(missing)}"
    try:
        grid = tuple(int(v) for v in pairs["grid"].split(","))
        block = tuple(int(v) for v in pairs["block"].split(","))
        numbers = [int(pairs[key]) for key in ("regs", "static_shared", "dynamic_shared")]
        occupancy = float(pairs["occ_pct"]) / 100
    except ValueError as error:
        return f"not a number: {error}"
    if len(grid) != 3 or len(block) != 3 or min(*grid, *block, *numbers) < 0:
        return "grid and block need three dimensions of no negative size"
    return Launch(
        numbers[0], numbers[1], numbers[2], (grid[0], grid[1], grid[2]), (block[0], block[1], block[2]), occupancy
    )


def kernel_stats(trace: Trace, ops: OpEvents, op_rows: list[OpTime]) -> tuple[list[KernelStat], list[KernelSkipped]]:
    """One row per module, op and distinct launch of the compiled functions' kernels (`ops`: the
    profile's op events, autotuning apart; `op` the one placement put a command buffer's kernel on,
    else its annotation), most time first; and the kernels whose `kernel_details` did not read."""
    events = trace.events
    codes = events.codes("kernel_details")[ops.rows] if len(ops) else np.zeros(0, np.int32)
    kernel = codes >= 0
    launches: dict[int, Launch] = {}
    skipped: dict[tuple[str, str], list[int]] = {}
    distinct: list[int] = np.unique(codes[kernel]).tolist()
    for code in distinct:
        read = read_details(events.strings[code])
        if isinstance(read, Launch):
            launches[code] = read
        else:
            skipped.setdefault((events.strings[code], read), []).append(code)
    good = kernel & np.isin(codes, list(launches))
    mine = ops.only(good)
    details = codes[good]
    limits = device_limits(trace)
    kinds = {(op.module, op.name): op.kind for op in op_rows}
    ran_in = {
        label: len(np.unique(mine.steady[(mine.label == label) & (mine.steady >= 0)]))
        for label in np.unique(mine.label).tolist()
    }
    order, bounds, _ = grouped([mine.label, mine.function, mine.op, mine.name, details])
    rows: list[KernelStat] = []
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        group = order[lo:hi]
        first = int(group[0])
        launch = launches[int(details[first])]
        module, op = mine.text(int(mine.label[first])), mine.text(int(mine.op[first])) if mine.op[first] >= 0 else ""
        name = mine.text(int(mine.name[first]))
        counted = group[mine.steady[group] >= 0]
        in_steps = float(mine.duration_ns[counted].sum()) / 1e9 / max(len(np.unique(mine.device[counted])), 1)
        steps = ran_in[int(mine.label[first])]
        rows.append(
            KernelStat(
                kernel=name,
                function=mine.text(int(mine.function[first])),
                module=module,
                op=op or mine.text(int(mine.hlo_op[first])),
                registers_per_thread=launch.registers,
                static_shared_bytes=launch.static_shared,
                dynamic_shared_bytes=launch.dynamic_shared,
                block=list(launch.block),
                grid=list(launch.grid),
                occupancy=launch.occupancy,
                tensor_cores=tensor_cores(name, kinds.get((module, op))),
                count=hi - lo,
                total_seconds=float(mine.duration_ns[group].sum()) / 1e9,
                seconds_per_step=in_steps / steps if steps else None,
                limited_by=limited_by(launch, limits[0]) if limits is not None else [],
                waves=waves(launch, limits) if limits is not None else None,
            )
        )
    rows.sort(key=lambda row: -row.total_seconds)
    notes = [KernelSkipped(text, why, int(np.isin(codes, found).sum())) for (text, why), found in skipped.items()]
    return rows, notes


def device_limits(trace: Trace) -> tuple[SmLimits, int] | None:
    """The first GPU's SM limits and SM count, as its plane's stats say (`compute_cap_major`, `_minor`,
    `core_count`); None where the trace names no GPU of a known compute capability."""
    for plane, stats in sorted(trace.planes.items()):
        major, minor, count = (stats.get(k) for k in ("compute_cap_major", "compute_cap_minor", "core_count"))
        if (
            plane.startswith("/device:GPU")
            and isinstance(major, int)
            and isinstance(minor, int)
            and isinstance(count, int)
        ):
            limits = SM_LIMITS.get((major, minor))
            return (limits, count) if limits is not None else None
    return None


def resident_blocks(launch: Launch, limits: SmLimits) -> dict[str, int]:
    """Blocks an SM holds at once, by each resource (cuda_occupancy.h's `cudaOccMaxBlocksPerSM*Limit`):
    `blocks` (the SM's most), `block_size` (its threads), `registers`, `shared_memory`."""
    threads = int(np.prod(launch.block))
    warps = -(-threads // WARP)
    found = {"blocks": limits.blocks, "block_size": limits.threads // WARP // max(warps, 1)}
    if launch.registers:
        per_warp = -(-launch.registers * WARP // limits.register_unit) * limits.register_unit
        per_partition = limits.registers // limits.sub_partitions // per_warp
        found["registers"] = per_partition * limits.sub_partitions // max(warps, 1)
    shared = launch.static_shared + launch.dynamic_shared
    if shared:
        per_block = -(-(shared + limits.reserved_shared_bytes) // limits.shared_unit) * limits.shared_unit
        found["shared_memory"] = limits.shared_bytes // per_block
    return found


def limited_by(launch: Launch, limits: SmLimits) -> list[str]:
    """The resources that hold the launch's occupancy below the SM's threads (none at full occupancy)."""
    found = resident_blocks(launch, limits)
    fewest = min(found.values())
    if fewest * int(np.prod(launch.block)) >= limits.threads:
        return []
    return [resource for resource, blocks in found.items() if blocks == fewest]


def waves(launch: Launch, device: tuple[SmLimits, int]) -> float:
    """The grid's blocks over what the GPU holds at once (SMs x resident blocks): under 1, SMs stay idle."""
    limits, sms = device
    return int(np.prod(launch.grid)) / (sms * max(min(resident_blocks(launch, limits).values()), 1))


_NOT_MMA = re.compile(r"ffma|sgemm|dgemm|simt|MmaSimt", re.IGNORECASE)
"""FFMA (CUDA-core) kernels: cuDNN/cuBLAS xmma kernels built on FFMA say `ffma` (`sm80_xmma_gemm_f32f32_
f32f32_f32_..._ffma_...`); cuBLAS's CUDA-core GEMMs are `*_sgemm_*`/`*_dgemm_*`; CUTLASS names its
opcode class (`cutlass_simt_*`, warp-level `MmaSimt`)."""
_MMA = re.compile(
    r"xmma|gmma|hmma|imma|wgmma|tensorop|MmaTensorOp|nvjet|[shi](884|1688|16816|8816)",
    re.IGNORECASE,
)
"""Tensor-core kernels: NVIDIA's xmma (cuDNN/cuBLAS, `sm80_xmma_*`, `sm90_xmma_*`), Hopper's gmma/wgmma,
hmma/imma, CUTLASS's `tensorop` opcode class (`cutlass_tensorop_s1688wgrad_*`, warp-level
`MmaTensorOp` in mangled names), cuBLAS's Hopper `nvjet_*` GEMMs, and the MMA instruction shapes
cuBLAS names (`s1688gemm`, `h884`, `i8816`, `s16816`)."""
_XMMA_TYPES = re.compile(r"xmma_[a-z_]*?_((?:[a-z]+\d+){2})_((?:[a-z]+\d+){2})_([a-z]+\d+)_")
"""An xmma name's types: A and B, accumulator and C, compute (`f32f32_tf32f32_f32`)."""
_NAMESPACE = re.compile(r"\w+::")
"""C++ namespaces of a demangled name, left out: cuDNN's helpers live in `xmma__5x_cudnn::` too
(`init_device_workspace_kernel`), the kernel's own name and template arguments say what it runs."""
_TRITON_GEMM = ("__triton_gemm", "__triton_nested_gemm_fusion")
"""XLA's Triton GEMM fusions (backend kinds): Triton lowers their dot to MMA/WGMMA for bf16, f16, f8 and
int8 operands, and for f32 ones as tf32 unless the dot asks for full precision (XLA's
`IsTf32Allowed`: PrecisionConfig DEFAULT, the default of jax's matmuls on GPU)."""


def tensor_cores(kernel: str, kind: str | None) -> bool:
    """Whether the kernel runs on tensor cores: by its name (namespaces apart) where it names its instruction class
    (FFMA markers first: `sm80_xmma_*_ffma_*` is an xmma kernel on CUDA cores), an xmma kernel whose
    every type is f32 on CUDA cores; else an XLA Triton GEMM fusion's kernel (by the op's `kind`,
    or a `gemm_fusion_*`/`triton_gemm*` name) on tensor cores; anything else (XLA's loop, reduction and
    transpose kernels, cuDNN's direct and helper kernels) not."""
    kernel = _NAMESPACE.sub("", kernel)
    if _NOT_MMA.search(kernel):
        return False
    types = _XMMA_TYPES.search(kernel)
    if types is not None:
        return any(not re.fullmatch(r"(?:c?f32)+", part) for part in types.groups())
    if _MMA.search(kernel):
        return True
    return kind in _TRITON_GEMM or kernel.startswith(("gemm_fusion", "triton_gemm"))


LATENCY_WARPS = 16
"""Warps an SM needs resident to hide arithmetic latency: its 4 warp schedulers each issue a warp's next
dependent instruction ~4 cycles later, so "16 active warps per multiprocessor (4 cycles, 4 warp
schedulers) are required to hide arithmetic instruction latencies" (CUDA C++ Programming Guide,
"Multiprocessor Level", compute capability 7.x on; memory latency needs more). Under it the SM idles
between a warp's instructions whatever the kernel does: what the occupancy calculator's figure is for."""


def kernels_idle(kernels: list[KernelStat], device: tuple[SmLimits, int] | None) -> list[KernelIdle]:
    """The launches that leave SMs short of work, most time first: fewer warps resident an SM than
    `LATENCY_WARPS` (by the trace's occupancy and the SM's threads), or a grid of under one wave (its
    blocks fill part of the GPU's SMs once); none where the trace names no GPU of known limits."""
    if device is None:
        return []
    threads = device[0].threads
    found: list[KernelIdle] = []
    for kernel in kernels:
        warps = kernel.occupancy * threads / WARP
        low = warps < LATENCY_WARPS
        short = kernel.waves is not None and kernel.waves < 1
        if low or short:
            found.append(KernelIdle(kernel, warps if low else None, kernel.waves if short else None))
    return found


def contraction(kind: str | None) -> bool:
    """Whether an op of this kind (`OpTime.kind`) is a matmul or convolution, in XLA's vocabulary: the
    `dot`/`convolution` opcodes (`fusions.CONTRACTIONS`), cuBLAS's and cuDNN's custom calls
    (`__cublas$gemm`, `__cublas$lt$matmul...`, `__cudnn$conv...`: xla/service/gpu/cublas_cudnn.h, as the
    cost rules name them), XLA's Triton GEMM fusions and its cuDNN fusions (`__cudnn$fusion`, a GEMM
    fusion cuDNN runs: xla/service/gpu/ir_emission_utils.h `kCuDnnFusionKind`)."""
    if kind is None:
        return False
    return (
        kind in CONTRACTIONS
        or kind in _TRITON_GEMM
        or kind == "__cudnn$fusion"
        or GEMM_CALLS.matches(kind)
        or CONVOLUTION_CALLS.matches(kind)
    )


def cuda_core_contractions(ops: list[OpTime], kernels: list[KernelStat]) -> list[CudaCoreContraction]:
    """The matmuls and convolutions (`contraction`) that ran kernels and none on tensor cores, most time
    first: a cuDNN or cuBLAS call that picked a CUDA-core (FFMA) kernel, a dot left to a loop kernel."""
    ran: dict[tuple[str, str], list[KernelStat]] = {}
    for kernel in kernels:
        ran.setdefault((kernel.module, kernel.op), []).append(kernel)
    found = [
        CudaCoreContraction(op, [k.kernel for k in ran[op.module, op.name]])
        for op in ops
        if contraction(op.kind)
        and (op.module, op.name) in ran
        and not any(k.tensor_cores for k in ran[op.module, op.name])
    ]
    return sorted(found, key=lambda c: -c.op.total_seconds)
