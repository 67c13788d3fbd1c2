"""What XLA did differently between two dumps: per function, metrics, op histograms and signatures.

Functions are matched by HloModule name. A function compiled several times on one side is
compared as an aggregate: counts and bytes are summed over its modules, `peak_memory` is the
largest peak of any of them, and `modules` says how many there are. Every number comes from the
analyses that own it (ops, fusions, copies, collectives, memory, layouts); the signature diff
uses count-recompiles' causes on the first module of each side, plus the entry parameters'
and result's shardings, which the `HloModule` header does not print.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, cast

from xlainspect.analysis.chips import Chip, dump_chip_key, get_chip
from xlainspect.analysis.collectives import collectives
from xlainspect.analysis.copies import copies
from xlainspect.analysis.cost import module_cost
from xlainspect.analysis.fusions import Fusion, fusion_kind_totals, fusions
from xlainspect.analysis.layouts import LedgerInput, ledger_totals, padding_ledger
from xlainspect.analysis.memory import memory_inputs, module_memory
from xlainspect.analysis.ops import opcode_histogram
from xlainspect.analysis.recompiles import Cause, name_parameters, signature_causes
from xlainspect.analysis.recompiles.model import Reason
from xlainspect.analysis.runner import analyse_each
from xlainspect.dump.directory import Dump
from xlainspect.dump.files import read_bytes
from xlainspect.dump.module import DumpModule, SkippedFile
from xlainspect.errors import UsageError, XlaInspectError, literal

if TYPE_CHECKING:
    from xlainspect.hlo.model import Module

METRICS = (
    "modules",
    "parameter_bytes",
    "instructions",
    "fusions",
    "custom_calls",
    "copies",
    "copy_bytes",
    "collectives",
    "collective_bytes",
    "peak_memory",
    "padding_waste",
    "flops",
    "roofline_seconds",
)
"""Metric names, in report order; the CI thresholds (`--max-increase`) name these."""


@dataclass(slots=True)
class MetricDelta:
    """One metric of a function on both sides of a diff."""

    name: str
    a: float | None
    """None when the side has no such data (e.g. no buffer assignment for peak_memory); an int but for
    `flops` and `roofline_seconds`."""
    b: float | None
    delta: float | None
    change: float | None
    """Relative change in percent; None when either side is unknown or `a` is 0."""


@dataclass(slots=True)
class CountDelta:
    """One opcode, fusion kind or custom-call target: how many on each side."""

    key: str
    a: int
    b: int
    delta: int


@dataclass(slots=True)
class SignatureChange:
    """One way a function's signature differs between the two dumps."""

    kind: str
    """shape, dtype, layout, donation (count-recompiles' cause kinds), sharding or result."""
    parameter: str | None
    """The entry parameter by its op_name (jax's argument path) or `#<index>`; "" where a cause is of no one
    parameter (count-recompiles' `Cause.parameter` None); None for the entry's result (its shape or sharding)."""
    a: str | None
    """The value on A's side; None where A's side has no `sharding=` (a sharding change only)."""
    b: str | None
    dims: tuple[int, ...] = ()
    """The dims whose size varies, where `reason` gives no other detail."""
    reason: Reason | None = None
    """Why, as count-recompiles' causes say it (`xlainspect.report.causes` words it)."""
    a_bytes: int | None = None
    """Logical bytes of the parameter (or result) on each side, when it is one array or tuple."""
    b_bytes: int | None = None


@dataclass(slots=True)
class ModuleShare:
    """One module's share of its function's `Profile`."""

    metrics: dict[str, float]
    """Every metric but `modules`, `peak_memory` and `roofline_seconds` (ints but `flops`)."""
    roofline_seconds: float | None
    ops: Counter[str]
    fusion_kinds: Counter[str]
    custom_call_targets: Counter[str]


@dataclass
class Profile:
    """One function on one side: its aggregate metrics and histograms."""

    name: str
    metrics: dict[str, float | None]
    ops: Counter[str]
    fusion_kinds: Counter[str]
    custom_call_targets: Counter[str]
    first: Module | None
    """The first module that parsed (its signature is the one compared)."""
    unreadable: tuple[str, ...] = ()
    """Labels of the modules that did not parse: the metrics are then unknown (None), never a sum
    of the rest, which would show as a fall (-100% for a function whose one module failed)."""


@dataclass
class FunctionDiff:
    """One function compared across two dumps: metrics, op and fusion histograms, signature."""

    name: str
    status: str
    metrics: tuple[MetricDelta, ...]
    ops: tuple[CountDelta, ...]
    """Opcodes whose count differs."""
    fusion_kinds: tuple[CountDelta, ...]
    custom_call_targets: tuple[CountDelta, ...]
    signature: tuple[SignatureChange, ...]
    unreadable: tuple[str, ...] = ()
    """`A module_0001.jit_f`: each module of the function, on either side, that did not parse; the
    function's status is then "unknown" (where it is on both sides) and its metrics None."""


@dataclass(slots=True)
class Threshold:
    """`--max-increase metric=value`: an absolute increase, or a relative one in percent."""

    metric: str
    value: float
    relative: bool

    def __str__(self) -> str:
        return f"{self.metric}={self.value:g}{'%' if self.relative else ''}"


@dataclass
class DumpsDiff:
    """`diff_dumps`' answer: per function its diff, and the files of each dump that could not be
    analysed (the dumps are not changed)."""

    functions: list[FunctionDiff]
    skipped_a: list[SkippedFile] = field(default_factory=list[SkippedFile])
    skipped_b: list[SkippedFile] = field(default_factory=list[SkippedFile])


def diff_dumps(a: Dump, b: Dump, chip: Chip | None = None, advance: Callable[[int], None] | None = None) -> DumpsDiff:
    """Every function of either dump: A's in compile order, then those only in B. `roofline_seconds` is
    on `chip`, else on the GPU a dump names (None for TPU and CPU dumps). `advance(n)` as modules are
    analysed (a progress bar's). Each module is analysed by the per-module runner (`analyse_each`):
    answered from the results cache while its files are unchanged, shared with forked workers where
    xlainspect owns the process, and once for modules of the same bytes on either side."""
    functions_a, functions_b = a.functions(), b.functions()
    sides = [m for functions in (functions_a, functions_b) for modules in functions.values() for m in modules]
    chips = {id(m): chip or _dump_chip(m) for m in sides}  # the side files read once, for the key and the roofline
    found = analyse_each(
        sides,
        lambda m: _share_and_peak(m, chips[id(m)]),
        inputs=memory_inputs,
        key=lambda m: f"diff:{(c.key if (c := chips[id(m)]) else None)}:{m.platform}",
        blame=DumpModule.hlo_path,
        advance=advance or (lambda n: None),
        meanwhile=functools.partial(_signatures, [*functions_a.values(), *functions_b.values()]),
        same=_inputs_digest,
    )
    facts = {id(m): result for m, result in zip(found.modules, found.results)}
    in_a = {m.hlo_path() for modules in functions_a.values() for m in modules}
    diffed = DumpsDiff([])
    for skipped in found.skipped:
        (diffed.skipped_a if skipped.path in in_a else diffed.skipped_b).append(skipped)
    for name in [*functions_a, *(n for n in functions_b if n not in functions_a)]:
        left = profile(name, functions_a[name], facts, diffed.skipped_a) if name in functions_a else None
        right = profile(name, functions_b[name], facts, diffed.skipped_b) if name in functions_b else None
        diffed.functions.append(diff_profiles(name, left, right))
    return diffed


def _signatures(functions: list[list[DumpModule]]) -> None:
    """Each function's first module's signature (`profile` compares them), read while a worker
    analyses modules; one that cannot be read is left to `profile`, which skips it."""
    for modules in functions:
        with contextlib.suppress(XlaInspectError):  # a prefetch: `profile` meets the error and skips the file
            modules[0].signature()


def _inputs_digest(dump_module: DumpModule) -> Hashable:
    """What a module's facts are made of: its platform and the bytes of the files they read (its HLO
    text and the memory side files). Two dumps of one program hold mostly the same modules byte for
    byte (the compiles a change did not touch, in any order and under any module id): each is analysed
    once. A module whose files cannot be read is its own key (its analysis names the problem)."""
    try:
        contents = tuple(
            hashlib.blake2b(read_bytes(path), digest_size=16).digest() for path in memory_inputs(dump_module)
        )
    except XlaInspectError:  # a key only: its analysis meets the error and skips the file
        return dump_module
    return dump_module.platform, dump_module.platform_tag, contents


class ShareAndPeak(NamedTuple):
    """What the runner finds of one module for `diff`: its facts, and its memory peak."""

    facts: ModuleShare
    peak: int | XlaInspectError | None
    """Bytes; None without a buffer assignment; the error that kept it (`profile` skips the file it names)."""


def _share_and_peak(dump_module: DumpModule, chip: Chip | None) -> ShareAndPeak:
    """`module_share` and the module's memory peak, or the error that kept the peak (`profile` skips the
    buffer assignment it names, and counts the rest); XlaInspectError where the HLO does not parse."""
    facts = module_share(dump_module, chip)
    try:
        memory = module_memory(dump_module, top=0)
        peak = memory.peak_bytes if memory is not None else None
    except XlaInspectError as error:
        peak = error
    return ShareAndPeak(facts, peak)


def profile(
    name: str,
    modules: list[DumpModule],
    facts: dict[int, ShareAndPeak],
    skipped: list[SkippedFile],
) -> Profile:
    """Aggregate metrics of one function's modules from their `facts` (by `id`; a module without any did
    not parse, and the runner skipped it); a first module whose signature cannot be read, or a buffer
    assignment that cannot, is recorded in `skipped`."""
    totals: dict[str, float] = {}
    ops: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    targets: Counter[str] = Counter()
    peaks: list[int] = []
    seconds: list[float | None] = []
    first = None
    unreadable: list[str] = []
    for dump_module in modules:
        if id(dump_module) not in facts:
            unreadable.append(dump_module.label)
            continue
        found, peak = facts[id(dump_module)]
        try:
            if first is None:
                first = dump_module.signature()
        except XlaInspectError as error:
            skipped.append(SkippedFile.of(dump_module.hlo_path(), error))
            unreadable.append(dump_module.label)
            continue
        for metric, value in found.metrics.items():
            totals[metric] = totals.get(metric, 0) + value
        seconds.append(found.roofline_seconds)
        ops.update(found.ops)
        kinds.update(found.fusion_kinds)
        targets.update(found.custom_call_targets)
        if isinstance(peak, XlaInspectError):
            assignment = dump_module.file(kind="buffer-assignment")
            skipped.append(SkippedFile.of(assignment.path if assignment else dump_module.hlo_path(), peak))
        elif peak is not None:
            peaks.append(peak)
    metrics: dict[str, float | None] = {m: None if unreadable else totals.get(m, 0) for m in METRICS}
    metrics["modules"] = len(modules)
    if not unreadable:
        metrics["peak_memory"] = max(peaks) if peaks else None
        known = [s for s in seconds if s is not None]
        metrics["roofline_seconds"] = sum(known) if seconds and len(known) == len(seconds) else None
    return Profile(name, metrics, ops, kinds, targets, first, tuple(unreadable))


def module_share(dump_module: DumpModule, chip: Chip | None) -> ModuleShare:
    """One module's share of its function's profile: metrics (FLOPs included), roofline seconds on
    `chip`, op, fusion-kind and custom-call counts."""
    module = dump_module.module()
    fusion_rows = fusions(module)
    cost = module_cost(module, chip)
    metrics = {**module_metrics(module, dump_module, fusion_rows), "flops": cost.flops}
    ops = Counter({row.opcode: row.count for row in opcode_histogram(module)})
    kinds = Counter({t.kind: t.count for t in fusion_kind_totals(fusion_rows)})
    return ModuleShare(metrics, cost.roofline_seconds, ops, kinds, _custom_call_targets(module))


def module_metrics(module: Module, dump_module: DumpModule, fusion_rows: list[Fusion]) -> dict[str, int]:
    """The summed metrics of one module (everything but `modules`, `peak_memory` and `flops`);
    `fusion_rows` are its `fusions`."""
    copy_rows = copies(module, dump_module.platform)
    collective_rows = collectives(module)
    return {
        "parameter_bytes": sum(s.logical_bytes for s in module.parameter_shapes),
        "instructions": module.instruction_count,
        "fusions": len(fusion_rows),
        "custom_calls": sum(1 for i in module.instructions() if i.opcode == "custom-call"),
        "copies": len(copy_rows),
        "copy_bytes": sum(r.bytes for r in copy_rows),
        "collectives": len(collective_rows),
        "collective_bytes": sum(r.payload_bytes for r in collective_rows),
        "padding_waste": padding_waste(module, dump_module),
    }


def _dump_chip(dump_module: DumpModule) -> Chip | None:
    """The chip the module was compiled for, as `cost` reads it from the dump (an H200's dump: h200)."""
    key = dump_chip_key(dump_module)
    return get_chip(key) if key else None


def _custom_call_targets(module: Module) -> Counter[str]:
    return Counter(i.custom_call_target or "" for i in module.instructions() if i.opcode == "custom-call")


def padding_waste(module: Module, dump_module: DumpModule) -> int:
    """Bytes lost to tile padding: the padding ledger's total for the module."""
    rows = padding_ledger([LedgerInput(module, dump_module.name or module.name, dump_module.platform)])
    return sum(t.wasted_bytes for t in ledger_totals(rows))


def diff_profiles(name: str, a: Profile | None, b: Profile | None) -> FunctionDiff:
    unreadable = tuple(f"{side} {label}" for side, p in (("A", a), ("B", b)) if p for label in p.unreadable)
    if a is None or b is None:
        status = "only_b" if a is None else "only_a"
        return FunctionDiff(name, status, _metric_deltas(a, b), (), (), (), (), unreadable)
    if unreadable:  # partial histograms would show the unread modules' ops as removed
        return FunctionDiff(name, "unknown", _metric_deltas(a, b), (), (), (), (), unreadable)
    metrics = _metric_deltas(a, b)
    ops = _count_deltas(a.ops, b.ops)
    kinds = _count_deltas(a.fusion_kinds, b.fusion_kinds)
    targets = _count_deltas(a.custom_call_targets, b.custom_call_targets)
    signature = signature_changes(a.first, b.first) if a.first is not None and b.first is not None else ()
    changed = any(m.delta for m in metrics) or ops or kinds or targets or signature
    return FunctionDiff(name, "changed" if changed else "unchanged", metrics, ops, kinds, targets, signature)


def _metric_deltas(a: Profile | None, b: Profile | None) -> tuple[MetricDelta, ...]:
    rows: list[MetricDelta] = []
    for name in METRICS:
        left = a.metrics[name] if a is not None else None
        right = b.metrics[name] if b is not None else None
        delta = right - left if left is not None and right is not None else None
        change = 100.0 * delta / left if delta is not None and left else None
        rows.append(MetricDelta(name, left, right, delta, change))
    return tuple(rows)


def _count_deltas(a: Counter[str], b: Counter[str]) -> tuple[CountDelta, ...]:
    """Keys whose count differs, largest change first."""
    rows = [CountDelta(key, a[key], b[key], b[key] - a[key]) for key in sorted(set(a) | set(b)) if a[key] != b[key]]
    return tuple(sorted(rows, key=lambda r: (-abs(r.delta), r.key)))


def signature_changes(a: Module, b: Module) -> tuple[SignatureChange, ...]:
    """Entry parameters (count-recompiles' causes: count, dtype, dims, layout, donation), shardings, result."""
    names = {p.parameter_number: p.op_name for p in a.entry.parameters}
    rows = [_from_cause(c, a, b) for c in name_parameters(signature_causes([a, b]), names)]
    rows += _sharding_changes(a, b, names)
    if str(a.result_shape) != str(b.result_shape):
        rows.append(
            SignatureChange(
                "result",
                None,
                str(a.result_shape),
                str(b.result_shape),
                a_bytes=a.result_shape.logical_bytes if a.result_shape is not None else None,
                b_bytes=b.result_shape.logical_bytes if b.result_shape is not None else None,
            )
        )
    return tuple(rows)


def _from_cause(cause: Cause, a: Module, b: Module) -> SignatureChange:
    left, right = (_text(v) for v in cause.values)
    if cause.index is None:
        return SignatureChange(cause.kind, cause.parameter or "", left, right, cause.dims, cause.reason)
    return SignatureChange(
        cause.kind,
        cause.parameter or "",
        left,
        right,
        cause.dims,
        cause.reason,
        a.parameter_shapes[cause.index].logical_bytes,
        b.parameter_shapes[cause.index].logical_bytes,
    )


def _text(value: object) -> str:
    """One of a cause's `values` (a dtype, a layout, dims...) as the diff prints it."""
    if isinstance(value, tuple):
        items = cast("tuple[object, ...]", value)  # isinstance leaves the items unknown; str() takes any
        return "[" + ",".join(map(str, items)) + "]"
    return str(value)


def _sharding_changes(a: Module, b: Module, names: dict[int | None, str | None]) -> list[SignatureChange]:
    """`sharding=` of entry parameters (by number, when both sides have as many) and of the entry root,
    which the header leaves out."""
    left, right = (_parameter_shardings(m) for m in (a, b))
    paired = sorted(left) if left.keys() == right.keys() else []
    rows = [
        SignatureChange("sharding", names.get(n) or f"#{n}", left[n] or None, right[n] or None)
        for n in paired
        if left[n] != right[n]
    ]
    root_a, root_b = (root.attributes.get("sharding", "") if (root := m.entry.root) else "" for m in (a, b))
    if root_a != root_b:
        rows.append(SignatureChange("sharding", None, root_a or None, root_b or None))
    return rows


def _parameter_shardings(module: Module) -> dict[int, str]:
    """`sharding=` of each entry parameter, by number ("" where it has none)."""
    return {
        n: p.attributes.get("sharding", "") for p in module.entry.parameters if (n := p.parameter_number) is not None
    }


_THRESHOLD = re.compile(r"^(?P<metric>[\w-]+)=(?P<value>\d+(?:\.\d+)?)(?P<percent>%?)$")
"""The user's `max_increase` argument (`diff_report`'s, as the CLI's `--max-increase`), not HLO or dump text:
the library takes the same strings as the command line, so it reads them."""


def parse_threshold(text: str, metrics: Sequence[str] = METRICS) -> Threshold:
    """`peak_memory=5%` (relative) or `collective_bytes=0` (absolute) of one of `metrics` (a dump's by
    default; `diff` of two profiles has its own); XlaInspectError names the valid metrics."""
    match = _THRESHOLD.match(text.strip())
    if match is None:
        raise UsageError(
            f"$max_increase {literal(repr(text))}: expected METRIC=NUMBER or METRIC=NUMBER% "
            f"(e.g. {metrics[0]}=5%, {metrics[-1]}=0)"
        )
    if match["metric"] not in metrics:
        raise UsageError(
            f"$max_increase {literal(repr(text))}: unknown metric {literal(repr(match['metric']))}; "
            f"valid metrics: {', '.join(metrics)}"
        )
    return Threshold(match["metric"], float(match["value"]), bool(match["percent"]))


def unknown_functions(rows: list[FunctionDiff]) -> list[FunctionDiff]:
    """The functions on both sides that a module which did not parse leaves unknown: the gate cannot pass
    them (they may hide a regression) nor fail them as one (exit 2: the input is bad)."""
    return [r for r in rows if r.status == "unknown"]


@dataclass(slots=True)
class Regression:
    """A metric of a function that grew from A to B past its threshold."""

    function: str
    metric: MetricDelta
    threshold: Threshold


def regressions(rows: list[FunctionDiff], thresholds: list[Threshold]) -> list[Regression]:
    """Each function and metric whose increase from A to B is over its threshold.

    Functions on one side only have nothing to compare and are never regressions. A relative
    threshold on a metric that was 0 in A fails on any increase.
    """
    found: list[Regression] = []
    for row in rows:
        metrics = {m.name: m for m in row.metrics}
        found += [Regression(row.name, metrics[t.metric], t) for t in thresholds if exceeds(metrics[t.metric], t)]
    return found


def exceeds(metric: MetricDelta, threshold: Threshold) -> bool:
    """Whether the metric grew from A to B by more than `threshold` allows (relative to A: from 0, any
    increase); a decrease or an unknown side never does."""
    if metric.delta is None or metric.delta <= 0 or metric.a is None:
        return False
    if threshold.relative:
        return metric.a == 0 or 100.0 * metric.delta / metric.a > threshold.value
    return metric.delta > threshold.value
