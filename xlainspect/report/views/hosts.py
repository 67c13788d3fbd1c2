"""The job's hosts (`profile` of a multi-host run, and the report's "Hosts" section): per-host step bars,
the straggler sentence, the clocks' alignment, and each collective's wait, transfer and exposed time."""

from __future__ import annotations

from dataclasses import replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, cast

from xlainspect.analysis.profile.job import DUMP_FALLBACK, DUMP_WHOLE, STRAGGLER_SHARE
from xlainspect.report.document import Block, Document, Lines, Table, record, records, table
from xlainspect.report.sections import A_STEP, Finding, Section
from xlainspect.report.sections import table as section_table
from xlainspect.report.views.cost import duration, readable
from xlainspect.report.views.profile import step_headline

if TYPE_CHECKING:
    from xlainspect.analysis.commands.report import DumpFacts
    from xlainspect.analysis.profile import ProfileReport
    from xlainspect.analysis.profile.job import ClockAlignment, JobReport, Straggler, UnitRow

UNIT_COLUMNS = (
    "host",
    "device",
    "steps",
    "step_seconds",
    "busy_seconds",
    "idle_seconds",
    "idle_causes",
    "collective_seconds",
    "wait_seconds",
    "transfer_seconds",
    "exposed_seconds",
    "clock_offset_seconds",
)
COLLECTIVE_COLUMNS = (
    "host",
    "device",
    "module",
    "op",
    "kind",
    "count",
    "seconds",
    "wait_seconds",
    "transfer_seconds",
    "exposed_seconds",
    "hidden_seconds",
    "bytes_per_execution",
    "transfer_bytes_per_second",
    "link_bandwidth",
)
_BAR = 40
"""Characters of the longest step's bar."""


def with_hosts(document: Document, report: ProfileReport) -> Document:
    """`profile`'s document with the job's keys in its JSON and, where the run has several hosts or
    devices, its hosts on the terminal and in Markdown, after the step headline."""
    job = report.job
    if job is None:
        return document
    profiled = cast("dict[str, object]", document.data)  # profile's JSON is an object
    assert isinstance(profiled, dict)
    data: dict[str, object] = {**profiled, **hosts_data(job)}
    if len(job.hosts) < 2 and len(job.devices) < 2:
        return replace(document, data=data)
    blocks, own, first = hosts_blocks(job), step_headline(report), job_headline(job)
    after = 1 if own else 0  # the step the user waits for first
    if first is not None:  # the job's step, then the shown host's own (one host's: the job's step)
        shown = own and len(job.hosts) > 1
        lines = [first, *([f"{job.ops_host}'s own step: {own}"] if shown else [])]
        blocks = [Lines("\n".join(lines)), *blocks]

    def placed(shown: list[Block]) -> list[Block]:
        return [*blocks, *shown[after:]] if first is not None else [*shown[:after], *blocks, *shown[after:]]

    markdown = None if document.markdown is None else placed(document.markdown)
    return replace(document, data=data, blocks=placed(document.blocks), markdown=markdown)


def hosts_data(job: JobReport) -> dict[str, object]:
    """The JSON keys a profile gains: `hosts`, `devices`, `collectives`, `straggler` (with its sentence)
    and `clock` (with its method said). Steps start at seconds since the job's first step, on the first
    host's clock."""
    start = min((s.start_ns / 1e9 + row.clock_offset_seconds for row in job.hosts for s in row.steps), default=0.0)
    return {
        "hosts": [_unit_record(row, start) for row in job.hosts],
        "devices": [_unit_record(row, start) for row in job.devices],
        "collectives": records(job.collectives),
        "job_headline": job_headline(job),
        "straggler": None if job.straggler is None else record(job.straggler) | {"said": straggler_text(job)},
        "clock": record(job.clock) | {"method_said": clock_text(job.clock)},
        "ops_host": job.ops_host,
        "ops_host_said": ops_host_text(job),
    }


def hosts_blocks(job: JobReport) -> list[Table | Lines]:
    """Per-host step bars and the straggler sentence, the hosts' and devices' rows, the collectives'."""
    units = job.hosts if len(job.hosts) > 1 else job.devices
    lines = [*_bars(units), "", straggler_text(job), clock_text(job.clock), *dump_lines(job)]
    if len(job.hosts) > 1:
        lines.append(ops_host_text(job) + " The rows here and JSON's hosts, devices and collectives cover every host.")
    title = f"{len(job.hosts)} host(s), {len(job.devices)} device(s): per step without a compile (median)"
    return [
        Lines("\n".join(lines)),
        table(title, [_readable_unit(r) for r in job.hosts + job.devices], UNIT_COLUMNS),
        table(
            "collectives per device: waiting for the last peer, moving data, exposed",
            _collective_rows(job),
            COLLECTIVE_COLUMNS,
        ),
    ]


_HELD_BY = {
    "host": (
        "host work",
        "move that work off the step's path (prepare the next batch while the device runs, or jit it into the step)",
    ),
    "input": ("input transfers to its devices", "put its next batch on the device ahead of the step (prefetch)"),
    "compile": ("compiling", "find why it compiles with count-recompiles and compile once"),
    "device": ("own device work", "give it no more work than the others (balance the shards)"),
}
"""What the straggler did while the others waited (`Straggler.meanwhile`'s kinds), and what to do first."""


def job_headline(job: JobReport) -> str | None:
    """The first line of a job whose hosts (or one host's devices) wait for one: the job's step, the
    straggler, what it ran while the others waited and what they waited in; the job's bound is that work.
    None without a straggler."""
    found = job.straggler
    held = _held(found) if found is not None else None
    if found is None or held is None:
        return None
    bound, sentence = held
    units, steps = (
        (f"{len(job.hosts)} hosts", "every host's")
        if found.level == "host"
        else (
            f"{len(job.devices)} devices on one host",
            "the host's",
        )
    )
    return (
        f"job of {units}: {duration(found.step_seconds)} a step (median of {steps} steps without a compile); "
        f"bound by the straggler's {bound}: {sentence}"
    )


def _held(found: Straggler) -> tuple[str, str] | None:
    """(what holds the job, `host_2: 33.2 ms of host work a step (load_batch, in generate.py:2077
    load_batch) makes the other hosts wait 33.6 ms a step in all-reduce.3; on host_2, <what to do>`): the
    most it ran while the others waited, host work with the user's frame it ran in where the trace has
    Python's frames; a device's own work (`_held_by_device`); None where none stands out."""
    if found.name is not None and found.level == "device":
        return _held_by_device(found)
    if found.name is None or not found.meanwhile:
        return None
    what, name, seconds = found.meanwhile[0]
    words, advice = _HELD_BY[what]
    label = name.removeprefix("(").removesuffix(")")  # `(unannotated)`
    ran = "" if what != "host" else f" ({label}, in {found.frame})" if found.frame else f" ({label})"
    where = f" in {found.waited_in}" if found.waited_in else ""
    return words, (
        f"{found.name}: {duration(seconds)} of {words} a step{ran} makes the other hosts wait "
        f"{duration(found.wait_seconds)} a step{where}; on {found.name}, {advice}"
    )


def _held_by_device(found: Straggler) -> tuple[str, str]:
    """(`own device work`, `device 2 finishes its work 10.8 ms a step after the next latest device
    (ynn_fusion, generate.py:2813: 9.03 ms a step more than the median device) and makes the other
    devices wait 11.4 ms a step in all-reduce.1; on device 2, <what to do>`): how much later it arrives at
    the collectives, the op it spends longest in beyond the median device with its source line
    (`Straggler.extra_work`), the others' wait."""
    words, advice = _HELD_BY["device"]
    op = found.extra_work
    extra = ""
    if op is not None:
        at = f", {PurePosixPath(op[2]).name}" if op[2] else ""  # the file's base name, as a frame's is shown
        extra = f" ({op[0]}{at}: {duration(op[1])} a step more than the median device)"
    where = f" in {found.waited_in}" if found.waited_in else ""
    return words, (
        f"{found.name} finishes its work {duration(found.margin_seconds)} a step after the next latest device"
        f"{extra} and makes the other devices wait {duration(found.wait_seconds)} a step{where}; on "
        f"{found.name}, {advice}"
    )


def straggler_finding(found: Straggler) -> str:
    """The straggler as a finding: what it ran while the others waited and what to do, else who the
    others wait for."""
    held = _held(found)
    if held is not None:
        return held[1]
    return f"{found.name} is the straggler: the others wait {duration(found.wait_seconds)} a step for it"


def ops_host_text(job: JobReport) -> str:
    """Whose ops, steps, compiles and timeline the profile shows."""
    shown = f"The profile's step headline, ops, steps, compiles and timeline are {job.ops_host}'s"
    if len(job.hosts) < 2:
        return f"{shown}, the one host's."
    found = job.straggler
    if found is not None and found.name == job.ops_host:
        return (
            f"{shown}, the straggler's: what it runs is what the other hosts wait for (the part of their "
            "collectives' time spent waiting for it is their wait_seconds)."
        )
    return (
        f"{shown}, the first host's (no host stands out); a collective's wait_seconds is its wait for the "
        "last peer, the rest of its time moving data."
    )


def straggler_text(job: JobReport) -> str:
    found = job.straggler
    if found is None:
        return "No collective ran in a step without a compile: no straggler to find."
    rule = (
        f"(rule: a {found.level} stands out when the others wait for it, beyond the next latest, more than "
        f"{STRAGGLER_SHARE:.0%} of the median step, here {duration(found.threshold_seconds)})"
    )
    if found.name is None:
        return (
            f"No {found.level} stands out: the latest arrives {duration(max(0.0, found.margin_seconds))} after the "
            f"next latest (median over {found.steps} steps) {rule}."
        )
    return (
        f"{found.name} is the straggler: it arrived last at the collectives of {found.last_in_steps} of "
        f"{found.steps} steps without a compile, {duration(found.margin_seconds)} after the next latest "
        f"(median); the others wait {duration(found.wait_seconds)} a step in their collectives"
        + (f". Meanwhile it ran: {_meanwhile(found)}" if found.meanwhile else "")
        + (f"; most of it in {found.frame}" if found.frame else "")
        + f" {rule}."
    )


def _meanwhile(found: Straggler) -> str:
    named = {"compile": "compiling", "device": "its own ops", "input": "device transfers (input)"}
    total = sum(seconds for _, _, seconds in found.meanwhile)
    shown = [m for m in found.meanwhile[:4] if m[2] >= 0.01 * total]  # what took 1% of the wait or more
    return ", ".join(f"{named.get(what, name)} {duration(seconds)}" for what, name, seconds in shown)


def clock_text(clock: ClockAlignment) -> str:
    if clock.method == "one host":
        return "Clock: one host, no alignment needed."
    if clock.method == "recorded clocks":
        return (
            f"Clocks: the hosts' own, kept: on them every participant of each of the {clock.shared} collective "
            "executions shared left it after the last one arrived (one machine, or clocks that agree closer "
            "than a collective lasts)."
        )
    offsets = ", ".join(f"{h} {clock.offsets[h] * 1e3:+.2f} ms" for h in clock.offsets)
    how = {
        "collective ends": "the median difference of the ends of the collective executions each host shares "
        "with the first (every participant leaves a collective at about the same instant; the recorded clocks "
        "had one leave a collective before another arrived)",
        "step ends": "the median difference of the ends of the steps each host shares with the first (no "
        "collective execution is shared)",
    }[clock.method]
    return f"Clocks aligned to {next(iter(clock.offsets))}'s by {how}, over {clock.shared} shared: {offsets}."


def dump_lines(job: JobReport) -> list[str]:
    """Which part of the `--dump` the hosts joined, where the dump has a folder per host."""
    if all(row.dump_match in (None, DUMP_WHOLE) for row in job.hosts):
        return []
    missing = [row.host for row in job.hosts if row.dump_match == DUMP_FALLBACK]
    if len(missing) == len(job.hosts):
        return [
            "Dump: no host folder has a host's name: every host joined the whole dump (a module in several "
            "folders: the first folder's)."
        ]
    line = "Dump: each host's ops joined its own folder of the dump"
    if missing:
        line += (
            f"; {', '.join(missing)} had no folder of its name and joined the whole dump (a module in several "
            "folders: the first folder's)"
        )
    return [line + "."]


def host_bars(job: JobReport) -> list[str]:
    """A bar per host's median step where the job has several hosts (none otherwise)."""
    return _bars(job.hosts) if len(job.hosts) > 1 else []


def _bars(units: list[UnitRow]) -> list[str]:
    """One bar per host: its median step, waiting in collectives (#), other device work (=), idle (.)."""
    longest = max((u.step_seconds or 0.0 for u in units), default=0.0)
    lines: list[str] = []
    for unit in units:
        name = unit.host if unit.device is None else f"{unit.host} {unit.device}"
        step, wait = unit.step_seconds or 0.0, min(unit.wait_seconds or 0.0, unit.step_seconds or 0.0)
        lines.append(f"{name:>16} |{_bar(unit, longest):<{_BAR}}| {duration(step)}, waiting {duration(wait)}")
    return lines if longest > 0 else []


def _bar(unit: UnitRow, longest: float) -> str:
    step = unit.step_seconds or 0.0
    if longest <= 0:
        return ""
    wait = min(unit.wait_seconds or 0.0, step)
    busy = min(max(0.0, (unit.busy_seconds or 0.0) - wait), step - wait)
    cells = [round(x / longest * _BAR) for x in (wait, busy, step)]
    return "#" * cells[0] + "=" * cells[1] + "." * max(0, cells[2] - cells[0] - cells[1])


def _unit_record(row: UnitRow, start: float) -> dict[str, Any]:
    found = record(row)
    found["steps"] = [
        {k: v for k, v in record(s).items() if k != "start_ns"}
        | {"start_seconds": s.start_ns / 1e9 + row.clock_offset_seconds - start}
        for s in row.steps
    ]
    return found


def _readable_unit(row: UnitRow) -> dict[str, Any]:
    offset = f"{row.clock_offset_seconds * 1e3:+.2f} ms"
    causes = ", ".join(f"{cause} {duration(seconds)}" for cause, seconds in row.idle.items() if seconds > 0)
    return readable(record(row) | {"steps": len(row.steps), "device": row.device or "(all)"}) | {
        "clock_offset_seconds": offset,
        "idle_causes": causes,
    }


def _collective_rows(job: JobReport) -> list[dict[str, Any]]:
    return [readable(record(c)) | {"seconds": duration(c.seconds)} for c in job.collectives]


def hosts_section(source: DumpFacts) -> Section | None:
    """The report's "Hosts": a bar per host's median step (per device on one host), the straggler sentence
    and the finding of what the others wait for it; None for a profile of one device (or none)."""
    job = source.job
    if job is None or (len(job.hosts) < 2 and len(job.devices) < 2):
        return None
    units = job.hosts if len(job.hosts) > 1 else job.devices
    longest = max((u.step_seconds or 0.0 for u in units), default=0.0)
    rows = [_readable_unit(u) | {"bar": _bar(u, longest)} for u in units]
    found = job.straggler
    findings: list[Finding] = []
    if found is not None and found.name is not None:  # what it costs the job: the others' wait
        findings.append(
            Finding(
                "hosts",
                straggler_finding(found),
                found.wait_seconds,
                A_STEP,
                run_seconds=found.wait_seconds * found.steps,
            )
        )
    return Section(
        "hosts",
        "Hosts",
        " ".join([straggler_text(job), clock_text(job.clock), *dump_lines(job), ops_host_text(job)]),
        [
            section_table(
                "median step per host (# waiting in collectives, = other device work, . idle)",
                ("bar", *UNIT_COLUMNS),
                rows,
            ),
            section_table(
                "collectives per device: waiting for the last peer, moving data, exposed",
                COLLECTIVE_COLUMNS,
                _collective_rows(job),
                "xlainspect profile lists every row",
            ),
        ],
        findings,
    )


def measured_collectives(job: JobReport | None) -> dict[tuple[str, str], tuple[float, float, float]]:
    """(module label, op) -> (wait, transfer, exposed) seconds per execution, the mean over devices: what
    the report's collective rows gain from a profile."""
    sums: dict[tuple[str, str], list[float]] = {}
    for row in job.collectives if job is not None else []:
        found = sums.setdefault((row.module, row.op), [0.0, 0.0, 0.0, 0])
        found[0] += row.wait_seconds
        found[1] += row.transfer_seconds
        found[2] += row.exposed_seconds
        found[3] += row.count
    return {key: (w / n, t / n, e / n) for key, (w, t, e, n) in sums.items() if n}
