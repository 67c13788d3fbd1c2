"""`report`: one report of a whole dump, built from the analyses the other commands run.

A report is a list of sections, each made by one function of `SECTION_BUILDERS` from the same
`ReportInput`: the dump and, per module, the `ModuleFacts` the analyses found in its files (computed
once per module and kept in the results cache beside its file, so a second report of a dump reads no
HLO). A section holds tables and findings; a finding carries what it costs, so the summary can rank
findings from every section together. A new analysis (cost and roofline, say) joins the report by
appending one builder to `SECTION_BUILDERS`; it may parse modules itself (`DumpModule.module()`).

Tables keep at most `MAX_ROWS` rows (the largest first) and memory curves are drawn for the
`MAX_CURVES` modules with the highest peaks, each with a note naming what was left out: a dump of
thousands of modules still gives a page of a few megabytes that a browser opens at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from xlainspect.dump.directory import SHARE_MIN_BYTES, SHARE_MIN_MODULES, Dump, DumpModule, load_dump
from xlainspect.dump.model_cache import remembered
from xlainspect.errors import XlaInspectError
from xlainspect.progress import Progress, silent
from xlainspect.report.document import Table
from xlainspect.settings import cache_enabled, kept_objects
from xlainspect.workers import map_shared

T = TypeVar("T")

MAX_ROWS = 300
"""Rows per table; the rest is counted in the table's note (the commands themselves list every row)."""
MAX_CURVES = 12
"""Memory curves drawn, for the modules with the highest peaks."""
TOP_FINDINGS = 3
"""Findings per section for the summary (its largest costs)."""


@dataclass(slots=True)
class Finding:
    """One thing worth fixing, with its cost: extra compiles (`unit="compiles"`) or bytes."""

    section: str
    text: str
    cost: int
    unit: str


@dataclass
class Section:
    """One section of the dump report: its tables and the findings it ranks."""

    key: str
    """The anchor of the section (`#recompiles`); also what the browser test looks for."""
    title: str
    intro: str
    tables: list[Table] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    memory: list = field(default_factory=list)
    """`ModuleMemory` rows whose curves the HTML page draws (the memory section's)."""


@dataclass(slots=True)
class ModuleFacts:
    """What the analyses found in one module's after-optimizations HLO and side files."""

    label: str
    memory: object | None
    """`ModuleMemory`, None without a buffer assignment."""
    padding: tuple
    """The module's `PaddingRow`s (the padding ledger)."""
    fusions: tuple
    unfused: dict[str, int]
    copies: tuple
    collectives: tuple
    problems: tuple[tuple[str, str], ...] = ()
    """(path, message) of side files that could not be read; the rest of the module is analysed."""


@dataclass
class ReportInput:
    """What every builder reads: the whole dump (headers: compiles), its count-recompiles rows and the
    facts of each module that parsed."""

    dump: Dump
    facts: list[ModuleFacts]
    readable: list[DumpModule]
    recompiles: list
    """`count_recompiles` of the dump: headers only, so it runs while workers analyse the modules."""


@dataclass
class DumpReport:
    """One report of a whole dump: the modules table and each section."""

    root: str
    modules: Table
    sections: list[Section]
    skipped: list

    def findings(self) -> list[Finding]:
        """Every section's findings, costliest first: extra compiles before bytes (a compile costs seconds
        of every run that hits it; bytes are compared with bytes only)."""
        found = [f for s in self.sections for f in s.findings]
        return sorted(found, key=lambda f: (f.unit != "compiles", -f.cost))


def dump_report(dump: Dump, advance: Callable[[int], None] | None = None) -> DumpReport:
    """Run every section builder on the dump; `advance(n)` as modules are analysed (a progress bar's).

    count-recompiles (headers only) runs while the modules are analysed; the files it skips are kept
    apart and listed after those the analyses skipped, in the order a serial run finds them."""
    from xlainspect.analysis.recompiles import count_recompiles

    headers = Dump(dump.root, dump.modules)
    all_facts, recompiles = _facts_of(dump.modules, advance or (lambda n: None), lambda: count_recompiles(headers))
    facts, readable = [], []
    for dump_module, found in zip(dump.modules, all_facts):
        if isinstance(found, XlaInspectError):
            dump.skip(dump_module.hlo_file().path, found)
            continue
        facts.append(found)
        readable.append(dump_module)
        for path, message in found.problems:
            dump.skip(Path(path), XlaInspectError(message))
    dump.skipped += headers.skipped
    source = ReportInput(dump, facts, readable, recompiles)
    sections = [section for build in SECTION_BUILDERS if (section := build(source)) is not None]
    return DumpReport(str(dump.root), _modules_table(dump), sections, dump.skipped)


@remembered("path")
def report_of(path: str | Path, *, strict: bool = False, progress: Progress = silent) -> DumpReport:
    """`dump_report` of the dump under `path` (the `report` command's function), answered from the
    command cache while the dump is unchanged."""
    dump = load_dump(Path(path), strict=strict)
    return dump_report(dump, progress("analysing modules", len(dump.modules)))


CHUNK_MODULES = 16
"""Modules per worker task in a dump of `SHARE_MIN_MODULES` or more: few enough to balance the load,
enough to amortise a task's round trip. Fewer modules go one at a time."""


def _facts_of(
    modules: list[DumpModule], advance: Callable[[int], None], meanwhile: Callable[[], T]
) -> tuple[list[ModuleFacts | XlaInspectError], T]:
    """Each module's facts, or the error that kept its HLO from parsing, in order, and what
    `meanwhile()` returns: work of this process that needs no facts, done while workers find them
    (`workers.map_shared`, the largest modules first).

    Where xlainspect owns the process, garbage collection pauses until they are found (forked workers
    inherit the pause) and what was made is frozen after: the facts and models live to the end of the run,
    and collections scanning them would cost a tenth of the work here and half of the sections'."""
    also: list[T] = []
    with kept_objects():
        found = map_shared(
            _facts_or_error,
            modules,
            CHUNK_MODULES if len(modules) >= SHARE_MIN_MODULES else 1,
            advance=advance,
            meanwhile=lambda: also.append(meanwhile()),
            size=DumpModule.hlo_bytes,
            serial_below=SHARE_MIN_MODULES,
            serial_below_size=SHARE_MIN_BYTES,
        )
    return found, also[0]


def _facts_or_error(dump_module: DumpModule) -> ModuleFacts | XlaInspectError:
    """The module's facts from the results cache, else found now; the error when its HLO does not parse."""
    from xlainspect.dump.model_cache import cached_result

    try:
        return cached_result(dump_module.hlo_file().path, _analysis_key(dump_module), lambda: module_facts(dump_module))
    except XlaInspectError as error:
        return error


def module_facts(dump_module: DumpModule) -> ModuleFacts:
    """Run the per-module analyses once on a parsed module; raises XlaInspectError when its HLO does not parse."""
    from xlainspect.analysis.collectives import collectives
    from xlainspect.analysis.copies import copies
    from xlainspect.analysis.fusions import fusions, unfused_ops
    from xlainspect.analysis.layouts import LedgerInput, padding_ledger
    from xlainspect.analysis.lookup import module_label
    from xlainspect.analysis.memory import assigned_memory
    from xlainspect.dump.buffers import read_buffer_assignment
    from xlainspect.dump.files import read_text

    module = dump_module.module("after")
    problems, memory, padding = [], None, ()
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
        problems.append((str((side or dump_module.hlo_file()).path), str(error)))
    return ModuleFacts(
        module_label(module),
        memory,
        padding,
        tuple(fusions(module)),
        dict(unfused_ops(module).most_common()),
        tuple(copies(module, dump_module.platform)),
        tuple(collectives(module)),
        tuple(problems),
    )


def _analysis_key(dump_module: DumpModule) -> str:
    """The results cache's name for this module's facts; with the cache off, no side file is stat'ed."""
    return f"report:{_side_stamp(dump_module)}" if cache_enabled() else "report"


def _side_stamp(dump_module: DumpModule) -> str:
    """Size and mtime of the side files, so cached facts follow a buffer assignment rewritten on its own."""
    stamps = []
    for dump_file in dump_module.files:
        if dump_file.kind != "hlo":
            with contextlib.suppress(OSError):
                stat = dump_file.path.stat()
                stamps.append(f"{dump_file.kind}:{stat.st_size}:{stat.st_mtime_ns}")
    return ",".join(sorted(stamps))


def _modules_table(dump: Dump) -> Table:
    rows = tuple((m.label, m.name or "", m.platform_tag or m.platform or "", ", ".join(m.stages)) for m in dump.modules)
    return Table("modules", ("module", "function", "platform", "stages"), rows)


def table(title: str, columns: tuple[str, ...], rows: list[tuple], what: str = "") -> Table:
    """A table of the first `MAX_ROWS` rows, with a note saying how many were left out and where they are."""
    note = f"showing {MAX_ROWS:,} of {len(rows):,} rows; {what}" if len(rows) > MAX_ROWS and what else ""
    return Table(title, columns, tuple(rows[:MAX_ROWS]), note)


def _largest(items: list, key: Callable, count: int = TOP_FINDINGS) -> list:
    return sorted((i for i in items if key(i)), key=key, reverse=True)[:count]


# ---- sections


def recompiles_section(source: ReportInput) -> Section:
    """count-recompiles: the user's functions first (recompiled ones first) with their source lines,
    causes and suggestions, then the eager ops; the eager traffic is one finding (one fix)."""
    from xlainspect.analysis.recompiles import for_people
    from xlainspect.report.causes import causes_text

    rows = source.recompiles
    by_name = source.dump.functions()
    user, eager = for_people(rows)
    ranked = [*user, *(eager.functions if eager else ())]
    tab = table(
        "compiles per function",
        ("function", "compiles", "modules", "eager", "source", "why", "suggestion"),
        [
            (
                r.name,
                r.modules,
                tuple(m.label for m in by_name.get(r.name, ()) if m.module_id in r.module_ids),
                r.eager,
                r.source or "",
                "; ".join(causes_text(r.causes)),
                r.suggestion or "",
            )
            for r in ranked
        ],
        "xlainspect count-recompiles lists every function",
    )
    findings = [
        Finding(
            "recompiles",
            f"{r.name} compiled {r.modules} times: {'; '.join(causes_text(r.causes)) or 'no cause found'}",
            r.modules - 1,
            "compiles",
        )
        for r in user
        if r.modules > 1
    ]
    if eager is not None and eager.compiles > 1:
        findings.append(
            Finding(
                "recompiles",
                f"{eager.compiles} compiles of eager jax ops ({eager.summary()}): jit the surrounding code",
                eager.compiles,
                "compiles",
            )
        )
    total = sum(r.modules for r in rows)
    intro = (
        f"{total:,} compiles of {len(rows):,} functions, {sum(r.modules > 1 for r in rows):,} compiled more than once."
    )
    return Section("recompiles", "Recompiles", intro, [tab], findings)


def memory_section(source: ReportInput) -> Section | None:
    """memory: totals and peak per module, the curve and top buffers of the highest peaks."""
    rows = [f.memory for f in source.facts if f.memory is not None]
    if not rows:
        return None
    peaks = sorted(rows, key=lambda r: -(r.peak_bytes or 0))
    tab = table(
        "memory per module (bytes)",
        ("module", "function", "total_bytes", "peak_bytes", "peak_instruction"),
        [(r.module, r.function, r.total_bytes, r.peak_bytes, r.peak_instruction or "") for r in peaks],
        "xlainspect memory lists every module",
    )
    findings = [
        Finding(
            "memory",
            f"{r.module} peaks at {r.peak_bytes:,} bytes at {r.peak_instruction or 'the end'}",
            r.peak_bytes,
            "bytes",
        )
        for r in _largest(peaks, lambda r: r.peak_bytes or 0)
    ]
    curves = [r for r in peaks if r.curve][:MAX_CURVES]
    drawable = sum(1 for r in rows if r.curve)
    intro = f"{len(rows):,} modules with a buffer assignment; curves of the {len(curves)} highest peaks" + (
        f" of {drawable:,} with live ranges (xlainspect memory DIR --html draws every one)."
        if len(curves) < drawable
        else "."
    )
    return Section("memory", "Memory", intro, [tab], findings, curves)


def padding_section(source: ReportInput) -> Section | None:
    """layouts: bytes lost to tile padding, per function and the most wasteful values."""
    from xlainspect.analysis.layouts import ledger_totals

    labelled = sorted(((f.label, r) for f in source.facts for r in f.padding), key=lambda lr: -lr[1].wasted_bytes)
    rows = [r for _, r in labelled]
    if not rows:
        return None
    per_function = ledger_totals(rows, "function")
    totals = table(
        "per function",
        ("function", "values", "logical_bytes", "padded_bytes", "wasted_bytes", "expansion"),
        [(t.group, t.values, t.logical_bytes, t.padded_bytes, t.wasted_bytes, t.expansion) for t in per_function],
    )
    values = table(
        "most wasted bytes",
        ("module", "instruction", "shape", "logical_bytes", "padded_bytes", "wasted_bytes", "expansion", "op_name"),
        [
            (label, r.instruction, r.shape, r.logical_bytes, r.padded_bytes, r.wasted_bytes, r.expansion, r.op_name)
            for label, r in labelled
            if r.wasted_bytes
        ],
        "xlainspect layouts lists every value",
    )
    findings = [
        Finding(
            "padding",
            f"{t.group} loses {t.wasted_bytes:,} bytes to tile padding ({t.expansion}x)",
            t.wasted_bytes,
            "bytes",
        )
        for t in _largest(per_function, lambda t: t.wasted_bytes)
    ]
    wasted = sum(t.wasted_bytes for t in per_function)
    return Section(
        "padding",
        "Padding waste",
        f"{wasted:,} bytes of tile padding in {len(rows):,} array values.",
        [totals, values],
        findings,
    )


def fusions_section(source: ReportInput) -> Section:
    """fusions: totals per kind, the largest fusions, and compute ops left outside fusions."""
    from xlainspect.analysis.fusions import fusion_kind_totals

    rows = [fusion for f in source.facts for fusion in f.fusions]
    unfused = [
        (f.label, sum(f.unfused.values()), " ".join(f"{k}:{n}" for k, n in f.unfused.items()))
        for f in source.facts
        if f.unfused
    ]
    kinds = table(
        "fusions per kind",
        ("module", "kind", "count", "output_bytes"),
        [(t.module, t.kind, t.count, t.output_bytes) for t in fusion_kind_totals(rows)],
        "xlainspect fusions",
    )
    largest = table(
        "largest fusions",
        ("module", "name", "kind", "root", "output_shape", "output_bytes", "op_name"),
        [
            (f.module, f.name, f.backend_kind or f.kind, f.root, f.output_shape, f.output_bytes, f.op_name or "")
            for f in sorted(rows, key=lambda f: -f.output_bytes)
        ],
        "xlainspect fusions lists every fusion",
    )
    outside = table(
        "compute ops outside fusions",
        ("module", "ops", "opcodes"),
        sorted(unfused, key=lambda u: -u[1]),
        "xlainspect fusions",
    )
    intro = f"{len(rows):,} fusions; {sum(u[1] for u in unfused):,} compute ops outside fusions."
    return Section("fusions", "Fusions", intro, [kinds, largest, outside])


def copies_section(source: ReportInput) -> Section:
    """copies: bytes moved per module and the largest copies."""
    from xlainspect.analysis.copies import copy_totals

    rows = [c for f in source.facts for c in f.copies]
    totals = copy_totals(rows)
    findings = [
        Finding("copies", f"{t.module}: {t.kind} x{t.count} moves {t.bytes:,} bytes", t.bytes, "bytes")
        for t in _largest(totals, lambda t: t.bytes)
    ]
    return Section(
        "copies",
        "Copies",
        f"{len(rows):,} copies, transposes and relayouts.",
        [
            table(
                "per module and kind",
                ("module", "kind", "count", "bytes", "relayout", "layout_only"),
                [(t.module, t.kind, t.count, t.bytes, t.relayout, t.layout_only) for t in totals],
                "xlainspect copies",
            ),
            table(
                "largest copies",
                ("module", "name", "kind", "from_layout", "to_layout", "memory_space_change", "bytes", "op_name"),
                [
                    (
                        c.module,
                        c.name,
                        c.kind,
                        c.from_layout or "",
                        c.to_layout or "",
                        c.memory_space_change or "",
                        c.bytes,
                        c.op_name or "",
                    )
                    for c in sorted(rows, key=lambda c: -c.bytes)
                ],
                "xlainspect copies lists every copy",
            ),
        ],
        findings,
    )


def collectives_section(source: ReportInput) -> Section:
    """collectives: payload and bytes per step per module and kind, and every collective."""
    from xlainspect.analysis.collectives import collective_totals

    rows = [c for f in source.facts for c in f.collectives]
    totals = collective_totals(rows)
    findings = [
        Finding(
            "collectives",
            f"{t.module}: {t.kind} x{t.count} sends {t.bytes_per_step or t.payload_bytes:,} bytes a step",
            t.bytes_per_step or t.payload_bytes,
            "bytes",
        )
        for t in _largest(totals, lambda t: t.bytes_per_step or t.payload_bytes)
    ]
    return Section(
        "collectives",
        "Collectives",
        f"{len(rows):,} collectives.",
        [
            table(
                "per module and kind",
                ("module", "kind", "count", "payload_bytes", "bytes_per_step"),
                [(t.module, t.kind, t.count, t.payload_bytes, t.bytes_per_step) for t in totals],
                "xlainspect collectives",
            ),
            table(
                "collectives",
                (
                    "module",
                    "name",
                    "kind",
                    "dtype",
                    "payload_bytes",
                    "group_size",
                    "bytes_per_device",
                    "executions",
                    "bytes_per_step",
                    "op_name",
                ),
                [
                    (
                        c.module,
                        c.name,
                        c.kind,
                        c.dtype,
                        c.payload_bytes,
                        c.group_size,
                        c.bytes_per_device,
                        c.executions,
                        c.bytes_per_step,
                        c.op_name or "",
                    )
                    for c in sorted(rows, key=lambda c: -c.payload_bytes)
                ],
                "xlainspect collectives lists every collective",
            ),
        ],
        findings,
    )


SECTION_BUILDERS: list[Callable[[ReportInput], Section | None]] = [
    recompiles_section,
    memory_section,
    padding_section,
    fusions_section,
    copies_section,
    collectives_section,
]
"""The report's sections in page order. Append a builder to add a section (e.g. cost/roofline); a
builder returning None leaves its section out (no buffer assignment: no memory section)."""
