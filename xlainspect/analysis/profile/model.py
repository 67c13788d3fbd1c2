"""What `profile` finds: steps, op times, device time per function, unplaced kernels, autotuning."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from xlainspect.analysis.chips import Chip
from xlainspect.analysis.profile.compiles import CompileEvent
from xlainspect.analysis.profile.ops import OpEvents
from xlainspect.analysis.tabular import Tabular
from xlainspect.dump.module import SkippedFile

if TYPE_CHECKING:
    from xlainspect.analysis.profile.job import JobReport  # which reads profiles

DEVICE_KINDS = ("compute", "collectives", "copies")
"""What the device was busy with: kernels of compiled functions, NCCL collectives, memcpy and memset."""
IDLE_CAUSES = ("compile", "autotune", "input", "launch", "host")
"""Why the device was idle (`breakdown.py` decides, in this order of precedence)."""
CATEGORIES = DEVICE_KINDS + IDLE_CAUSES
"""The keys of `StepTime.breakdown`, in the order a stacked bar draws them."""
BOUNDS = ("device", "compile", "input", "launch", "host")
"""What a step waits on (`StepTime.bound`): the device's work, or one of the causes of its idling."""


@dataclass(frozen=True, slots=True)
class ProfileNote:
    """Why a profile's ops have no costs, as data (`report.views.profile.note_text` words it): the trace's
    embedded HLO did not read (`embedded_hlo`: `where` is the module, `error` why), or none of the traced
    modules is in the dump given (`dump_not_joined`: `where` is the dump) or in the report's dump
    (`trace_not_joined`: `where` is the trace), or they are in the dump given but none of their files
    read (`dump_unreadable`: `where` is the dump, `error` the files skipped)."""

    kind: Literal["embedded_hlo", "dump_not_joined", "dump_unreadable", "trace_not_joined"]
    where: str
    error: str = ""


@dataclass(slots=True)
class StepTime:
    """One step as the user waits for it: its wall time, the device's share, and where the rest went."""

    number: int
    start_seconds: float
    """Seconds since the trace's first event."""
    wall_seconds: float
    """The step marker's span; without markers, from the start (host launch) of one execution of the
    step function to the next (the last step: to the end of its execution)."""
    busy_seconds: float = 0.0
    """The device busy with the program: the union of its device activity in the step, autotuning apart."""
    idle_seconds: float = 0.0
    """`wall_seconds - busy_seconds`: never more than the wall."""
    breakdown: dict[str, float] = field(default_factory=dict[str, float])
    """Seconds per category of `CATEGORIES`: device time by kind and idle time by cause; the values add up
    to `wall_seconds` (each instant of the step is in one category)."""
    host: dict[str, float] = field(default_factory=dict[str, float])
    """`breakdown["host"]` by what the host ran (a Python function, `jit_f` dispatched, a PjRt call;
    `(untraced)` where the host's thread shows no event: Python with the profiler's Python tracer off),
    most first."""
    bound: str | None = None
    """Of `BOUNDS`, the largest share of the wall (`breakdown.bound_of`); None for a step of no time."""
    compiles: int = 0
    """Compiles that ran during the step (a step with one is left out of `ProfileReport.step_seconds`)."""
    kernels: int = 0
    """Device events of compiled functions that ran in the step."""


@dataclass(slots=True)
class StepSummary:
    """The step the user waits for, in one line: the median step of those with no compile inside."""

    function: str | None
    """The function the steps run: the one with most of the device time in them (None: no kernel ran,
    or no function has most of it: a step of eager ops)."""
    marker: str | None
    """The step markers' name (`StepTraceAnnotation("train")`: `train`); None without markers."""
    step_seconds: float
    """The median wall time of the steps with no compile inside (of an even number, the mean of the middle
    two); of every step where each one compiled."""
    typical: StepTime
    """The typical step of the same steps: each of its figures (wall, busy, idle, every category of the
    breakdown, every name the host ran) the median of that figure over them, its bound from those medians.
    A figure no larger than another in every step has a median no larger: its parts stay within its wall."""
    median_step: int
    """The number of the step whose wall is nearest `step_seconds` (the shorter of two as near): its
    breakdown, bound and host time are the summary's."""
    steps: int
    """How many steps the median is of."""
    compiled: int
    """Steps left out: a compile ran inside them."""


@dataclass(slots=True)
class OpTime:
    """One HLO op's measured time in a profile, beside its roofline time where costs are known."""

    module: str
    """`module_0002.jit_train_step` (the dump file's label) where the trace names the module id."""
    function: str
    name: str
    kernels: int
    """Kernel executions in the trace (a cuDNN call may launch several for one execution of the op)."""
    total_seconds: float
    """All its kernels' time in the trace, summed over every device: seconds a run of the whole host."""
    seconds_per_step: float | None
    """One device's time in it a step: its kernels' time in the steps its module ran in that count
    (`steps.steady_steps`: those without a compile) over those steps, the mean over the devices that ran
    it (`devices`), so no more than a step's wall. The compiling step's runs are in `total_seconds` only."""
    seconds_per_step_median_device: float | None
    """The same, the median over those devices."""
    seconds_per_step_max_device: float | None
    """The same, the slowest device's (`slowest_device`)."""
    devices: int
    """The devices that ran it: the denominator of its per-device figures."""
    slowest_device: str | None
    """The device with the most time in it a step (None without steps)."""
    min_kernel_seconds: float
    median_kernel_seconds: float
    max_kernel_seconds: float
    step_share: float | None
    """Of the steps' device-busy time (the union of the devices' activity), the fraction one device spent
    in this op (the mean over the devices that ran it)."""
    steps: int = 0
    """The steps its module ran in that count (`steps.steady_steps`): the denominator of its `_per_step`
    figures."""
    kernels_per_step: float | None = None
    """Kernel executions a step on one device (the mean over the devices that ran it), over the steps its
    module ran in (a loop body's ops: its trip count)."""
    kind: str | None = None
    """From the dump (`cost`): fusion kind, collective kind or opcode."""
    executions_per_call: float | None = None
    """Runs per call of its module, from the dump (`cost`): the product of the trip counts of the loops
    it runs in. A kernel per run makes `kernels_per_step` equal it where the function runs once a step."""
    executions_in_trace: float | None = None
    """Its module's runs in the trace times `executions_per_call` (a library call of several kernels is
    one execution)."""
    seconds_per_execution: float | None = None
    """One device's time in one execution, over the steps that count (`seconds_per_step` over its
    executions a step: a compile's step's slower first runs left out); `total_seconds /
    executions_in_trace` where it ran in no step. What the roofline time is compared with."""
    flops: float | None = None
    """Per execution (`cost`'s `flops_per_execution`)."""
    bytes_accessed: int | None = None
    """Padded bytes read and written per execution."""
    measured_bytes_per_second: float | None = None
    roofline_seconds: float | None = None
    """Per execution, on the chip, never below the chip's kernel launch cost (`Chip.launch_seconds`)."""
    efficiency: float | None = None
    """`roofline_seconds / seconds_per_execution`: the one figure of how far an op is from its roofline
    (the report's "N x its roofline" is 1 / efficiency)."""
    lost_seconds: float | None = None
    """`total_seconds - roofline_seconds * executions_in_trace`: seconds a run above the roofline."""
    lost_seconds_per_step: float | None = None
    """The same over the steps its module ran in: seconds a step."""
    bound: str | None = None
    op_name: str | None = None
    source: str | None = None
    wait_seconds: float | None = None
    """A collective's: of `total_seconds`, its devices' wait for the last peer to arrive (`analysis/profile/hosts.py`);
    the rest moved data. None for an op that is not a collective."""
    wait_seconds_per_step: float | None = None
    """One device's wait a step (the mean over its devices), over the steps its module ran in that count:
    of `seconds_per_step`."""
    opcode: str | None = None
    shape: str | None = None
    """Its output shape without layout, from the dump (`cost`): with `function`, `op_name` and `opcode`,
    what matches it in another run's profile (`diff A B` of two profiles)."""


@dataclass(slots=True)
class FunctionTime:
    """A compiled function's device time: the sum of its kernels, one device's a step and every device's
    in all."""

    function: str
    modules: int
    kernels: int
    seconds: float
    """Its kernels' seconds in the trace, summed over every device."""
    seconds_by_step: list[float]
    """One device's seconds in it in each step (the mean over the devices that ran it), in step order, a
    compile's step too; empty without steps."""
    seconds_per_step: float | None = None
    """One device's seconds in it a step, over the steps it ran in that count (`steps.steady_steps`: those
    without a compile): the mean over the devices that ran it (None: no steps)."""
    seconds_per_step_median_device: float | None = None
    seconds_per_step_max_device: float | None = None
    """The slowest device's (`slowest_device`)."""
    devices: int = 1
    """The devices that ran it."""
    slowest_device: str | None = None


@dataclass(frozen=True, slots=True)
class NotPlaced:
    """Why kernels of a command buffer were put on no HLO op (`report.views.profile.not_placed_text`
    words it): no dump was given (`no_dump`), the dump has no thunk sequence of the module
    (`no_sequence`), the buffer is not one of its command buffers (`not_a_command_buffer`), the buffer
    has no command of the kernels' kind (`no_command`), or more events than commands of their kind and
    none between their neighbours (`ambiguous`: `events` of `work` for `commands`)."""

    kind: Literal["no_dump", "no_sequence", "not_a_command_buffer", "no_command", "ambiguous"]
    work: str = ""
    """no_command, ambiguous: the kind of work (kernel, copy, memset...)."""
    events: int = 0
    commands: int = 0


@dataclass(slots=True)
class Unplaced:
    """Kernel executions of a compiled function that could not be put on an HLO op, and why."""

    module: str
    hlo_op: str
    kernel: str
    count: int
    seconds: float
    reason: NotPlaced | None
    """None: the commands that ran them name no HLO op (a thunk without metadata)."""


@dataclass(slots=True)
class Autotuning:
    """Device work of no compiled function: what XLA ran while autotuning."""

    kernels: int
    seconds: float
    per_fusion: list[tuple[str, int, float]]
    """(fusion tuned, kernels, seconds), most time first; `(unnamed)`: buffer checks and comparisons."""


@dataclass(slots=True)
class KernelStat:
    """One distinct GPU kernel launch of an op of a compiled function (`analysis/profile/kernels.py`):
    its resources as the trace's `kernel_details` says, its occupancy, tensor cores and time."""

    kernel: str
    function: str
    module: str
    op: str
    """The HLO op it ran for: placed from the dump's thunk sequence for a CUDA graph's kernels, else
    the event's `hlo_op` (a command buffer, `command_buffer_3`, where no dump placed it)."""
    registers_per_thread: int
    static_shared_bytes: int
    dynamic_shared_bytes: int
    block: list[int]
    """[x, y, z] threads."""
    grid: list[int]
    """[x, y, z] blocks."""
    occupancy: float
    """Theoretical occupancy, a fraction: the trace's `occ_pct` / 100 (CUPTI's occupancy calculator)."""
    tensor_cores: bool
    """It runs on tensor cores (`kernels.tensor_cores`: by its name, else XLA's Triton GEMM fusions)."""
    count: int
    total_seconds: float
    seconds_per_step: float | None
    """One device's time in it a step (the mean over the devices that ran it), over the steps its module
    ran in that count (`steps.steady_steps`; None: no steps)."""
    limited_by: list[str] = field(default_factory=list[str])
    """What holds the occupancy below the SM's threads (`registers`, `shared_memory`, `block_size`,
    `blocks`); empty at full occupancy or where the trace names no GPU of known limits."""
    waves: float | None = None
    """The grid's blocks over the blocks the GPU holds at once (its SMs x blocks resident an SM): under 1,
    part of the GPU idles while it runs."""


@dataclass(frozen=True, slots=True)
class KernelIdle:
    """A kernel launch that leaves the GPU's SMs short of work (`kernels.kernels_idle`): too few warps
    resident an SM to hide latency, or a grid too small to fill the SMs once."""

    kernel: KernelStat
    resident_warps: float | None
    """Warps an SM holds of it (its occupancy x the SM's threads / 32), where under `LATENCY_WARPS`."""
    waves: float | None
    """Its `waves`, where under one."""


@dataclass(frozen=True, slots=True)
class CudaCoreContraction:
    """A matmul or convolution (`kernels.contraction`) none of whose kernels runs on tensor cores."""

    op: OpTime
    kernels: list[str]
    """Its kernels' names, most time first."""


@dataclass(frozen=True, slots=True)
class KernelSkipped:
    """A `kernel_details` string that did not read, why, and on how many kernel executions."""

    details: str
    reason: str
    count: int


@dataclass(slots=True)
class LiveAllocation:
    """An allocation live at an allocator's peak: made in the trace and not freed by the peak."""

    bytes: int
    """What the allocator handed out (`allocation_bytes`)."""
    requested_bytes: int
    seconds: float
    """When it was made, since the trace's first event."""
    op: str | None = None
    """The op the trace names for it (`tf_op`), where it names one."""
    region: str | None = None
    """The trace's `region_type`, where it says one."""


@dataclass(slots=True)
class AllocatorMemory:
    """One allocator's memory over a trace, from its allocation events (`analysis/profile/allocators.py`)."""

    name: str
    peak_bytes_in_use: int
    """The allocator's own peak since the process began (its `peak_bytes_in_use` stat, the largest the
    trace holds; XProf's memory_profile `peakBytesUsageLifetime`): it may predate the trace."""
    peak_bytes_in_trace: int
    """The most in use (reserved + allocated) at any of the trace's events (XProf's `peakStats`)."""
    peak_time_seconds: float
    """When, since the trace's first event (the last event at that level)."""
    peak_step: int | None
    """The step it fell in (None: outside every step)."""
    bytes_allocated: int
    """At the peak: allocated (XProf's heap) and reserved (its stack) bytes, fragmentation (the
    allocator's: 1 - the largest free chunk / the free bytes), and the capacity (in use + available)."""
    bytes_reserved: int
    fragmentation: float
    capacity_bytes: int
    events: int
    """Its allocation and deallocation events in the trace."""
    live: list[LiveAllocation]
    """Allocations live at the peak, largest first."""
    made_before_trace_bytes: int
    """Of `bytes_allocated` at the peak, what no allocation of the trace accounts for (made before it)."""
    timeline: list[tuple[float, int]] = field(default_factory=list[tuple[float, int]])
    """(seconds, bytes in use) at each event, in time order."""


@dataclass(slots=True)
class SourceTime:
    """Device time of the ops of one jax op_name, or of one line of the user's program
    (`analysis/profile/by_source.py`)."""

    name: str | None
    """The op_name (`jit(train_step)/jvp()/conv_general_dilated`) or `file:line`; None: ops without one
    (no HLO joined, or a command buffer's kernels not placed on an op)."""
    ops: int
    kernels: int
    total_seconds: float
    seconds_per_step: float | None
    """The sum of its ops' `seconds_per_step` (each over the steps its module ran in)."""
    share: float
    """Of all the ops' time in the trace."""
    flops: float | None
    """In the trace: its ops' FLOPs per execution x executions, where the cost is known (None: of none)."""
    text: str | None = None
    """A source line's text, where its file is readable here."""


StepSource = Literal["step markers", "executions", "none"]


@dataclass
class ProfileReport(Tabular):
    """Measured time per op, steps, functions and compiles of a profile, joined with a dump's costs."""

    paths: list[str]
    steps: list[StepTime]
    step_source: StepSource
    """How the steps were found: `step markers`, `executions` of `step_function`, or `none`."""
    ops: list[OpTime]
    """Ranked by time lost (measured - roofline) where a roofline is known, else by measured time."""
    compiles: list[CompileEvent]
    joined: list[str] = field(default_factory=list[str])
    """Modules whose ops were joined with a dump module's cost."""
    op_events: OpEvents | None = field(default=None, repr=False)
    """The op events themselves (compiled functions' kernels), as columns, for the timeline and the job."""
    chip: Chip | None = field(default=None, repr=False)
    """The chip the roofline times are for."""
    hlo_source: Literal["dump", "trace"] | None = None
    """Where the ops' costs come from: the dump, the HLO the trace embeds, or None (no costs)."""
    notes: list[ProfileNote] = field(default_factory=list[ProfileNote])
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
    step_summary: StepSummary | None = None
    """The median step without a compile (None: no steps)."""
    job: JobReport | None = None
    """Every host's and device's steps, collectives' waits and the straggler (`analysis/profile/hosts.py`)."""
    step_function: str | None = field(default=None, repr=False)
    """`executions`: the function whose executions are the steps."""
    step_named: bool = field(default=False, repr=False)
    """`executions`: the function was named (`step_function`), not the one with the most device time."""
    kernels: list[KernelStat] = field(default_factory=list[KernelStat])
    """One row per op and distinct GPU kernel launch, most time first (`analysis/profile/kernels.py`)."""
    kernels_skipped: list[KernelSkipped] = field(default_factory=list[KernelSkipped], repr=False)
    """`kernel_details` strings that did not read."""
    memory: list[AllocatorMemory] = field(default_factory=list[AllocatorMemory])
    """Each allocator's memory over the trace, by name; none where the trace records no allocations."""
    by_op_name: list[SourceTime] = field(default_factory=list[SourceTime], repr=False)
    """The ops' time by jax op_name, most first."""
    by_source: list[SourceTime] = field(default_factory=list[SourceTime], repr=False)
    """The ops' time by the user's source line, most first."""
    kernels_idle: list[KernelIdle] = field(default_factory=list[KernelIdle], repr=False)
    """Launches that leave SMs short of work (too few warps resident, under one wave), most time first."""
    cuda_core_contractions: list[CudaCoreContraction] = field(default_factory=list[CudaCoreContraction], repr=False)
    """Matmuls and convolutions none of whose kernels runs on tensor cores, most time first."""
