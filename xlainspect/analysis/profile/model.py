"""What `profile` finds: steps, op times, device time per function, unplaced kernels, autotuning."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xlainspect.analysis.chips import Chip
from xlainspect.analysis.profile.compiles import CompileEvent
from xlainspect.dump.directory import SkippedFile
from xlainspect.dump.xplane import TraceEvent

if TYPE_CHECKING:
    from xlainspect.analysis.hosts import JobReport  # which reads profiles


@dataclass(slots=True)
class Step:
    """One training step found in a profile: its number, time and device work."""

    number: int
    start_seconds: float
    """Seconds since the trace's first event."""
    seconds: float
    busy_seconds: float = 0.0
    """Time some kernel of a compiled function ran (overlaps counted once)."""
    idle_seconds: float = 0.0
    """Gaps between those kernels, from the step's first kernel to its last."""
    kernels: int = 0


@dataclass(slots=True)
class OpTime:
    """One HLO op's measured time in a profile, beside its roofline time where costs are known."""

    module: str
    """`module_0002.jit_train_step` (the dump file's label) where the trace names the module id."""
    function: str
    name: str
    count: int
    total_seconds: float
    per_step_seconds: float | None
    min_seconds: float
    median_seconds: float
    max_seconds: float
    step_share: float | None
    """Of all steps' device-busy time, the fraction this op took."""
    per_step_count: float | None = None
    """Kernel executions per step, over the steps the op ran in (a loop body's ops: its trip count)."""
    kind: str | None = None
    """From the dump (`cost`): fusion kind, collective kind or opcode."""
    executions: float | None = None
    """Runs per call of its module, from the dump (`cost`): the product of the trip counts of the loops
    it runs in. A kernel per run makes `per_step_count` equal it where the function runs once a step."""
    flops: float | None = None
    """Per execution (`cost`'s `flops_per_execution`)."""
    bytes_accessed: int | None = None
    """Padded bytes read and written per execution."""
    measured_bytes_per_second: float | None = None
    roofline_seconds: float | None = None
    """Per execution, on the chip."""
    efficiency: float | None = None
    """Roofline time / measured time per execution: the module's runs in the trace times `executions`
    (a library call that launches several kernels is one execution)."""
    lost_seconds: float | None = None
    bound: str | None = None
    op_name: str | None = None
    source: str | None = None


@dataclass(slots=True)
class FunctionTime:
    """A compiled function's device time: the sum of its kernels, per step and in all."""

    function: str
    modules: int
    kernels: int
    seconds: float
    per_step_seconds: list[float]
    """In step order; empty without steps."""


@dataclass(slots=True)
class Unplaced:
    """Kernel executions of a compiled function that could not be put on an HLO op, and why."""

    module: str
    hlo_op: str
    kernel: str
    count: int
    seconds: float
    reason: str | None
    """None: the commands that ran them name no HLO op (a thunk without metadata)."""


@dataclass(slots=True)
class Autotuning:
    """Device work of no compiled function: what XLA ran while autotuning."""

    kernels: int
    seconds: float
    per_fusion: list[tuple[str, int, float]]
    """(fusion tuned, kernels, seconds), most time first; `(unnamed)`: buffer checks and comparisons."""


@dataclass
class ProfileReport:
    """Measured time per op, steps, functions and compiles of a profile, joined with a dump's costs."""

    paths: list[str]
    steps: list[Step]
    step_source: str
    """`step markers`, `executions of <function> (...)` or `none`."""
    ops: list[OpTime]
    """Ranked by time lost (measured - roofline) where a roofline is known, else by measured time."""
    compiles: list[CompileEvent]
    joined: list[str] = field(default_factory=list[str])
    """Modules whose ops were joined with a dump module's cost."""
    op_events: list[TraceEvent] = field(default_factory=list[TraceEvent], repr=False)
    """The op events themselves (compiled functions' kernels), for the timeline."""
    chip: Chip | None = field(default=None, repr=False)
    """The chip the roofline times are for."""
    hlo_source: str | None = None
    """Where the ops' costs come from: `dump`, `embedded in the trace`, or None (no costs)."""
    notes: list[str] = field(default_factory=list[str])
    """Why costs are missing, for stderr."""
    skipped: list[SkippedFile] = field(default_factory=list[SkippedFile])
    """`SkippedFile`s of the dump that could not be read."""
    functions: list[FunctionTime] = field(default_factory=list[FunctionTime])
    """Device time per compiled function, most first."""
    placed: tuple[int, int] = (0, 0)
    """(kernel executions on an HLO op, kernel executions of compiled functions)."""
    unplaced: list[Unplaced] = field(default_factory=list[Unplaced])
    autotuning: Autotuning | None = None
    other_device: tuple[int, float] = (0, 0.0)
    """(events, seconds) of device work of no module outside compiles: transfers of a program's inputs
    and outputs, eager copies."""
    job: JobReport | None = None
    """Every host's and device's steps, collectives' waits and the straggler (`analysis/hosts.py`)."""
