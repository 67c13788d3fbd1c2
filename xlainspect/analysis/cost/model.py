"""What `cost` answers: XLA's properties of an instruction (`Cost`), one op's row (`OpCost`), a while
loop (`Loop`) and a module's totals (`ModuleCost`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from xlainspect.analysis.chips import Chip


class Cost(NamedTuple):
    """XLA's properties of one instruction or computation: FLOPs, transcendentals and the bytes accessed
    (of which `written` are outputs), logical and with tile padding. A tuple: big modules make millions."""

    flops: float = 0
    transcendentals: float = 0
    bytes: int = 0
    written: int = 0
    padded_bytes: int = 0
    padded_written: int = 0

    def __add__(self, other: Cost) -> Cost:  # type: ignore[override]  (elementwise, not concatenation)
        return Cost(
            self[0] + other[0],
            self[1] + other[1],
            self[2] + other[2],
            self[3] + other[3],
            self[4] + other[4],
            self[5] + other[5],
        )

    def scaled(self, factor: float) -> Cost:
        """The flops and transcendentals of `factor` applications (bytes are the caller's own)."""
        return Cost(self.flops * factor, self.transcendentals * factor)

    def times(self, factor: int) -> Cost:
        """Every property of `factor` executions (a loop body's bytes are moved on each trip)."""
        return Cost(
            self.flops * factor,
            self.transcendentals * factor,
            self.bytes * factor,
            self.written * factor,
            self.padded_bytes * factor,
            self.padded_written * factor,
        )


NO_COST = Cost()


@dataclass(slots=True)
class OpCost:
    """One op's cost per call of its module (what it executes: per execution times `executions`),
    XLA's static count beside it, and its roofline time per call on a chip."""

    module: str
    computation: str
    name: str
    opcode: str
    kind: str
    """Fusion kind (backend kind where printed), collective kind, custom-call target, or the opcode."""
    dtype: str
    """The output element type the chip's peak is chosen by."""
    executions: int
    """Runs per call: the product of trip counts along its call chain (0 in a conditional's branch
    that is not counted)."""
    trip_count: int | None
    """Trips of the innermost while loop it runs in (1 outside loops); None where a loop on its chain
    has no known count (it is counted once)."""
    flops: float
    transcendentals: float
    bytes_read: int
    bytes_written: int
    padded_bytes_read: int
    padded_bytes_written: int
    flops_per_execution: float
    bytes_per_execution: int
    """Bytes read and written by one execution (logical)."""
    xla_flops: float
    """XLA's HloCostAnalysis of the op (once; -1 for a custom call, XLA's "unknown")."""
    xla_transcendentals: float
    xla_bytes_accessed: int
    arithmetic_intensity: float | None
    """FLOPs per byte moved (padded bytes); None when no bytes move."""
    collective_bytes: int | None
    """`bytes_per_device` of a collective (from `collectives`), per execution."""
    compute_seconds: float | None
    memory_seconds: float | None
    collective_seconds: float | None
    roofline_seconds: float | None
    """Per call: the largest of the three, times `executions`; None without a chip."""
    bound: str | None
    """compute, memory or collective."""
    op_name: str | None
    source: str | None
    shape: str = ""
    """Its output shape without layout (`f32[256,128]`): with op_name and opcode, what names the op in
    another compile of the program, where instruction names differ (`diff` of two profiles)."""


@dataclass(slots=True)
class Loop:
    """A while loop of the module: its trip count (None: not known, counted once) and its runs per call."""

    name: str
    computation: str
    trip_count: int | None
    executions: int
    op_name: str | None


@dataclass(slots=True)
class ModuleCost:
    """A module's cost per call, XLA's static count beside it, its roofline time and bound, and its ops."""

    module: str
    function: str
    flops: float
    """FLOPs one call executes (loops times their trip counts, custom calls by target)."""
    transcendentals: float
    bytes_accessed: int
    padded_bytes_accessed: int
    xla_flops: float
    """XLA's `flops` for the module (HloCostAnalysis over the entry: loop bodies once, custom calls -1)."""
    xla_transcendentals: float
    xla_bytes_accessed: int
    roofline_seconds: float | None
    """Per call: the sum of the ops' roofline times, each times its executions."""
    bound: str | None
    """The bound that holds the most of that time."""
    chip: str | None
    """The chip's key (`h100`, `tpu-v5e`; `custom` for --peak-flops/--hbm-bandwidth alone)."""
    chip_figures: Chip | None = field(hash=False, repr=False)
    """The figures the times were computed with (overrides included)."""
    ops: list[OpCost] = field(hash=False, repr=False)
    """The counted ops, slowest first (the `top` asked for)."""
    loops: list[Loop] = field(default_factory=list[Loop], hash=False, repr=False)
    branches: dict[str, int] = field(default_factory=dict[str, int], hash=False, repr=False)
    """Conditional name -> the index of the branch counted (the most expensive)."""
    not_counted: dict[str, int] = field(default_factory=dict[str, int], hash=False, repr=False)
    """Custom-call target -> calls counted as 0 (no rule for the target)."""
