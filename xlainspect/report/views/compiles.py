"""`modules` and `count-recompiles`: compiles per function and why each recompile happened; the report's
compile-time and recompiles sections."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from xlainspect.analysis.commands.compiles import ModuleRow
from xlainspect.analysis.commands.report import DumpFacts
from xlainspect.report.causes import (
    cause_record,
    causes_in_brief,
    causes_text,
    for_people,
    jax_said,
    suggestion,
    violation_text,
)
from xlainspect.report.document import Document, Entry, Lines, fields, record, records, table
from xlainspect.report.sections import A_RUN, CompileTimeline, Finding, Section
from xlainspect.report.sections import table as section_table
from xlainspect.report.views.doctor import host_list

if TYPE_CHECKING:
    from collections.abc import Sequence

    from xlainspect.analysis.commands.compiles import CaptureReport, ModulesReport, RecompileReport
    from xlainspect.analysis.compile_times import CompileTimes
    from xlainspect.analysis.divergence import HostDisagreement
    from xlainspect.analysis.profile.compiles import CompileEvent
    from xlainspect.analysis.recompiles import FunctionCompiles


COMPILE_SOURCES = {"profile": "profile", "log_clock": "jax log", "log_order": "jax log, back to back", "dump": "dump"}
"""Where compile times come from (`timing.CompileSource`), in words."""


def capture_notes(report: CaptureReport) -> list[str]:
    """What `capture` says besides the report: where it kept the dump it chose, why it could not count it."""
    kept = [f"dump kept in {report.dump} (--dump-dir chooses where)"] if report.kept else []
    return kept + ([report.error] if report.error is not None else [])


def modules_document(report: ModulesReport) -> Document:
    """JSON: a list of modules. The host column only where the dump has hosts, seconds and the cache
    outcome only with the run's log."""
    columns = [
        c
        for c in fields(ModuleRow)
        if (c != "host" or any(m.host for m in report.modules)) and (c not in ("seconds", "cache") or report.times)
    ]
    title = f"{len(report.modules)} modules in {report.root}" + (f", {_seconds(report.times)}" if report.times else "")
    rows = table(title, [_module_record(m) for m in report.modules], columns)
    return Document([dict(zip(columns, row)) for row in rows.rows], [rows], csv=rows, notes=_unpaired(report.times))


def _module_record(row: ModuleRow) -> dict[str, object]:
    """A module's row with its stages worded: `before_optimizations, after_optimizations` as
    `before_opt, after_opt`, one string (JSON's and CSV's too)."""
    worded: dict[str, object] = record(row)
    return worded | {"stages": ", ".join(s.replace("optimizations", "opt") for s in row.stages)}


def _seconds(times: CompileTimes) -> str:
    total, again = times.total_seconds, times.recompile_seconds
    if total is None:
        return "compile seconds unknown (no compile of the log pairs with the dump's)"
    return f"{total:.2f} s compiling, {'?' if again is None else f'{again:.2f}'} s of it recompiling"


def _hosts_title(hosts: int, disagreements: Sequence[HostDisagreement]) -> str:
    """Where the counts come from in a dump of several hosts: one usual host's, or hosts that disagree."""
    if hosts < 2:
        return ""
    if not disagreements:
        return f", on each of {hosts} hosts (one usual host's; doctor names odd hosts)"
    functions = ", ".join(dict.fromkeys(d.function for d in disagreements))
    return f", on {hosts} hosts that DISAGREE on {functions}: the counts are the most hosts' (see the notes)"


def _disagreement(found: HostDisagreement) -> str:
    """One line per odd group of hosts: which function, compile and hosts, and the first differing line."""
    odd, usual = host_list(found.odd_hosts, 10), host_list(found.usual_hosts)
    if found.compile is None:
        return f"{found.function}: {odd} compiled it {_times(found.odd_count)}, {usual} {_times(found.usual_count)}"
    return (
        f"{found.function} compile {found.compile}: {odd} compiled another program than {usual} "
        f"(line {found.line}: {found.usual_line[:100]!r} vs {found.odd_line[:100]!r})"
    )


def _times(count: int) -> str:
    return f"{count} time{'s' * (count != 1)}"


def _not_in_dump(event: CompileEvent, in_dump: bool) -> str:
    """A traced compile that made no module of the dump (a dump of another run, or pruned)."""
    made = f" (made {event.module})" if event.module else ""
    why = "the dump has no such module of it" if in_dump else "no module of it in the dump"
    compiled = f"{event.function or event.name} compiled at {event.start_seconds:.3f} s{made}"
    return f"not paired with the profile: {compiled}: {why}"


def _unpaired(times: CompileTimes | None) -> list[str]:
    """Where the log's compiles and the dump's modules do not pair one to one."""
    return [f"not paired: {sentence}" for sentence in unpaired_text(times)] if times else []


def unpaired_text(times: CompileTimes) -> list[str]:
    """One sentence per function whose log and dump compiles do not pair one to one."""
    return [
        f"{u.function}: {u.logged} compile(s) in the log {times.log}, none in the dump"
        if not u.dumped
        else f"{u.function}: {u.dumped} compile(s) in the dump, {u.logged} in the log {times.log}; "
        f"the first {min(u.dumped, u.logged)} paired in order"
        for u in times.unpaired
    ]


def recompiles_document(report: RecompileReport, *, ignore_eager: bool = False) -> Document:
    """JSON: every function with its causes and times; tables: recompiled functions first, eager ops
    compiled once folded into one row; `over budget:` notes and a failed gate for each violation."""
    shown = [r for r in report.functions if not (ignore_eager and r.eager)]
    times, profiled = report.times, report.profiled
    data: dict[str, object] = {
        "total_modules": sum(r.modules for r in shown),
        "functions": [
            function_record(r)
            | _times_json(times, r.name)
            | ({"profile_compile_seconds": list(profiled[r.name])} if r.name in profiled else {})
            for r in shown
        ],
        "violations": [violation_text(v) for v in report.violations],
        "skipped": [{"path": str(s.path), "reason": s.reason} for s in report.skipped],
    }
    if report.disagreements:
        data["host_disagreements"] = records(report.disagreements)
    if times is not None:
        data |= {"recompile_seconds": times.recompile_seconds, "not_paired": unpaired_text(times)}
    total, recompiled = sum(r.modules for r in shown), sum(1 for r in shown if r.modules > 1)
    columns = (
        ["function", "compiles"]
        + (["seconds", "per_compile"] if times else [])
        + (["profiled"] if profiled else [])
        + ["eager", "source", "why", "suggestion"]
    )
    hosts = max((r.hosts for r in shown), default=1)
    title = (
        f"{total} compile{'s' * (total != 1)} of {len(shown)} function{'s' * (len(shown) != 1)}, "
        f"{recompiled} compiled more than once"
        + _hosts_title(hosts, report.disagreements)
        + (f"; {_seconds(times)}" if times else "")
    )
    for_people = _with_profiled(_for_people(shown, times), profiled)
    flat = table(title, _with_profiled([_table_row(r, times) for r in shown], profiled), columns)
    functions = {r.name for r in report.functions}
    notes = _unpaired(times) + [_not_in_dump(c, c.function in functions) for c in report.profile_unpaired]
    notes += [f"over budget: {violation_text(v)}" for v in report.violations]
    notes += [f"hosts disagree: {_disagreement(d)}" for d in report.disagreements]
    return Document(
        data,
        [table(title, for_people, columns)],
        csv=flat,
        narrow=[Lines(title), *map(_function_entry, for_people)],
        notes=notes,
        gate_failed=bool(report.violations),
    )


def function_record(row: FunctionCompiles) -> dict[str, object]:
    """A function's JSON: its fields (each cause's values and detail in the table's words), the suggestion
    after its causes."""
    data: dict[str, object] = record(row) | {"causes": [cause_record(c) for c in row.causes]}
    data["explanations"] = [{"compile": n, "jax": list(e.lines)} for n, e in row.explanations]
    items, at = list(data.items()), list(data).index("causes") + 1
    return dict([*items[:at], ("suggestion", suggestion(row)), *items[at:]])


@dataclass(slots=True)
class FunctionRow:
    """A row of count-recompiles' table: a function, or the eager ops folded into one (no source). The
    columns a run has no figures for stay None: `seconds`, `per_compile` without a log, `profiled`
    without a trace."""

    function: str
    compiles: int
    eager: bool
    why: str
    suggestion: str
    source: str | None = None
    seconds: float | None = None
    per_compile: str | None = None
    profiled: str | None = None


def _function_entry(row: FunctionRow) -> Entry:
    """`function: N compiles, source, seconds`, then why and suggestion (narrow terminals)."""
    head = f"{row.function}: {row.compiles} compile{'s' * (row.compiles != 1)}"
    extra = [row.source or "", f"{row.seconds:.2f} s" if row.seconds is not None else ""]
    texts = tuple((label, text) for label, text in (("why", row.why), ("suggestion", row.suggestion)) if text)
    return Entry(", ".join([head, *filter(None, extra)]), texts)


def _with_profiled(rows: list[FunctionRow], profiled: dict[str, tuple[float | None, ...]]) -> list[FunctionRow]:
    for row in rows:
        if row.function in profiled:
            row.profiled = ", ".join("?" if s is None else f"{s:.2f}" for s in profiled[row.function])
    return rows


def _times_json(times: CompileTimes | None, name: str) -> dict[str, object]:
    """compile_seconds (per compile), seconds and recompile_seconds of one function, when a log is known."""
    function = times.functions.get(name) if times else None
    if function is None:
        return {}
    return {
        "compile_seconds": list(function.seconds),
        "cache": list(function.cache),
        "seconds": function.total_seconds,
        "recompile_seconds": function.recompile_seconds,
    }


def _table_row(row: FunctionCompiles, times: CompileTimes | None = None) -> FunctionRow:
    found = FunctionRow(row.name, row.modules, row.eager, why(row), suggestion(row) or "", row.source or "")
    function = times.functions.get(row.name) if times else None
    if function is not None:
        found.seconds = function.total_seconds
        found.per_compile = ", ".join(_compile_cell(s, c) for s, c in zip(function.seconds, function.cache))
    return found


def why(row: FunctionCompiles) -> str:
    """Why a function compiled again: its causes, after the compiles that could not be read to explain."""
    return "; ".join([*_unreadable(row), *causes_text(row.causes), *jax_said(row)])


def _unreadable(row: FunctionCompiles) -> list[str]:
    """Compiles counted but not explained: their HLO file is damaged (named on stderr)."""
    n = row.unreadable
    return [f"{n} compile{'s' * (n != 1)} unreadable, not explained (see the skipped files)"] if n else []


def _compile_cell(seconds: float | None, cache: str | None) -> str:
    """`0.42`, or `0.01 hit` for an executable loaded from the persistent cache; `?` when the log has none."""
    return "?" if seconds is None else f"{seconds:.2f}" + (" hit" if cache == "hit" else "")


def _for_people(rows: list[FunctionCompiles], times: CompileTimes | None = None) -> list[FunctionRow]:
    """The user's functions first (recompiled ones first), then the eager traffic folded into one row:
    an eager flood is one problem with one fix, not dozens."""
    user, eager = for_people(rows)
    people = [_table_row(r, times) for r in user]
    if eager is None:
        return people
    folded = FunctionRow(
        f"eager ops ({len(eager.functions)} jax functions)",
        eager.compiles,
        True,
        eager.summary(),
        suggestion(eager.functions[0]) or "",
    )
    timed = [f.total_seconds for r in eager.functions if times and (f := times.functions.get(r.name))]
    known = [s for s in timed if s is not None]
    folded.seconds = sum(known) if known else None  # no eager compile timed: unknown, not 0
    return [*people, folded]


# ---- the report's section


TIMELINE_LANES = 30
"""Functions on the compile timeline, one lane each (those with the most compile time, else compiles)."""


def compiles_section(source: DumpFacts) -> Section | None:
    """Compiles on a time axis, per function: seconds (profile or jax log) and what recompiled."""
    t = source.timing
    if not t.compiles:
        return None
    rows = [
        (
            r.name,
            r.modules,
            t.compile_seconds.get(r.name),
            t.recompile_seconds.get(r.name),
            why(r),
        )
        for r in sorted(source.recompiles, key=lambda r: -(t.compile_seconds.get(r.name) or 0.0))
    ]
    seconds = sum(t.compile_seconds.values())
    timed = (
        f"{seconds:.2f} s in all, from the {COMPILE_SOURCES[t.compile_source]}"
        if t.compile_seconds
        else "no seconds known"
    )
    counts: dict[str, int] = {}
    for mark in t.compiles:
        counts[mark.function] = counts.get(mark.function, 0) + 1
    lanes = sorted(counts, key=lambda f: (-(t.compile_seconds.get(f) or 0.0), -counts[f]))[:TIMELINE_LANES]
    drawn = [m for m in t.compiles if m.function in lanes]
    left_out = (
        f" The timeline draws the {TIMELINE_LANES} functions with the most compile time of {len(counts):,}."
        if len(counts) > TIMELINE_LANES
        else ""
    )
    return Section(
        "compiles",
        "Compile time",
        f"{len(t.compiles):,} compiles ({timed}); red bars are recompiles.{left_out}",
        [
            section_table(
                "compile time per function",
                ("function", "compiles", "compile_seconds", "recompile_seconds", "what recompiled"),
                rows,
                "xlainspect count-recompiles --log explains each",
            )
        ],
        charts=[CompileTimeline(drawn, t.compile_source)],
    )


def recompiles_section(source: DumpFacts) -> Section:
    """count-recompiles: the user's functions first (recompiled ones first) with their source lines,
    causes and suggestions, then the eager ops; the eager traffic is one finding (one fix)."""
    rows = source.recompiles
    by_name = source.dump.functions()
    user, eager = for_people(rows)
    ranked = [*user, *(eager.functions if eager else ())]
    tab = section_table(
        "compiles per function",
        ("function", "compiles", "modules", "eager", "source", "why", "suggestion"),
        [
            (
                r.name,
                r.modules,
                tuple(m.label for m in by_name.get(r.name, ()) if m.module_id in r.module_ids),
                r.eager,
                r.source or "",
                why(r),
                suggestion(r) or "",
            )
            for r in ranked
        ],
        "xlainspect count-recompiles lists every function",
    )
    again = source.timing.recompile_seconds
    findings = [
        _compile_finding(
            f"{r.name} compiled {r.modules} times: {why(r) or 'no cause found'}",
            r.modules - 1,
            again.get(r.name),
            r.source or "",
        )
        for r in user
        if r.modules > 1
    ]
    if eager is not None and eager.compiles > 1:
        spent = [source.timing.compile_seconds.get(r.name) for r in eager.functions]
        findings.append(
            _compile_finding(
                f"{eager.compiles} compiles of eager jax ops ({eager.summary()}): jit the surrounding code",
                eager.compiles,
                sum(s for s in spent if s) if any(spent) else None,
            )
        )
    total = sum(r.modules for r in rows)
    intro = (
        f"{total:,} compiles of {len(rows):,} functions, {sum(r.modules > 1 for r in rows):,} compiled more than once."
    )
    return Section("recompiles", "Recompiles", intro, [tab], findings)


BRIEF_FUNCTIONS = 4
"""Recompiled functions the first screen names, one line each (those with the most recompile time)."""


def recompiles_in_brief(source: DumpFacts) -> list[tuple[str, str]]:
    """One line per recompiled function (what changed, without the values), with the anchor of its row in
    the recompiles section, which says it all; the eager traffic in one more: the first screen's fold."""
    again = source.timing.recompile_seconds
    user, eager = for_people(source.recompiles)
    recompiled = sorted((r for r in user if r.modules > 1), key=lambda r: (-again.get(r.name, 0.0), -r.modules))
    lines = [
        (
            f"{r.name}: {r.modules} compiles"
            + (f" ({again[r.name]:.2f} s again)" if again.get(r.name) else "")
            + f": {causes_in_brief(r.causes) or 'no cause found'}",
            f"function-{r.name}",
        )
        for r in recompiled[:BRIEF_FUNCTIONS]
    ]
    if len(recompiled) > BRIEF_FUNCTIONS:
        lines.append((f"and {len(recompiled) - BRIEF_FUNCTIONS} more recompiled functions", "recompiles"))
    if eager is not None and eager.compiles > 1:
        spent = sum(source.timing.compile_seconds.get(r.name) or 0.0 for r in eager.functions)
        said = f" ({spent:.2f} s)" if spent else ""
        lines.append(
            (f"eager jax ops: {eager.compiles} compiles of {len(eager.functions)} functions{said}", "recompiles")
        )
    return lines


def _compile_finding(text: str, compiles: int, seconds: float | None, where: str = "") -> Finding:
    """A recompile finding in compile seconds where the log or profile timed them, else in compiles."""
    if seconds is None:
        return Finding("recompiles", text, compiles, "compiles", source=where)
    return Finding("recompiles", text, seconds, A_RUN, source=where)
