"""`modules` and `count-recompiles`: compiles per function and why each recompile happened."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlainspect.analysis.commands.compiles import ModuleRow
from xlainspect.report.causes import (
    cause_record,
    causes_text,
    for_people,
    suggestion,
    violation_text,
)
from xlainspect.report.document import Document, Entry, Lines, fields, record, records, table
from xlainspect.report.views.doctor import host_list

if TYPE_CHECKING:
    from xlainspect.analysis.commands.compiles import ModulesReport, RecompileReport
    from xlainspect.analysis.recompiles import FunctionCompiles


def modules_document(report: ModulesReport) -> Document:
    """JSON: a list of modules. The host column only where the dump has hosts, seconds and the cache
    outcome only with the run's log."""
    columns = [
        c
        for c in fields(ModuleRow)
        if (c != "host" or any(m.host for m in report.modules)) and (c not in ("seconds", "cache") or report.times)
    ]
    title = f"{len(report.modules)} modules in {report.root}" + (f", {_seconds(report.times)}" if report.times else "")
    rows = table(title, report.modules, columns)
    return Document([dict(zip(columns, row)) for row in rows.rows], [rows], csv=rows, notes=_unpaired(report.times))


def _seconds(times) -> str:
    return f"{times.total_seconds:.2f} s compiling, {times.recompile_seconds:.2f} s of it recompiling"


def _hosts_title(hosts: int, disagreements) -> str:
    """Where the counts come from in a dump of several hosts: one usual host's, or hosts that disagree."""
    if hosts < 2:
        return ""
    if not disagreements:
        return f", on each of {hosts} hosts (one usual host's; doctor names odd hosts)"
    functions = ", ".join(dict.fromkeys(d.function for d in disagreements))
    return f", on {hosts} hosts that DISAGREE on {functions}: the counts are the most hosts' (see the notes)"


def _disagreement(found) -> str:
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


def _unpaired(times) -> list[str]:
    """Where the log's compiles and the dump's modules do not pair one to one."""
    return [f"not paired: {sentence}" for sentence in times.unpaired] if times else []


def recompiles_document(report: RecompileReport, *, ignore_eager: bool = False) -> Document:
    """JSON: every function with its causes and times; tables: recompiled functions first, eager ops
    compiled once folded into one row; `over budget:` notes and a failed gate for each violation."""
    shown = [r for r in report.functions if not (ignore_eager and r.eager)]
    times, profiled = report.times, report.profiled
    data = {
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
        data |= {"recompile_seconds": times.recompile_seconds, "not_paired": times.unpaired}
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
    notes = _unpaired(times) + [f"not paired with the profile: {s}" for s in report.profile_unpaired]
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


def function_record(row: FunctionCompiles) -> dict:
    """A function's JSON: its fields (each cause's values and detail in the table's words), the suggestion
    after its causes."""
    data = record(row) | {"causes": [cause_record(c) for c in row.causes]}
    at = list(data).index("causes") + 1
    return dict([*list(data.items())[:at], ("suggestion", suggestion(row)), *list(data.items())[at:]])


def _function_entry(row: dict) -> Entry:
    """`function: N compiles, source, seconds`, then why and suggestion (narrow terminals)."""
    head = f"{row['function']}: {row['compiles']} compile{'s' * (row['compiles'] != 1)}"
    extra = [row.get("source") or "", f"{row['seconds']:.2f} s" if row.get("seconds") is not None else ""]
    texts = tuple((label, row[label]) for label in ("why", "suggestion") if row.get(label))
    return Entry(", ".join([head, *filter(None, extra)]), texts)


def _with_profiled(rows: list[dict], profiled: dict) -> list[dict]:
    for row in rows:
        if row["function"] in profiled:
            row["profiled"] = ", ".join("?" if s is None else f"{s:.2f}" for s in profiled[row["function"]])
    return rows


def _times_json(times, name: str) -> dict:
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


def _table_row(row, times=None) -> dict:
    function = times.functions.get(row.name) if times else None
    seconds = (
        {}
        if function is None
        else {
            "seconds": function.total_seconds,
            "per_compile": ", ".join(_compile_cell(s, c) for s, c in zip(function.seconds, function.cache)),
        }
    )
    return {
        "function": row.name,
        "compiles": row.modules,
        "eager": row.eager,
        **seconds,
        "source": row.source or "",
        "why": "; ".join([*_unreadable(row), *causes_text(row.causes)]),
        "suggestion": suggestion(row) or "",
    }


def _unreadable(row) -> list[str]:
    """Compiles counted but not explained: their HLO file is damaged (named on stderr)."""
    n = row.unreadable
    return [f"{n} compile{'s' * (n != 1)} unreadable, not explained (see the skipped files)"] if n else []


def _compile_cell(seconds: float | None, cache: str | None) -> str:
    """`0.42`, or `0.01 hit` for an executable loaded from the persistent cache; `?` when the log has none."""
    return "?" if seconds is None else f"{seconds:.2f}" + (" hit" if cache == "hit" else "")


def _for_people(rows: list, times=None) -> list[dict]:
    """The user's functions first (recompiled ones first), then the eager traffic folded into one row:
    an eager flood is one problem with one fix, not dozens."""
    user, eager = for_people(rows)
    people = [_table_row(r, times) for r in user]
    if eager is None:
        return people
    folded = {
        "function": f"eager ops ({len(eager.functions)} jax functions)",
        "compiles": eager.compiles,
        "eager": True,
        "why": eager.summary(),
        "suggestion": suggestion(eager.functions[0]) or "",
    }
    if times:
        folded["seconds"] = sum(
            times.functions[r.name].total_seconds for r in eager.functions if r.name in times.functions
        )
    return [*people, folded]


# --- memory ---------------------------------------------------------------------------------------------
