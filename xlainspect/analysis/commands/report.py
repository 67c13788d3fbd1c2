"""`report`: the facts of a whole dump that the report's sections word, found by the analyses the other
commands run.

Each module's facts are found once (`module_facts`, through the one per-module runner `analyse_each`)
and kept in the results cache beside its file, so a second report of a dump reads no HLO;
count-recompiles (headers only) and the profile run while workers find them. The report layer
(`xlainspect.report.dump_report`) turns a `DumpFacts` into sections, findings and pages.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from xlainspect.analysis.chips import Chip
from xlainspect.analysis.collectives import Collective, collectives
from xlainspect.analysis.commands.cost import ChipChoice, chip_for
from xlainspect.analysis.commands.profile import profile_report
from xlainspect.analysis.copies import Copy, copies
from xlainspect.analysis.cost import module_cost
from xlainspect.analysis.fusions import Fusion, fusions, unfused_ops
from xlainspect.analysis.layouts import LedgerInput, PaddingRow, padding_ledger
from xlainspect.analysis.lookup import module_label
from xlainspect.analysis.memory import ModuleMemory, assigned_memory
from xlainspect.analysis.neighbourhood import neighbourhood
from xlainspect.analysis.profile import ProfileReport
from xlainspect.analysis.profile.compare import ProfilesCompared, compare_profiles
from xlainspect.analysis.profile.hosts import job_profile
from xlainspect.analysis.profile.job import JobReport
from xlainspect.analysis.profile.model import ProfileNote
from xlainspect.analysis.recompiles import FunctionCompiles, Recompiles, count_recompiles
from xlainspect.analysis.runner import SHARE_MIN_MODULES, analyse_each
from xlainspect.analysis.tabular import Tabular
from xlainspect.analysis.timing import ModuleTime, OpTiming, Timing, module_time, timing
from xlainspect.dump.buffers import read_buffer_assignment
from xlainspect.dump.directory import Dump, load_dump
from xlainspect.dump.files import read_text
from xlainspect.dump.jaxlog import JaxLog, run_log
from xlainspect.dump.module import DumpModule, SkippedFile
from xlainspect.dump.xplane import host_traces
from xlainspect.errors import UsageError, XlaInspectError, literal
from xlainspect.progress import Progress, silent
from xlainspect.settings import cache_enabled


@dataclass(slots=True)
class ModuleFacts:
    """What the analyses found in one module's after-optimizations HLO and side files."""

    label: str
    memory: ModuleMemory | None
    """None without a buffer assignment."""
    padding: tuple[PaddingRow, ...]
    """The module's padding ledger."""
    fusions: tuple[Fusion, ...]
    unfused: dict[str, int]
    copies: tuple[Copy, ...]
    collectives: tuple[Collective, ...]
    problems: tuple[SkippedFile, ...] = ()
    """Side files that could not be read, and why; the rest of the module is analysed."""
    time: ModuleTime | None = None
    """The module's roofline (`cost`), as the time sections keep it; None without a chip (no times)."""


@dataclass
class DumpFacts(Tabular):
    """What every section of the report reads: the dump (headers: compiles), the facts of each module
    that parsed (`facts[k]` of `readable[k]`), its count-recompiles rows and where the time goes."""

    dump: Dump
    facts: list[ModuleFacts]
    readable: list[DumpModule]
    recompiles: list[FunctionCompiles]
    timing: Timing
    """Step time per function, ops, compiles: measured with a profile, else the roofline estimate."""
    skipped: list[SkippedFile]
    """The dump's own skips, then the modules' and their side files', then count-recompiles'."""
    job: JobReport | None = None
    """The profile's hosts and devices, collectives' waits and the straggler (with a profile)."""
    compared: ProfilesCompared | None = None
    """The profile against a baseline's (`report --baseline`), as `diff A B` of two profiles compares them."""
    profile: ProfileReport | None = None
    """The profile itself (with a profile): its kernels, allocators' memory and time by source line."""


def report_of(
    path: str | Path,
    *,
    profile: str | Path | None = None,
    log: str | Path | None = None,
    baseline: str | Path | None = None,
    strict: bool = False,
    progress: Progress = silent,
) -> DumpFacts:
    """The facts of the dump under `path` (the `report` command's function), with the run's profile and
    jax log (the log `capture` saved in the dump when none is given), and the profile compared with
    `baseline`'s (another run's profile: `diff baseline profile`); each module's from the results
    cache while its files are unchanged. `xlainspect.dump_report(facts)` words them; the command keeps
    the worded report whole (`report.dump_report.report_at`), not these facts (7.8 MB for 2,000
    modules, where the worded report is a few hundred KB)."""
    if baseline is not None and profile is None:
        raise UsageError("$baseline " + literal("is a profile to compare the run's with: give the run's profile too"))
    dump = load_dump(Path(path), strict=strict)
    return dump_facts(dump, progress, profile, run_log(path, log), baseline)


CHUNK_MODULES = 16
"""Modules per worker task in a dump of `SHARE_MIN_MODULES` or more: few enough to balance the load,
enough to amortise a task's round trip. Fewer modules go one at a time."""


def dump_facts(
    dump: Dump,
    progress: Progress = silent,
    trace: str | Path | None = None,
    log: JaxLog | None = None,
    baseline: str | Path | None = None,
) -> DumpFacts:
    """Every module's facts; with `trace` (a jax.profiler trace of the same run) step times are measured,
    with `log` (its jax log) compiles have seconds, with `baseline` (another run's trace) the profile is
    compared with it. count-recompiles (headers only) and the profile run
    while the modules are analysed; the files count-recompiles skips are listed after those the
    analyses skipped, in the order a serial run finds them."""
    headers = Dump(dump.root, dump.modules)
    also: list[tuple[Recompiles, ProfileReport | None]] = []
    found = analyse_each(
        dump.modules,
        module_facts,
        inputs=DumpModule.hlo_path,
        key=_analysis_key,
        blame=DumpModule.hlo_path,
        advance=progress("analysing modules", len(dump.modules)),
        chunk=CHUNK_MODULES if len(dump.modules) >= SHARE_MIN_MODULES else 1,
        meanwhile=lambda: also.append((count_recompiles(headers), _profiled(trace, dump))),
    )
    (recompiles, profiled) = also[0]
    skipped = [*dump.skipped, *found.skipped]
    skipped += [problem for f in found.results for problem in f.problems]
    times = timing([f.time for f in found.results if f.time is not None], found.modules, profiled, log)
    skipped += profiled.skipped if profiled is not None else []
    job = profiled.job if profiled is not None else None
    skipped += recompiles.skipped
    compared = compare_profiles(profile_report(baseline), profiled) if baseline and profiled is not None else None
    return DumpFacts(dump, found.results, found.modules, recompiles.functions, times, skipped, job, compared, profiled)


def _profiled(trace: str | Path | None, dump: Dump) -> ProfileReport | None:
    """`profile` of the trace against the dump (its ops joined to their costs), None without a trace."""
    if trace is None:
        return None
    profiled = job_profile(host_traces(trace), dump, _chip(next(iter(dump.modules), None)))
    if not profiled.joined:
        profiled.notes.append(ProfileNote("trace_not_joined", str(trace)))
    return profiled


def _chip(dump_module: DumpModule | None) -> Chip | None:
    """The GPU the dump was compiled for; None for a CPU dump, or a TPU dump that does not say which."""
    try:
        return chip_for(dump_module, ChipChoice())
    except UsageError:
        return None


def module_facts(dump_module: DumpModule) -> ModuleFacts:
    """Run the per-module analyses once on a parsed module; raises XlaInspectError when its HLO does not parse."""
    module = dump_module.module("after")
    problems: list[SkippedFile] = []
    memory, padding = None, ()
    side = dump_module.file(kind="buffer-assignment")
    try:
        assignment = None
        if side is not None:  # read once, for memory and padding alike
            text = read_text(side.path)
            assignment = read_buffer_assignment(text, str(side.path))
            memory = assigned_memory(dump_module, text, assignment)
        ledger = LedgerInput(module, dump_module.name or module.name, dump_module.platform, assignment)
        padding = tuple(padding_ledger([ledger]))
    except XlaInspectError as error:  # a side file (buffer assignment, live ranges) unreadable: say which
        problems.append(SkippedFile(side.path if side is not None else dump_module.hlo_path(), str(error)))
    return ModuleFacts(
        module_label(module),
        memory,
        padding,
        tuple(fusions(module)),
        dict(unfused_ops(module).most_common()),
        tuple(copies(module, dump_module.platform)),
        tuple(collectives(module)),
        tuple(problems),
        module_time(module_cost(module, chip)) if (chip := _chip(dump_module)) else None,
    )


def _analysis_key(dump_module: DumpModule) -> str:
    """The results cache's name for this module's facts; with the cache off, no side file is stat'ed."""
    return f"report:{_side_stamp(dump_module)}" if cache_enabled() else "report"


def _side_stamp(dump_module: DumpModule) -> str:
    """Size and mtime of the side files, so cached facts follow a buffer assignment rewritten on its own."""
    stamps: list[str] = []
    for dump_file in dump_module.files:
        if dump_file.kind != "hlo":
            with contextlib.suppress(OSError):
                stat = dump_file.path.stat()
                stamps.append(f"{dump_file.kind}:{stat.st_size}:{stat.st_mtime_ns}")
    return ",".join(sorted(stamps))


class HloLine(NamedTuple):
    """One line of HLO text an op's page shows."""

    number: int
    text: str
    is_op: bool
    """The line of the op itself (not of a neighbour)."""


@dataclass(slots=True)
class OpLines:
    """An op's HLO lines and those of its neighbourhood (as `graph --around` finds it), and the file they
    are in."""

    path: str
    lines: tuple[HloLine, ...]


NEIGHBOURHOOD_DEPTH = 2
"""Edges from the op, either way, as `graph --around` draws by default."""
NEIGHBOURHOOD_LINES = 24
"""Past this many instructions at that depth, the page shows the op's direct neighbours only."""


def op_lines(facts: DumpFacts, op: OpTiming) -> OpLines | None:
    """The op's HLO line and its neighbourhood within `graph --around`'s default depth; None where its
    module or instruction is not in the dump (a profile of another run). Its module's files were read by
    its analyses: an error reading them now (a file changed meanwhile) is raised, not a missing op."""
    dump_module = next((m for m in facts.readable if m.label == op.module), None)
    if dump_module is None:
        return None
    name = f"{op.computation}/{op.name}" if op.computation else op.name
    module = dump_module.module("after")  # a readable module: its analyses parsed it
    try:
        graph = neighbourhood(module, name, NEIGHBOURHOOD_DEPTH)
    except XlaInspectError:  # no one instruction of that name here: the profile's op is of another program
        return None
    if len(graph.nodes) > NEIGHBOURHOOD_LINES:  # a busy op (a loop body's): its operands and users only
        graph = neighbourhood(module, name, 1)
    path = dump_module.hlo_path("after")
    text = read_text(path).splitlines()
    lines = tuple(
        HloLine(i.line, text[i.line - 1].strip() if 0 < i.line <= len(text) else i.name, i.name == op.name)
        for i in graph.nodes.values()
    )
    return OpLines(str(path), lines)
