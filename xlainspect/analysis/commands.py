"""One library function per CLI command: read the inputs, run the analyses, return a typed report.

A command of the CLI is these functions' options, one call and `emit`; a Python user calls the same
function (`xlainspect.fusions_report("dump/")`) and gets the same rows. Each report carries the files it
left out and why (`skipped`), so nothing that failed to parse is counted as zero. Long calls take a
`progress` (`xlainspect.progress`), which the CLI draws as a bar.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from xlainspect.analysis.lookup import module_label
from xlainspect.analysis.ops import OpCount
from xlainspect.dump.directory import Dump, DumpModule, SkippedFile, load_dump, select_dump_modules
from xlainspect.dump.model_cache import remembered
from xlainspect.errors import DumpError, UsageError, XlaInspectError
from xlainspect.progress import Progress, silent

if TYPE_CHECKING:
    import networkx as nx

    from xlainspect.analysis.cache_inventory import CachedFunction, DumpCompileEntry
    from xlainspect.analysis.cache_misses import CacheMiss
    from xlainspect.analysis.chips import Chip
    from xlainspect.analysis.collectives import Collective, CollectiveTotal
    from xlainspect.analysis.compile_times import CompileTimes
    from xlainspect.analysis.copies import Copy, CopyTotal
    from xlainspect.analysis.cost import ModuleCost
    from xlainspect.analysis.diff import FunctionDiff
    from xlainspect.analysis.fusions import Fusion, FusionKindTotal, UnfusedContraction
    from xlainspect.analysis.layouts import ArrayLayout, LedgerView, PaddingRow, PaddingTotal
    from xlainspect.analysis.memory import ModuleMemory
    from xlainspect.analysis.neighbourhood import Subgraph
    from xlainspect.analysis.ops import FunctionOpCount
    from xlainspect.analysis.profile import ProfileReport
    from xlainspect.analysis.recompiles import Budget, FunctionCompiles
    from xlainspect.dump.compilation_cache import CacheDir

Paths = str | Path | Sequence[str | Path]
T = TypeVar("T")


def _paths(paths: Paths) -> Path | list[Path]:
    return Path(paths) if isinstance(paths, (str, Path)) else [Path(p) for p in paths]


def analyse_modules(
    dump: Dump,
    analysis: str,
    analyse: Callable[[DumpModule], T],
    *,
    function: str | None = None,
    module_re: str | None = None,
    stage: str = "after",
    progress: Progress = silent,
) -> list[T]:
    """`analyse(dump_module)` for each selected module, answered from the results cache while its file is
    unchanged (the module is then not even read); a file that does not parse is skipped in `dump`."""
    from xlainspect.dump.model_cache import cached_result

    selected = select_dump_modules(dump, function=function, module_re=module_re)
    advance = progress("analysing modules", len(selected))
    results = []
    for dump_module in selected:
        hlo = dump_module.hlo_file(stage)
        try:
            key = f"{analysis}:{stage}:{dump_module.platform}"
            results.append(cached_result(hlo.path, key, lambda m=dump_module: analyse(m)))
        except UsageError:
            raise
        except XlaInspectError as error:
            dump.skip(hlo.path, error)
        advance(1)
    return results


# --- parse, layout, layouts ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ParsedModule:
    """One module of a parsed file: its name and what it holds."""

    file: str
    module: str
    computations: int
    instructions: int
    entry: str


@dataclass
class ParseReport:
    """What `parse` found: each module of the files, and opcodes this XLA does not know."""

    modules: list[ParsedModule]
    unknown_opcodes: list[str]
    """Opcodes a newer XLA may have added: parsed and kept as written."""


@remembered("files")
def parse_report(files: Paths) -> ParseReport:
    """Parse HLO text files with the grammar (an error is raised with its place); count what is in them.
    An unchanged file is answered from the parsed-model cache, which holds only texts that parsed."""
    from xlainspect.dump.model_cache import parse_file
    from xlainspect.hlo.opcodes import unknown_opcodes

    rows, opcodes = [], set()
    for path in [Path(files)] if isinstance(files, (str, Path)) else map(Path, files):
        for module in parse_file(path):
            entry = module.entry.name
            rows.append(ParsedModule(str(path), module.name, len(module.computations), module.instruction_count, entry))
            opcodes.update(i.opcode for i in module.instructions())
    return ParseReport(rows, unknown_opcodes(opcodes))


def explain_layout(shape: str, platform: str | None = None) -> list[ArrayLayout]:
    """What each array of a shape with layout costs (`bf16[3,5]{1,0:T(8,128)(2,1)}`); a tuple gives one per leaf."""
    from xlainspect.analysis.layouts import explain_shape
    from xlainspect.hlo.shape_text import parse_shape

    return explain_shape(parse_shape(shape), platform)


@dataclass
class LayoutsReport:
    """The padding ledger of a dump: the most wasteful values and totals per module and function."""

    values: list[PaddingRow]
    """The `top` most wasteful array values (all, without `top`)."""
    modules: list[PaddingTotal]
    functions: list[PaddingTotal]
    """Totals over every value that passed the filters, not only the `top` listed."""
    skipped: list[SkippedFile]
    view: LedgerView
    """What a table shows: the padded values (the `top`, default 20), the modules losing bytes, and
    a caption saying what it left out (every value with `every_value`)."""


@remembered("path")
def layouts_report(
    path: Paths,
    *,
    function: str | None = None,
    min_expansion: float = 0.0,
    platform: str | None = None,
    top: int | None = None,
    every_value: bool = False,
    progress: Progress = silent,
) -> LayoutsReport:
    """The padding ledger: every array value of the after-optimizations modules, most wasted bytes first."""
    from xlainspect.analysis.layouts import (
        dump_ledger,
        filter_ledger,
        ledger_totals,
        ledger_view,
    )

    dump = load_dump(_paths(path))
    ledger = dump_ledger(dump, platform, progress("reading modules", len(dump.modules)), function)
    rows = filter_ledger(ledger, function=function, min_expansion=min_expansion)
    shown = rows[:top] if top is not None else rows
    totals = ledger_totals(rows, "module"), ledger_totals(rows, "function")
    return LayoutsReport(shown, *totals, dump.skipped, ledger_view(rows, top, every_value))


# --- fusions, copies, collectives, ops -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Selection:
    """Which modules a command reads: one function or names matching a regex, at one stage."""

    function: str | None = None
    module_re: str | None = None
    stage: str = "after"


@dataclass
class FusionsReport:
    """Every fusion of the selected modules, totals per kind, and the compute left outside fusions."""

    fusions: list[Fusion]
    totals: list[FusionKindTotal]
    unfused_ops: dict[str, dict[str, int]]
    """Per module, compute ops left outside any fusion."""
    unfused_contractions: list[UnfusedContraction]
    skipped: list[SkippedFile]


@remembered("paths")
def fusions_report(
    paths: Paths, selection: Selection = Selection(), *, top: int | None = None, progress: Progress = silent
) -> FusionsReport:
    """Every fusion (kind, backend kind, fused computation, ops inside, bytes, library calls), or the
    `top` moving the most bytes (the totals count every one), and what was left unfused."""
    from xlainspect.analysis.fusions import (
        fusion_kind_totals,
        fusions,
        largest_fusions,
        unfused_contractions,
        unfused_ops,
    )

    def analyse(dump_module: DumpModule) -> tuple:
        module = dump_module.module(selection.stage)
        return (
            fusions(module),
            module_label(module),
            dict(unfused_ops(module).most_common()),
            unfused_contractions(module),
        )

    dump = load_dump(_paths(paths))
    per_module = _run(dump, "fusions", analyse, selection, progress)
    rows = [row for module_rows, *_ in per_module for row in module_rows]
    unfused = {label: ops for _, label, ops, _ in per_module}
    contractions = [c for *_, module_contractions in per_module for c in module_contractions]
    shown = rows if top is None else largest_fusions(rows, top)
    return FusionsReport(shown, fusion_kind_totals(rows), unfused, contractions, dump.skipped)


def _run(dump: Dump, analysis: str, analyse: Callable, selection: Selection, progress: Progress) -> list:
    return analyse_modules(
        dump,
        analysis,
        analyse,
        function=selection.function,
        module_re=selection.module_re,
        stage=selection.stage,
        progress=progress,
    )


@dataclass
class CopiesReport:
    """Every copy, transpose and relayout of the selected modules, with totals per kind."""

    copies: list[Copy]
    totals: list[CopyTotal]
    skipped: list[SkippedFile]


@remembered("paths")
def copies_report(
    paths: Paths, selection: Selection = Selection(), *, layout_only: bool = False, progress: Progress = silent
) -> CopiesReport:
    """Every copy, async copy, transpose and relayout fusion: layouts, memory spaces, bytes, producer, consumers."""
    from xlainspect.analysis.copies import copies, copy_totals

    dump = load_dump(_paths(paths))
    per_module = _run(dump, "copies", lambda m: copies(m.module(selection.stage), m.platform), selection, progress)
    rows = [row for module_rows in per_module for row in module_rows if row.layout_only or not layout_only]
    return CopiesReport(rows, copy_totals(rows), dump.skipped)


@dataclass
class CollectivesReport:
    """Every collective of the selected modules, with totals per kind."""

    collectives: list[Collective]
    totals: list[CollectiveTotal]
    skipped: list[SkippedFile]


@remembered("paths")
def collectives_report(
    paths: Paths, selection: Selection = Selection(), *, progress: Progress = silent
) -> CollectivesReport:
    """Every collective once (sync, -start/-done, async-start): groups, payload, bytes per device and per step."""
    from xlainspect.analysis.collectives import collective_totals, collectives

    dump = load_dump(_paths(paths))
    per_module = _run(dump, "collectives", lambda m: collectives(m.module(selection.stage)), selection, progress)
    rows = [row for module_rows in per_module for row in module_rows]
    return CollectivesReport(rows, collective_totals(rows), dump.skipped)


@dataclass
class OpsReport:
    """Opcode counts per module, or per function across its variants."""

    opcodes: list[OpCount]
    """Per module (empty with `per_function`)."""
    functions: list[FunctionOpCount]
    """Per function across its variants (only with `per_function`)."""
    skipped: list[SkippedFile]


@remembered("paths")
def ops_report(
    paths: Paths, selection: Selection = Selection(), *, per_function: bool = False, progress: Progress = silent
) -> OpsReport:
    """Opcode histogram per module (inside and outside fusions), or per function across its variants."""
    from xlainspect.analysis.ops import function_histogram
    from xlainspect.dump.directory import select_modules

    dump = load_dump(_paths(paths))
    if per_function:
        advance = progress("parsing modules", len(dump.modules))
        selected = select_modules(
            dump, function=selection.function, module_re=selection.module_re, stage=selection.stage, advance=advance
        )
        return OpsReport([], function_histogram(selected), dump.skipped)
    per_module = _run(dump, "ops", lambda m: _histogram(m, selection.stage), selection, progress)
    return OpsReport([row for rows in per_module for row in rows], [], dump.skipped)


def _histogram(dump_module: DumpModule, stage: str) -> list[OpCount]:
    """Opcode rows of one module: from the line-level reader where it is sure of every line (no model
    is built, several times faster), from the grammar's model elsewhere."""
    from xlainspect.analysis.lookup import file_label
    from xlainspect.analysis.ops import line_histogram, opcode_histogram
    from xlainspect.dump.files import read_text
    from xlainspect.hlo.fastpath import scan

    hlo = dump_module.hlo_file(stage)
    lines = scan(read_text(hlo.path))
    if lines is None:
        return opcode_histogram(dump_module.module(stage))
    return line_histogram(file_label(str(hlo.path), dump_module.header(stage).name), lines)


@dataclass
class Neighbourhood:
    """The data-flow neighbourhood of one instruction, for `graph --around`."""

    subgraph: Subgraph
    """The instructions within `depth` edges and the edges among them."""
    centre: tuple[str, str]
    """The instruction it is drawn around, `(computation, name)`."""

    @property
    def graph(self) -> nx.DiGraph:
        """The subgraph as a networkx DiGraph (built on first use: the writers need no networkx)."""
        return self.subgraph.to_networkx()


@remembered("file")
def neighbourhood_report(file: str | Path, around: str, depth: int = 2) -> Neighbourhood:
    """The data-flow neighbourhood of one instruction (`computation/name` where the name is ambiguous)."""
    from xlainspect.analysis import neighbourhood as hood
    from xlainspect.dump.model_cache import parse_file

    modules = parse_file(file)
    short = around.lstrip("%").rpartition("/")[2]
    module = next(
        (m for m in modules if any(i.name == short for i in m.instructions())), modules[0] if modules else None
    )
    if module is None:
        raise XlaInspectError(f"{file}: no HLO module")
    return Neighbourhood(hood.neighbourhood(module, around, depth), hood.find_instruction(module, around))


# --- modules, count-recompiles ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModuleRow:
    """One compile of a dump, as `modules` lists it."""

    host: str
    module_id: int | None
    function: str | None
    platform: str | None
    stages: str
    instructions: int | None
    """None where the module does not parse (it is then in `skipped`)."""
    bytes: int
    seconds: float | None = None
    cache: str | None = None
    """`hit` or `miss` of jax's persistent cache, from the run's log."""


@dataclass
class ModulesReport:
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
    compile seconds when the run's jax log is there."""
    from xlainspect.analysis.ops import instruction_count

    dump = load_dump(_paths(path), strict=strict)
    times = _compile_times(dump, path, log)
    advance = progress("reading modules", len(dump.modules))
    rows = []
    for module in dump.modules:
        advance(1)
        hlo = module.hlo_file()
        try:
            instructions = instruction_count(module)
        except XlaInspectError as error:
            dump.skip(hlo.path, error, strict)
            instructions = None
        paired = times.by_module.get(module) if times else None
        stages = ", ".join(s.replace("optimizations", "opt") for s in module.stages)
        platform = module.platform_tag or module.platform
        row = ModuleRow(
            module.host, module.module_id, module.name, platform, stages, instructions, hlo.path.stat().st_size
        )
        rows.append(row if paired is None else _with_time(row, paired))
    return ModulesReport(dump.root, rows, times, dump.skipped)


def _with_time(row: ModuleRow, paired) -> ModuleRow:
    from dataclasses import replace

    return replace(row, seconds=paired.seconds, cache=paired.cache)


def _compile_times(dump: Dump, path: Paths, log: Path | None) -> CompileTimes | None:
    """Compile seconds from the run's jax log: `log`, else the one capture saved in the dump folder `path`
    (a folder given alone: files given name no folder, and their answer is remembered by those files
    alone); None without one."""
    from xlainspect.analysis.compile_times import compile_times
    from xlainspect.dump.jaxlog import run_log

    found = run_log(path if isinstance(path, (str, Path)) else None, log)
    return None if found is None else compile_times(dump, found)


@dataclass
class RecompileReport:
    """Compiles per function and why each recompile happened; `violations` are the gate's failures."""

    functions: list[FunctionCompiles]
    """Per function in first-compile order (eager ones included: see `FunctionCompiles.eager`)."""
    violations: list[str]
    """One message per budget exceeded (a failed gate)."""
    times: CompileTimes | None
    profiled: dict[str, tuple] = field(default_factory=dict)
    """Measured compile seconds per function, from a jax.profiler trace."""
    profile_unpaired: list[str] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)


@remembered("path", "log", "trace")
def recompiles_report(
    path: Paths,
    budget: Budget | None = None,
    *,
    log: Path | None = None,
    trace: Path | None = None,
    strict: bool = False,
    progress: Progress = silent,
) -> RecompileReport:
    """Compiles per function and why each recompile happened; `budget` makes it a gate (`violations`)."""
    from xlainspect.analysis.recompiles import Budget, budget_violations, count_recompiles

    dump = load_dump(_paths(path), strict=strict)
    rows = count_recompiles(dump, progress("counting compiles", len(dump.modules)))
    times = _compile_times(dump, path, log)
    profiled, unpaired = _profiled_seconds(rows, trace)
    violations = budget_violations(rows, budget or Budget())
    return RecompileReport(rows, violations, times, profiled, unpaired, dump.skipped)


@dataclass
class CaptureReport:
    """A captured run: the program's exit status, where its dump is, and its recompiles."""

    status: int
    """The program's exit status."""
    dump: Path
    recompiles: RecompileReport | None
    """None when the dump cannot be read (`notes` say why; a program that failed early dumps nothing)."""
    notes: list[str] = field(default_factory=list)
    """Where the dump was kept, when no folder was given; why it could not be counted."""


def capture_report(command: Sequence[str], dump_dir: Path | None = None, budget: Budget | None = None) -> CaptureReport:
    """Run `command` with XLA dumping on and jax's compile log saved in the dump, then count its
    recompiles against `budget`. Without `dump_dir` the dump goes to a new temporary folder that is
    kept (the other commands read it), and a note says where."""
    from xlainspect.capture import dump_folder, run_with_dump

    target = dump_folder(dump_dir)
    status = run_with_dump(list(command), target)
    notes = [] if dump_dir is not None else [f"dump kept in {target} (--dump-dir chooses where)"]
    try:
        return CaptureReport(status, target, recompiles_report(target, budget), notes)
    except XlaInspectError as error:
        return CaptureReport(status, target, None, [*notes, str(error)])


def _profiled_seconds(rows: list, trace: Path | None) -> tuple[dict[str, tuple], list[str]]:
    """Measured compile seconds per function from a jax.profiler trace, paired in order with the dump's."""
    if trace is None:
        return {}, []
    from xlainspect.analysis.profile import paired_compile_seconds, profile
    from xlainspect.dump.xplane import read_trace

    return paired_compile_seconds({r.name: r.modules for r in rows}, profile(read_trace(trace)))


def read_baseline(path: Path) -> tuple[tuple[str, int], ...]:
    """Per-function compile counts written by `write_baseline` (`{"functions": {name: count}}`)."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
        return tuple((str(k), int(v)) for k, v in document["functions"].items())
    except FileNotFoundError:
        raise XlaInspectError(f"{path}: no such baseline file (create it with --update-baseline)") from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise XlaInspectError(f'{path}: not a baseline file ({{"functions": {{name: count}}}}): {error}') from None


def write_baseline(path: Path, report: RecompileReport, ignore_eager: bool = False) -> None:
    from xlainspect.analysis.recompiles import baseline_counts

    rows = [r for r in report.functions if not (ignore_eager and r.eager)]
    Path(path).write_text(json.dumps(baseline_counts(rows), indent=2) + "\n", encoding="utf-8")


def named_budgets(items: Sequence[str]) -> tuple[tuple[str, int], ...]:
    """`NAME=N` budgets (`--max jit_train_step=1`)."""
    budgets = []
    for item in items:
        name, _, count = item.rpartition("=")
        if not name or not count.isdigit():
            raise XlaInspectError(f"--max {item}: expected NAME=N, e.g. --max jit_train_step=1")
        budgets.append((name, int(count)))
    return tuple(budgets)


# --- memory, diff, cost, profile -------------------------------------------------------------------------


@dataclass
class MemoryReport:
    """Memory per module: allocations by kind and space, the peak and what is live there."""

    modules: list[ModuleMemory]
    skipped: list[SkippedFile]


@remembered("path")
def memory_report(
    path: str | Path, *, function: str | None = None, top: int = 10, progress: Progress = silent
) -> MemoryReport:
    """Memory per compiled module from the buffer assignment, memory-usage report and live ranges: bytes
    by allocation kind, the peak and the `top` biggest buffers live there. `path` may be one dump file."""
    from xlainspect.analysis.memory import memory_inputs, module_memory
    from xlainspect.dump.model_cache import cached_result

    path = Path(path)
    dump = load_dump(path.parent if path.is_file() else path)
    chosen = [
        m
        for m in select_dump_modules(dump, function=function)
        if not path.is_file() or any(f.path.resolve() == path.resolve() for f in m.files)
    ]
    rows, advance = [], progress("reading buffer assignments", len(chosen))
    for dump_module in chosen:
        advance(1)
        try:
            inputs = memory_inputs(dump_module)
            row = cached_result(inputs, f"memory:{top}", lambda m=dump_module: module_memory(m, top))
        except XlaInspectError as error:  # report and skip, like a truncated file
            dump.skip(dump_module.file(kind="buffer-assignment").path, error)
            continue
        if row is not None:
            rows.append(row)
    if not rows:
        raise DumpError(
            f"no *buffer-assignment.txt for the selected modules under {path} (XLA writes it "
            "after optimizations, with --xla_dump_to and text dumps)"
        )
    return MemoryReport(rows, dump.skipped)


@dataclass
class DiffReport:
    """Two dumps compared per function, the metrics that grew past a threshold, and what is unknown."""

    a: Path
    b: Path
    functions: list[FunctionDiff]
    regressions: list[str]
    """One message per metric over its allowed increase."""
    skipped: list[SkippedFile]
    unknown: list[str] = field(default_factory=list)
    """One message per function a module that did not parse leaves unknown: the gate cannot decide."""


@remembered("a", "b")
def diff_report(
    a: str | Path,
    b: str | Path,
    *,
    max_increase: Sequence[str] = (),
    any_growth: bool = False,
    chip: str | None = None,
    strict: bool = False,
    progress: Progress = silent,
) -> DiffReport:
    """Per function (matched by HloModule name): what XLA did differently between two dumps, and the
    metrics that grew past `max_increase` (`METRIC=N` or `METRIC=N%`), or at all with `any_growth` and
    no `max_increase` (what `--fail-on-regression` alone gates)."""
    from xlainspect.analysis.chips import get_chip
    from xlainspect.analysis.diff import (
        METRICS,
        Threshold,
        diff_dumps,
        parse_threshold,
        regressions,
        unknown_functions,
    )

    thresholds = [parse_threshold(t) for t in max_increase]
    if any_growth and not thresholds:
        thresholds = [Threshold(metric, 0, False) for metric in METRICS]
    roofline_chip = get_chip(chip) if chip else None
    dump_a, dump_b = load_dump(a, strict=strict), load_dump(b, strict=strict)
    rows = diff_dumps(
        dump_a, dump_b, roofline_chip, progress("comparing modules", len(dump_a.modules) + len(dump_b.modules))
    )
    skipped = dump_a.skipped + dump_b.skipped
    return DiffReport(Path(a), Path(b), rows, regressions(rows, thresholds), skipped, unknown_functions(rows))


@dataclass(frozen=True, slots=True)
class ChipChoice:
    """The chip a roofline is drawn for: a name (`h100`) or the figures of one."""

    key: str | None = None
    peak_flops: float | None = None
    hbm_bandwidth: float | None = None
    ici_bandwidth: float | None = None


@dataclass
class CostReport:
    """FLOPs, bytes and roofline time per module, with each module's slowest ops."""

    modules: list[ModuleCost]
    skipped: list[SkippedFile]


@remembered("paths")
def cost_report(
    paths: Paths,
    selection: Selection = Selection(),
    chip: ChipChoice = ChipChoice(),
    *,
    top: int | None = 10,
    progress: Progress = silent,
) -> CostReport:
    """FLOPs, transcendentals, bytes and roofline time per op and module, equal to XLA's HloCostAnalysis;
    each module keeps its `top` ops by roofline time (None: all)."""
    from xlainspect.analysis.chips import chip_table
    from xlainspect.analysis.cost import module_cost

    key = f"cost:{chip}:{top}:{sorted(chip_table().items())}"  # the table is data, not code
    dump = load_dump(_paths(paths))
    rows = _run(
        dump, key, lambda m: module_cost(m.module(selection.stage), chip_for(m, chip), top), selection, progress
    )
    return CostReport(rows, dump.skipped)


def chip_for(dump_module: DumpModule | None, choice: ChipChoice) -> Chip | None:
    """The chip named, else the GPU the dump was compiled for; a TPU dump must name one (a usage error),
    a CPU dump or a trace without its dump gets none (counts without times)."""
    from xlainspect.analysis.chips import chip_table, custom_chip, default_chip_key, get_chip

    figures = (choice.peak_flops, choice.hbm_bandwidth, choice.ici_bandwidth)
    if choice.key is None and choice.peak_flops and choice.hbm_bandwidth:
        return custom_chip(*figures)
    key = choice.key or (default_chip_key(dump_module.platform, dump_module.platform_tag) if dump_module else None)
    if key is None and (dump_module is None or dump_module.platform in ("cpu", None)) and not any(figures):
        return None
    if key is None:
        where = dump_module.label if dump_module else "the trace"
        raise UsageError(
            f"{where}: the dump does not say which chip it was compiled for; pass --chip (or both "
            f"--peak-flops and --hbm-bandwidth), one of: {', '.join(chip_table())}"
        )
    try:
        return get_chip(key, *figures)
    except XlaInspectError as error:
        raise UsageError(str(error)) from None


@remembered("trace", "dump", uses=("jax", "jaxlib", "google.protobuf"))
def profile_report(
    trace: str | Path,
    dump: str | Path | None = None,
    chip: ChipChoice = ChipChoice(),
    *,
    function: str | None = None,
    strict: bool = False,
) -> ProfileReport:
    """Measured time per HLO op from a jax.profiler trace; with the run's dump, each op's roofline time,
    efficiency and time lost. `function` narrows it to one function (one that matches nothing is an error)."""
    from xlainspect.analysis.profile import only_function, profile
    from xlainspect.dump.xplane import read_trace

    read = read_trace(trace)
    if dump is None:
        return only_function(profile(read, None, chip_for(None, chip)), function)
    loaded = load_dump(dump, strict=strict)
    report = profile(read, loaded, chip_for(next(iter(loaded.modules), None), chip))
    report.skipped = loaded.skipped
    if not report.joined:
        report.notes.append(
            f"{dump}: none of the traced modules is in this dump (module ids and names differ); ops are shown "
            "without costs"
        )
    return only_function(report, function)


# --- the persistent cache -------------------------------------------------------------------------------


@dataclass
class CacheReport:
    """A persistent-cache directory per function, and with a dump, which compiles it holds."""

    cached: CacheDir
    functions: list[CachedFunction]
    joined: list[DumpCompileEntry] | None
    """With a dump: each of its compiles and whether the cache holds its executable."""
    skipped: list[SkippedFile]


@remembered("path", "dump", "log")
def cache_report(
    path: str | Path, *, dump: str | Path | None = None, log: Path | None = None, many: int = 3
) -> CacheReport:
    """What jax's persistent compilation cache holds, per function; functions with more than `many`
    entries are flagged (a key that changes per run: jax #21159). `log` is the run log of `dump`."""
    from xlainspect.analysis.cache_inventory import cache_inventory, dump_entries
    from xlainspect.dump.compilation_cache import read_cache_dir
    from xlainspect.dump.jaxlog import run_log

    if log is not None and dump is None:
        raise XlaInspectError("--log is the log of the run of --dump DIR: give both")
    cached = read_cache_dir(path)
    joined = dump_entries(cached, load_dump(dump), run_log(dump, log)) if dump is not None else None
    return CacheReport(cached, cache_inventory(cached, many), joined, cached.skipped)


@remembered("a", "b")
def cache_misses_report(a: str | Path, b: str | Path) -> list[CacheMiss]:
    """Per function of run B: hit, miss or not written, and for a miss the cache-key components that
    changed since run A. A run is a jax log, or a folder holding jax.log (with its dump, for the HLO)."""
    from xlainspect.analysis.cache_misses import cache_misses
    from xlainspect.dump.jaxlog import read_jax_log

    return cache_misses(read_jax_log(a), read_jax_log(b), _dump_if_any(Path(b)))


def _dump_if_any(path: Path) -> Dump | None:
    """The dump beside a run's log (a capture directory), for the HLO it holds; None for a lone log."""
    if not path.is_dir():
        return None
    try:
        return load_dump(path)
    except XlaInspectError:
        return None
