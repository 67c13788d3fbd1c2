"""What the job analysis (`analysis/profile/hosts.py`) finds, as data: each host's and device's steps, each
collective part with its wait and transfer, the aligned clocks, the straggler."""

from __future__ import annotations

from dataclasses import dataclass, field

from xlainspect.dump.directory import Dump
from xlainspect.dump.events import StatValue
from xlainspect.dump.module import SkippedFile

STRAGGLER_SHARE = 0.05
"""A host stands out when the others wait for it, beyond the next latest, more than this share of the
median step (the noise of a busy machine's scheduling stays under it; a slow input pipeline does not)."""

DUMP_OWN, DUMP_WHOLE, DUMP_FALLBACK = "own folder", "whole dump", "no folder of its name"
"""How a host's trace joined the `--dump` (`host_dumps`): its own host folder of a per-host dump, the
whole dump where it is one folder, or the whole dump where the dump has host folders but none of its name."""

Interval = tuple[float, float]
Execution = tuple[str, str, tuple[StatValue, ...]]
"""(module, op, what names the execution): one execution of a collective, the same on every participant."""


@dataclass(frozen=True, slots=True)
class HostDump:
    """The part of the `--dump` one host's trace joins with (`host_dumps`)."""

    dump: Dump | None
    path: str | None
    """Its folder (the dump's root for the whole dump); None without a dump."""
    match: str | None
    """`DUMP_OWN`, `DUMP_WHOLE` or `DUMP_FALLBACK`; None without a dump."""


@dataclass(slots=True)
class CollectivePart:
    """One device's part in one execution of a collective (times on its host's clock, ns since the epoch)."""

    module: str
    op: str
    kind: str
    execution: tuple[StatValue, ...]
    """What names the execution on every participant: (`run_id`,), else (step, occurrence in the step)."""
    device: str
    step: int | None
    start_ns: float
    end_ns: float
    hidden_ns: float
    """Overlapped by compute on the same device."""

    @property
    def key(self) -> Execution:
        return (self.module, self.op, self.execution)


@dataclass(slots=True)
class HostStep:
    """One step of one host (or device): its wall, device-busy time, time in collectives and, for a host,
    its idle time by cause: the host's `StepTime` (`profile`'s per-step computation) on its clock."""

    number: int
    start_ns: float
    """On the host's clock (ns since the epoch); the JSON gives `start_seconds` on the aligned clock."""
    wall_seconds: float
    busy_seconds: float
    """A host's: the union of its devices' activity (`StepTime.busy_seconds`); a device's: of its own ops."""
    idle_seconds: float
    """Wall less busy."""
    collective_seconds: float
    compiled: bool
    """A compile ran inside the step (`StepTime.compiles`)."""
    idle: dict[str, float] = field(default_factory=dict[str, float])
    """A host's idle time by cause (`model.IDLE_CAUSES`: `StepTime.breakdown`'s); empty for a device."""


@dataclass(slots=True)
class HostSummary:
    """What a worker hands back for one host: its trace summarised, no event kept."""

    host: str
    paths: list[str]
    steps: list[HostStep]
    step_seconds: float | None
    """`profile`'s median step without a compile (`StepSummary.step_seconds`)."""
    devices: dict[str, list[HostStep]]
    parts: list[CollectivePart]
    compiles: list[Interval]
    bytes_sent: dict[tuple[str, str], int | None] = field(default_factory=dict[tuple[str, str], "int | None"])
    """(module, op) -> bytes a device sends per execution, from the host's own program (its dump, else
    the HLO its trace embeds)."""
    dump: str | None = None
    """The folder of the `--dump` its ops joined with (`HostDump.path`)."""
    dump_match: str | None = None
    """How (`HostDump.match`)."""


@dataclass(slots=True)
class UnitRow:
    """A host's (or device's) steps and its per-step medians over the steps without a compile."""

    host: str
    device: str | None
    steps: list[HostStep]
    step_seconds: float | None
    """Median wall of the steps without a compile (a host's: `StepSummary.step_seconds`)."""
    busy_seconds: float | None
    idle_seconds: float | None
    idle: dict[str, float]
    """Median idle time a step by cause (`model.IDLE_CAUSES`), for a host; empty for a device."""
    collective_seconds: float | None
    wait_seconds: float | None
    """Waiting for the last peer of its collectives, a step (a host: the mean over its devices)."""
    transfer_seconds: float | None
    exposed_seconds: float | None
    clock_offset_seconds: float = 0.0
    """Added to the host's clock to put it on the first host's."""
    dump: str | None = None
    """The folder of the `--dump` the host's ops joined with (`HostDump.path`); None without a dump."""
    dump_match: str | None = None
    """`DUMP_OWN`, `DUMP_WHOLE` or `DUMP_FALLBACK`."""


@dataclass(slots=True)
class CollectiveRow:
    """One collective op on one device, over its executions in steps without a compile."""

    module: str
    op: str
    kind: str
    host: str
    device: str
    count: int
    seconds: float
    wait_seconds: float
    transfer_seconds: float
    exposed_seconds: float
    hidden_seconds: float
    bytes_per_execution: int | None = None
    """What the device sends per execution (`collectives`' `bytes_per_device`: the payload times its kind's
    ring factor), from its host's dump module (`HostDump`) or the HLO its trace embeds."""
    transfer_bytes_per_second: float | None = None
    """Those bytes over the transfer time (the wait left out)."""
    link_bandwidth: float | None = None
    """The chip's interconnect bandwidth one way (`chips.json`'s `ici_bandwidth`), where a chip is known."""


@dataclass(slots=True)
class Straggler:
    """Who the others wait for: a host (a device, where the job has one host), or None."""

    level: str
    """`host` or `device`."""
    name: str | None
    """None: no host stands out."""
    last_in_steps: int
    steps: int
    margin_seconds: float
    """Median over the steps of how much later it arrives than the latest other."""
    threshold_seconds: float
    wait_seconds: float
    """Median over the steps of the others' wait in their collectives (one device's: the mean over their
    devices)."""
    step_seconds: float
    """The job's step: the median wall of every host's steps without a compile on any host."""
    waited_in: str | None = None
    """The collective op the others wait in most (their wait summed over the steps without a compile)."""
    meanwhile: list[tuple[str, str, float]] = field(default_factory=list[tuple[str, str, float]])
    """(what, name, seconds a step) it did while the others waited, most first: `compile`, `device` (its
    own ops, not collectives), `input` (device transfers of no compiled function), `host` (an annotation
    inside its steps on its Python thread: the name; `(unannotated)`: none of these). They may overlap.
    The first is what bounds the job: the work that makes the others wait."""
    frame: str | None = None
    """The user's frame it spent most of that wait in (the Python tracer's `file.py:line function`: the
    first frame outside jax and installed packages, from the inside, `by_source.user_frame`); None
    without the Python tracer's frames or without a straggler."""
    extra_work: tuple[str, float, str | None] | None = None
    """A device straggler's (one host's devices wait for it): the op it spends the most time in a step
    beyond the median device (`hosts.extra_work`), that excess and the op's source line; None for a host
    straggler, or where no op takes it longer than the median device."""


@dataclass(slots=True)
class ClockAlignment:
    method: str
    """`recorded clocks` (kept: causal), `collective ends`, `step ends` or `one host`."""
    shared: int
    """Collective executions (or steps) the offsets are medians over."""
    offsets: dict[str, float]


@dataclass
class JobReport:
    """Every host's trace of one run: per host, per device, per collective, and the straggler."""

    hosts: list[UnitRow]
    devices: list[UnitRow]
    collectives: list[CollectiveRow]
    straggler: Straggler | None
    clock: ClockAlignment
    skipped: list[SkippedFile] = field(default_factory=list[SkippedFile])
    """Hosts whose trace could not be read (named and left out)."""
    ops_host: str = ""
    """The host whose profile (ops, steps, compiles, timeline) the report holds: the straggler's where
    one stands out, else the first host's."""
