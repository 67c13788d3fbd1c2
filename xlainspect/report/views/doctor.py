"""`doctor`: a dump's findings, each worded: what the check found means, and what to do about it."""

from __future__ import annotations

from xlainspect.analysis.divergence import HostDisagreement
from xlainspect.analysis.doctor import DumpHealth, HealthFinding
from xlainspect.report.document import Document, Lines, records, table

EXAMPLES = 3
"""Hosts (and functions of a host) a host finding shows."""
SHOWN = 100
"""Characters of a differing line a host-programs example shows."""

ACTIONS = {
    "unreadable-files": "Re-run the dump, or delete the files; `--strict` makes commands fail on them.",
    "truncated-files": "Wait for the job to finish, or re-run it; the module's other stages may still be complete.",
    "unparsable-modules": "Run `xlainspect parse FILE` for the place; report the line if XLA wrote it.",
    "missing-after-optimizations": "Check the job's log for a compile error or OOM kill; count these as attempted "
    "compiles only.",
    "unknown-files": "Nothing to do for the counts; tell xlainspect's maintainers the file names so it learns them.",
    "module-id-collision": "Give every process its own --xla_dump_to folder (e.g. one per host), or empty it "
    "between runs.",
    "dump-cap-reached": "Raise --xla_dump_max_hlo_modules (or narrow --xla_dump_hlo_module_re) and re-run.",
    "per-pass-files": "Nothing to fix; drop --xla_dump_hlo_pass_re when you only need before/after HLO.",
    "mixed-platforms": "Dump each platform (or job) into its own folder, or filter modules by platform.",
    "text-dumps-off": "Re-run with --xla_dump_hlo_as_text (it may be combined with --xla_dump_hlo_as_proto).",
    "host-compile-counts": "Run count-recompiles on one usual and one odd host folder and diff them "
    "(xlainspect diff A B).",
    "host-programs-uncompared": "Dump the same stages on every host (a host whose compile hit jax's persistent "
    "cache dumps no before_optimizations: run it with the cache off, or compare the compiled modules).",
    "host-programs": "Make the traced program the same on every host (no host-dependent Python in jitted code); "
    "`xlainspect diff` a usual and an odd host's folder shows the whole difference.",
}
"""What to do about each check's finding."""


COLUMNS = ("check", "severity", "count", "examples", "explanation", "action")
"""A finding as doctor writes it: its table's columns and its JSON keys."""


def doctor_document(health: DumpHealth) -> Document:
    worded = [worded_finding(f) for f in health.findings]
    data: dict[str, object] = {"root": str(health.root), "modules": health.modules, "files": health.files}
    data["findings"] = records(worded)
    verdict = f"{len(worded)} findings" if worded else "no findings: the dump looks healthy"
    title = f"{health.root}: {health.modules} modules, {health.files} files, {verdict}"
    rows = table(title, worded, COLUMNS)
    # A terminal reads a healthy dump's title as one sentence, not over an empty table; Markdown (a pull
    # request's comment, a report) keeps the table's shape, as JSON and CSV do.
    return Document(data, [rows] if worded else [Lines(title)], csv=rows, markdown=[rows])


def worded_finding(found: HealthFinding) -> dict[str, object]:
    """The finding with its examples, explanation and action in words (`COLUMNS`)."""
    worded = (found.check, found.severity, found.count, examples(found), explanation(found), ACTIONS[found.check])
    return dict(zip(COLUMNS, worded))


def examples(found: HealthFinding) -> tuple[str, ...]:
    """Where to look: the finding's paths, or for a host check, its odd hosts and what they did."""
    if found.check == "host-compile-counts":
        hosts = list(dict.fromkeys(c.host for c in found.odd_counts))[:EXAMPLES]
        return tuple(f"{host or '.'}: {', '.join(_odd_functions(found, host))}" for host in hosts)
    if found.check == "host-programs":
        return tuple(dict.fromkeys(_divergence_example(d) for d in found.disagreements))[:EXAMPLES]
    return found.examples


def _odd_functions(found: HealthFinding, host: str) -> list[str]:
    return [f"{c.function} {c.count} (most hosts {c.usual})" for c in found.odd_counts if c.host == host][:EXAMPLES]


def _divergence_example(found: HostDisagreement) -> str:
    """`host_2: jit_f compile 1 differs from host_0, host_1 at line 14: <usual> vs <odd>`: where to look."""
    return (
        f"{host_list(found.odd_hosts)}: {found.function} compile {found.compile} differs from "
        f"{host_list(found.usual_hosts)} at line {found.line}: "
        f"{found.usual_line[:SHOWN]!r} vs {found.odd_line[:SHOWN]!r}"
    )


def host_list(hosts: tuple[str, ...], shown: int = 3) -> str:
    """`host_0, host_1, host_3 and 1,020 more`: a pod's hosts named without naming a thousand."""
    named = ", ".join(h or "." for h in hosts[:shown])
    return named + (f" and {len(hosts) - shown:,} more" if len(hosts) > shown else "")


def explanation(found: HealthFinding) -> str:
    """What the check's finding means for the counts made from the dump."""
    check = found.check
    if check == "unparsable-modules":
        first = f" First: {found.first_error}" if found.first_error else ""
        return (
            "Complete HLO text that xlainspect cannot parse: commands skip these modules, so their counts "
            f"and diffs leave them out (diff marks the function unknown).{first}"
        )
    if check == "dump-cap-reached":
        cut = f"; {', '.join(found.names)} stopped at its before_optimizations file (the cap, not a crash)"
        left = f"; {len(found.folders)} later compiles left only jax's per-module folder ({found.folders[0]}, ...)"
        return (
            f"--xla_dump_max_hlo_modules={found.cap} and the dump holds {found.modules} modules: compiles after "
            "the cap were not dumped, so recompile counts are a lower bound"
            + (cut if found.names else "")
            + (left if found.folders else "")
            + "."
        )
    if check == "per-pass-files":
        return (
            f"--xla_dump_hlo_pass_re wrote {found.count} between-pass HLO files for {found.modules} module(s): "
            "counting files (ls | wc -l) overstates compiles; xlainspect counts modules."
        )
    if check == "mixed-platforms":
        return (
            f"Modules for {', '.join(found.names)} share one folder: several jobs wrote here, and "
            "per-function compile counts mix platforms."
        )
    if check == "host-compile-counts":
        return (
            f"{found.count} of {found.hosts} hosts compiled some function a different number of times than "
            "most hosts: those hosts saw other shapes or code (a host-dependent branch or batch), or lost "
            "compiles (a crash, the dump cap)."
        )
    return EXPLANATIONS[check]


EXPLANATIONS = {
    "unreadable-files": "HLO text files that are binary, not UTF-8, compressed wrongly or empty; every command "
    "skips them.",
    "truncated-files": "HLO text ends mid-computation (the process was killed, or is still writing); commands "
    "skip them.",
    "missing-after-optimizations": "A module was dumped before optimization but has no after-optimizations "
    "file: its compile crashed or was killed, it was filtered out, or a persistent compilation cache hit "
    "skipped it.",
    "unknown-files": "Files named like a module's dump files, of a kind xlainspect does not know (a newer XLA "
    "may write new ones): every count is made without them.",
    "module-id-collision": "One module id names different modules: several processes (hosts, or repeated runs) "
    "wrote into one folder, and XLA's per-process ids restart at 0, so files may have overwritten each other.",
    "text-dumps-off": "Modules dumped as HLO protos only (--xla_dump_hlo_as_text=false): xlainspect reads HLO "
    "text, so these modules are invisible to every other command.",
    "host-programs-uncompared": "Compiles whose hosts dumped no HLO stage in common (one only the program jax "
    "gave XLA, another only the compiled module): their programs could not be compared, so host-programs "
    "says nothing of them.",
    "host-programs": "Hosts of one job compiled another program for the same function and compile (metadata "
    "aside): in an SPMD job such a host waits at its next collective for peers that never come, and every "
    "host still looks healthy. A Python branch on jax.process_index(), a host-local flag or environment "
    "variable, or another library version on that host makes one.",
}
"""What the checks whose words need no values found means."""
