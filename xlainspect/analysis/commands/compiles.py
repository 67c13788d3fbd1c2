"""`modules`, `count-recompiles` and `capture`: the compiles of a dump, and why each recompile happened."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from xlainspect.analysis.compile_times import compile_times
from xlainspect.analysis.divergence import HostDisagreement, host_disagreements
from xlainspect.analysis.ops import instruction_count
from xlainspect.analysis.profile import CompileEvent, paired_compile_seconds, profile
from xlainspect.analysis.recompiles import (
    Budget,
    baseline_counts,
    budget_violations,
    check_budget_names,
    count_recompiles,
)
from xlainspect.analysis.runner import Paths, analyse_each, input_paths, nothing_read, remembered
from xlainspect.analysis.tabular import Tabular
from xlainspect.capture import dump_folder, run_with_dump
from xlainspect.dump.directory import Dump, listed_dump, load_dump
from xlainspect.dump.jaxlog import run_log
from xlainspect.dump.module import DumpModule, SkippedFile, scoped_reads
from xlainspect.dump.storage import is_url
from xlainspect.dump.xplane import read_trace
from xlainspect.errors import UsageError, XlaInspectError, literal
from xlainspect.progress import Progress, silent

if TYPE_CHECKING:
    from xlainspect.analysis.compile_times import CompileTimes
    from xlainspect.analysis.recompiles import FunctionCompiles, Violation
    from xlainspect.dump.jaxlog import LogCompile


@dataclass(slots=True)
class ModuleRow:
    """One compile of a dump, as `modules` lists it."""

    host: str
    module_id: int | None
    function: str | None
    platform: str | None
    stages: tuple[str, ...]
    """The HLO stages dumped, in compile order (`DumpModule.stages`)."""
    instructions: int | None
    """None where the module does not parse (it is then in `skipped`)."""
    bytes: int
    seconds: float | None = None
    cache: str | None = None
    """`hit` or `miss` of jax's persistent cache, from the run's log."""


@dataclass
class ModulesReport(Tabular):
    """The compiles of a dump, with compile seconds where the jax log gives them."""

    root: Path
    modules: list[ModuleRow]
    times: CompileTimes | None
    """Compile seconds from the run's jax log; None without one."""
    skipped: list[SkippedFile]


@remembered("path", "log")
def modules_report(
    path: Paths, *, log: Path | None = None, strict: bool = False, progress: Progress = silent
) -> ModulesReport:
    """The modules (compiles) of a dump: id, function, platform, stages, instruction count, size, and
    compile seconds when the run's jax log is there. The instructions are counted by the per-module
    runner, not kept in the results cache (the whole answer is remembered); a module whose HLO file
    cannot be read is listed with no count and skipped (`strict`: an error)."""
    dump = load_dump(input_paths(path), strict=strict)
    times = _compile_times(dump, path, log)
    counted = analyse_each(
        dump.modules,
        instruction_count,
        inputs=DumpModule.hlo_path,
        key=None,  # a line count costs less than its cache entry (`runner._answer`)
        blame=DumpModule.hlo_path,
        advance=progress("reading modules", len(dump.modules)),
        only_input=False,  # nothing read is said below, after the dump's own skipped files
    )
    skipped = [*dump.skipped, *counted.skipped]
    if dump.modules and not counted.results:
        raise nothing_read(skipped)
    if strict and counted.skipped:  # as `load_dump(strict=True)` does: the first file it could not read
        raise XlaInspectError(counted.skipped[0].reason)
    instructions = {id(m): count for m, count in zip(counted.modules, counted.results)}
    rows = [_module_row(m, instructions.get(id(m)), times) for m in dump.modules]
    return ModulesReport(dump.root, rows, times, skipped)


def _module_row(module: DumpModule, instructions: int | None, times: CompileTimes | None) -> ModuleRow:
    """A module's row, with its compile seconds where the jax log paired one with it."""
    hlo = module.hlo_path()
    platform = module.platform_tag or module.platform
    stages = tuple(module.stages)
    row = ModuleRow(module.host, module.module_id, module.name, platform, stages, instructions, hlo.stat().st_size)
    paired = times.by_module.get(module) if times else None
    return row if paired is None else _with_time(row, paired)


def _with_time(row: ModuleRow, paired: LogCompile) -> ModuleRow:
    return replace(row, seconds=paired.seconds, cache=paired.cache)


def _compile_times(dump: Dump, path: Paths, log: Path | None) -> CompileTimes | None:
    """Compile seconds from the run's jax log: `log`, else the one capture saved in the dump folder `path`
    (a folder given alone: files given name no folder, and their answer is remembered by those files
    alone); None without one."""
    found = run_log(path if isinstance(path, (str, Path)) else None, log)
    return None if found is None else compile_times(dump, found)


@dataclass
class RecompileReport(Tabular):
    """Compiles per function and why each recompile happened; `violations` are the gate's failures."""

    functions: list[FunctionCompiles]
    """Per function in first-compile order (eager ones included: see `FunctionCompiles.eager`)."""
    violations: list[Violation]
    """The budgets exceeded (a failed gate; `xlainspect.report.causes.violation_text` words them)."""
    times: CompileTimes | None
    profiled: dict[str, tuple[float | None, ...]] = field(default_factory=dict[str, tuple[float | None, ...]])
    """Measured compile seconds per function, from a jax.profiler trace (None past the trace's compiles)."""
    profile_unpaired: list[CompileEvent] = field(default_factory=list[CompileEvent])
    """The trace's compiles that made no module of the dump (`dumped_compiles`)."""
    skipped: list[SkippedFile] = field(default_factory=list[SkippedFile])
    disagreements: list[HostDisagreement] = field(default_factory=list[HostDisagreement])
    """Functions whose hosts compiled another program or another number of times: the counts shown
    are then not every host's (analysis/divergence.py)."""


def recompiles_report(
    path: Paths,
    budget: Budget | None = None,
    *,
    log: Path | None = None,
    trace: Path | None = None,
    strict: bool = False,
    progress: Progress = silent,
    scheduler: str | None = None,
) -> RecompileReport:
    """Compiles per function and why each recompile happened; `budget` makes it a gate (`violations`).
    Raises NoMatchError for a per-name budget naming no function (a misspelt name would budget nothing).
    With a `scheduler` (a Dask scheduler's address) the hosts' programs of a fleet are read and compared
    by a task per host on that cluster (`host_disagreements`): a dump at a URL (`gs://`, `s3://`) is then
    only listed here (`listed_dump`), each worker fetches its host's programs, and this process fetches
    only the usual host's files that explain the recompiles; the answer is the same."""
    if (
        scheduler is not None and isinstance(path, str) and is_url(path)
    ):  # not remembered: the workers read most objects
        return _recompiles(listed_dump(path), path, budget, log, trace, progress, scheduler)
    return _remembered_recompiles(
        path, budget, log=log, trace=trace, strict=strict, progress=progress, scheduler=scheduler
    )


@remembered("path", "log", "trace")
def _remembered_recompiles(
    path: Paths,
    budget: Budget | None,
    *,
    log: Path | None,
    trace: Path | None,
    strict: bool,
    progress: Progress,
    scheduler: str | None,
) -> RecompileReport:
    """`recompiles_report` of local files (URLs mirrored first, by `remembered`), remembered."""
    dump = load_dump(input_paths(path), strict=strict)
    return _recompiles(dump, path, budget, log, trace, progress, scheduler)


def _recompiles(
    dump: Dump,
    path: Paths,
    budget: Budget | None,
    log: Path | None,
    trace: Path | None,
    progress: Progress,
    scheduler: str | None,
) -> RecompileReport:
    times = _compile_times(dump, path, log)
    logged = times.by_module if times is not None else None
    with scoped_reads(_compiled_by_hosts(dump)):  # divergence compares what count-recompiles read of them
        found = count_recompiles(dump, progress("counting compiles", len(dump.modules)), logged)
        disagreements = host_disagreements(dump, found.skipped, scheduler)
    rows, budget = found.functions, budget or Budget()
    if rows and all(row.unreadable == row.modules for row in rows):
        raise nothing_read([*dump.skipped, *found.skipped])
    check_budget_names(budget, (r.name for r in rows))
    profiled, unpaired = _profiled_seconds(rows, trace)
    violations = budget_violations(rows, budget)
    return RecompileReport(rows, violations, times, profiled, unpaired, [*dump.skipped, *found.skipped], disagreements)


def _compiled_by_hosts(dump: Dump) -> list[DumpModule]:
    """The compiles of the functions several hosts of one job compiled (`host_disagreements` reads them)."""
    if dump.runs:
        return []
    return [m for modules in dump.functions().values() if len({m.host for m in modules}) > 1 for m in modules]


@dataclass
class CaptureReport(Tabular):
    """A captured run: the program's exit status, where its dump is, and its recompiles."""

    status: int
    """The program's exit status."""
    dump: Path
    recompiles: RecompileReport | None
    """None when the dump cannot be read (`error` says why; a program that failed early dumps nothing)."""
    kept: bool = False
    """The dump went to a new temporary folder, kept (no folder was given)."""
    error: str | None = None
    """Why the dump could not be counted."""


def capture_report(command: Sequence[str], dump_dir: Path | None = None, budget: Budget | None = None) -> CaptureReport:
    """Run `command` with XLA dumping on and jax's compile log saved in the dump, then count its
    recompiles against `budget`. Without `dump_dir` the dump goes to a new temporary folder that is
    kept (the other commands read it: `kept`)."""
    target = dump_folder(dump_dir)
    status = run_with_dump(list(command), target)
    try:
        return CaptureReport(status, target, recompiles_report(target, budget), dump_dir is None)
    except XlaInspectError as error:
        return CaptureReport(status, target, None, dump_dir is None, str(error))


def _profiled_seconds(
    rows: list[FunctionCompiles], trace: Path | None
) -> tuple[dict[str, tuple[float | None, ...]], list[CompileEvent]]:
    """Measured compile seconds per function from a jax.profiler trace, each on the module it made."""
    if trace is None:
        return {}, []
    return paired_compile_seconds({r.name: list(r.module_ids) for r in rows}, profile(read_trace(trace)).compiles)


def read_baseline(path: Path) -> tuple[tuple[str, int], ...]:
    """Per-function compile counts written by `write_baseline` (`{"functions": {name: count}}`)."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
        return tuple((str(k), int(v)) for k, v in document["functions"].items())
    except FileNotFoundError:
        raise UsageError(f"{literal(path)}: no such baseline file (write it with $update_baseline)") from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise XlaInspectError(f'{path}: not a baseline file ({{"functions": {{name: count}}}}): {error}') from None


def write_baseline(path: Path, report: RecompileReport, ignore_eager: bool = False) -> None:
    rows = [r for r in report.functions if not (ignore_eager and r.eager)]
    Path(path).write_text(json.dumps(baseline_counts(rows), indent=2) + "\n", encoding="utf-8")


def named_budgets(items: Sequence[str]) -> tuple[tuple[str, int], ...]:
    """`NAME=N` budgets (`--max jit_train_step=1`)."""
    budgets: list[tuple[str, int]] = []
    for item in items:
        name, _, count = item.rpartition("=")
        if not name or not count.isdigit():
            raise UsageError(f"$per_name {literal(item)}: expected NAME=N, e.g. jit_train_step=1")
        budgets.append((name, int(count)))
    return tuple(budgets)
