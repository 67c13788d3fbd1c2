"""Hosts of one job that compiled different programs for the same function.

In an SPMD job every host runs the same program: XLA's collectives pair up across hosts by their
place in that program, so a host that compiled another one (a Python branch on
`jax.process_index()`, a host-local flag or environment variable, another library version) waits at
its next collective for peers that never arrive; every host still reports healthy (the hang of
marin-community/marin#9042, whose workers differed in their HLO fingerprints). jax's own
multi-host check compares a fingerprint of each host's compiled program (`jax._src.interpreters.pxla`,
`_cached_compilation` with `jax_multi_host_fingerprint`); a dump holds the programs themselves, so
here the hosts' HLO text of each compile is compared, per function and compile in module-id order.

What is compared is the program as XLA was given it (before_optimizations, where every host dumped it;
else the compiled module, where every host dumped that: never one host's input with another's compiled
module), with metadata set aside: `metadata={...}` of each instruction and the module's
stack-frame tables (FileNames, FunctionNames, FileLocations, StackFrames; hlo/fast.py FRAME_TABLES)
hold source places, which differ between hosts whose code is laid out differently without the
program differing. Names are compared by their place in the module (`hlo.fastpath.canonical_names`):
XLA numbers them per module, so a program printed with other numbers is the same program, and the
first differing line quoted is a real difference, not `%constant.9` vs `%constant.10`.

Data only: doctor words its finding (`analysis/doctor.py`, with its other checks), the count-recompiles
report its notes (`report/views.py`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from xlainspect.dump.directory import Dump
from xlainspect.dump.files import read_bytes
from xlainspect.dump.module import DumpModule, SkippedFile
from xlainspect.errors import XlaInspectError
from xlainspect.hlo.fastpath import canonical_names, program_lines
from xlainspect.workers import map_groups


@dataclass(frozen=True, slots=True)
class HostDisagreement:
    """Hosts that compiled a function otherwise than most hosts did: another program at one of its
    compiles, or another number of compiles."""

    function: str
    compile: int | None
    """The compile (1 = the first, in module-id order on each host) whose programs differ; None where
    the hosts compiled the function a different number of times."""
    usual_hosts: tuple[str, ...]
    """The hosts that compiled it as most did ("" is the dump's root folder)."""
    odd_hosts: tuple[str, ...]
    usual_line: str = ""
    """The first line of the usual hosts' program (metadata aside, names compared by their place) that
    the odd hosts' differs in, as printed; "" where the odd program only adds lines at its end, or the
    counts differ."""
    odd_line: str = ""
    line: int = 0
    """That line's number in the odd program's text, metadata tables aside (1 = its HloModule line)."""
    usual_count: int = 0
    odd_count: int = 0


def host_disagreements(
    dump: Dump, skipped: list[SkippedFile] | None = None, scheduler: str | None = None
) -> list[HostDisagreement]:
    """Every function whose hosts disagree, in first-compile order: the hosts with another number of
    compiles, then, compile by compile, the hosts with another program. [] for a dump of one host, or
    of several runs (`load_dump([a, b])`: runs to compare, not the hosts of one job). A program that
    cannot be read is compared with none and added to `skipped`; without `skipped` (doctor, whose
    unreadable-files finding names it) it is only left out. With a `scheduler` (a Dask scheduler's
    address) each host's programs are read and digested by one task on that cluster (`_digests`): the
    answer is the same."""
    if dump.runs or len({m.host for m in dump.modules}) < 2:
        return []
    functions = {name: hosts for name, modules in dump.functions().items() if len(hosts := _by_host(modules)) > 1}
    digests = _digests(list(functions.values()), scheduler) if scheduler is not None else None
    found: list[HostDisagreement] = []
    for function, hosts in functions.items():
        found += _count_disagreements(function, hosts) + _program_disagreements(function, hosts, skipped, digests)
    return found


Digests = dict[str, "bytes | SkippedFile"]
"""Each compared program file's digest (`_program`), or why it could not be read, by its location."""


def _digests(functions: list[dict[str, list[DumpModule]]], scheduler: str) -> Digests:
    """The digest of every program file host_disagreements compares, each host's files read by one task
    on the cluster at `scheduler`: only 16 bytes a file travel back, not the programs."""
    wanted = [
        (host, program.location)
        for hosts in functions
        for _, stage, compiled in _compared(hosts)
        for host, module in compiled.items()
        if (program := module.file("hlo", stage)) is not None
    ]
    locations = [location for _, location in wanted]
    return dict(zip(locations, map_groups(program_digest, locations, [host for host, _ in wanted], scheduler)))


def program_digest(location: str) -> bytes | SkippedFile:
    """The digest of a program file as compared (`_program`), or why it cannot be read."""
    try:
        return _program(read_bytes(location))[0]
    except XlaInspectError as error:
        return SkippedFile.of(Path(location), error)


def uncompared_programs(dump: Dump) -> list[DumpModule]:
    """The compiles `host_disagreements` could not compare: their hosts dumped no stage in common (one
    only the program jax gave XLA, another only the compiled module), each compile's modules."""
    if dump.runs or len({m.host for m in dump.modules}) < 2:
        return []
    found: list[DumpModule] = []
    for modules in dump.functions().values():
        hosts = list(_by_host(modules).values())
        for index in range(max(map(len, hosts))):
            compiled = [compiles[index] for compiles in hosts if index < len(compiles)]
            if len(compiled) > 1 and _common_stage(compiled) is None:
                found += compiled
    return found


def _by_host(modules: list[DumpModule]) -> dict[str, list[DumpModule]]:
    """Each host's compiles of one function, in module-id order (per timestamp, for timestamped dumps)."""
    hosts: dict[str, list[DumpModule]] = {}
    for module in modules:
        hosts.setdefault(module.host, []).append(module)
    return {host: sorted(found, key=lambda m: (m.timestamp or 0, m.module_id or 0)) for host, found in hosts.items()}


def _count_disagreements(function: str, hosts: dict[str, list[DumpModule]]) -> list[HostDisagreement]:
    counts = {host: len(compiles) for host, compiles in hosts.items()}
    usual = Counter(counts.values()).most_common(1)[0][0]
    usual_hosts = tuple(h for h, n in counts.items() if n == usual)
    by_count: dict[int, list[str]] = {}
    for host, count in counts.items():
        if count != usual:
            by_count.setdefault(count, []).append(host)
    return [
        HostDisagreement(function, None, usual_hosts, tuple(odd), usual_count=usual, odd_count=count)
        for count, odd in sorted(by_count.items())
    ]


def _program_disagreements(
    function: str, hosts: dict[str, list[DumpModule]], skipped: list[SkippedFile] | None, digests: Digests | None
) -> list[HostDisagreement]:
    """Compile by compile, the hosts whose program (metadata aside) is not the most hosts' one."""
    found: list[HostDisagreement] = []
    for index, stage, compiled in _compared(hosts):
        if digests is None:
            groups = _by_program(compiled, stage, skipped)
        else:
            groups = _by_digest(compiled, stage, skipped, digests)
        if len(groups) < 2:
            continue
        (usual, usual_lines), *odds = sorted(groups, key=lambda g: len(g[0]), reverse=True)  # ties: host order
        for odd, odd_lines in odds:
            number, usual_line, odd_line = _first_difference(usual_lines, odd_lines)
            found.append(HostDisagreement(function, index + 1, tuple(usual), tuple(odd), usual_line, odd_line, number))
    return found


def _compared(hosts: dict[str, list[DumpModule]]) -> Iterator[tuple[int, str, dict[str, DumpModule]]]:
    """Each compile index (0 = the first) whose programs are compared, the stage they are compared at,
    and each host's compile."""
    for index in range(max(map(len, hosts.values()))):
        compiled = {host: compiles[index] for host, compiles in hosts.items() if index < len(compiles)}
        stage = _common_stage(compiled.values())
        if stage is not None:  # else no stage every host dumped: nothing to compare the programs at
            yield index, stage, compiled


def _common_stage(modules: Iterable[DumpModule]) -> str | None:
    """The stage all hosts' programs of one compile are compared at: the program jax gave XLA
    (before_optimizations) where every host dumped it, else the compiled module where every host did;
    None where neither. A host that hit jax's persistent compilation cache dumps no before_optimizations
    (XLA compiled nothing), and a compiled module always differs from its input (`is_scheduled=true`)."""
    modules = list(modules)
    for stage in ("before", "after"):
        if all(m.file("hlo", stage) is not None for m in modules):
            return stage
    return None


_DISTINCT_TEXTS = 4
"""Distinct file contents compared byte for byte at one compile; the files past them are compared by
their programs with metadata set aside at once (then the hosts differ anyway)."""


Program = tuple[list[tuple[int, bytes]], list[bytes]]
"""A program's lines as compared (metadata and blank lines aside, names canonical; each with its
number among the printed lines) and as printed (metadata aside). Blank lines are no difference: a
compiled module that jax's persistent cache loaded prints no stack-frame tables, so not the blank
lines between them either."""


def _by_program(
    compiled: dict[str, DumpModule], stage: str, skipped: list[SkippedFile] | None
) -> list[tuple[list[str], Program]]:
    """The hosts grouped by their program at `stage` with metadata set aside, in host order, each group with its
    program's lines (`Program`); an unreadable file is in no group (it is no program difference) and
    goes to `skipped`. Each file is read once and not kept: it is compared byte for byte with the few
    distinct texts seen at this compile (the hosts of a healthy job wrote the same bytes: one text, and
    comparing is cheaper than hashing); only distinct texts have their metadata set aside and hashed."""
    distinct: list[tuple[bytes, list[str]]] = []
    programs: dict[bytes, tuple[list[str], Program]] = {}
    for host, module in compiled.items():
        text = _program_bytes(module, stage, skipped)
        if text is None:
            continue
        same = next((hosts for seen, hosts in distinct if seen == text), None)
        if same is not None:
            same.append(host)
        elif len(distinct) < _DISTINCT_TEXTS:
            distinct.append((text, [host]))
        else:
            _add_program(programs, [host], text)
    if len(distinct) < 2 and not programs:
        return [(hosts, ([], [])) for _, hosts in distinct]
    for text, hosts in distinct:
        _add_program(programs, hosts, text)
    order = {host: number for number, host in enumerate(compiled)}
    groups = [(sorted(hosts, key=order.__getitem__), lines) for hosts, lines in programs.values()]
    return sorted(groups, key=lambda g: order[g[0][0]])


def _add_program(programs: dict[bytes, tuple[list[str], Program]], hosts: list[str], text: bytes) -> None:
    """`hosts` join the group of `text`'s program (metadata aside, names canonical), a new group where
    none has it."""
    digest, program = _program(text)
    programs.setdefault(digest, ([], program))[0].extend(hosts)


def _program(text: bytes) -> tuple[bytes, Program]:
    """A program's digest as compared (metadata and blank lines aside, names canonical) and its lines."""
    printed = program_lines(text)
    compared = [(number, line) for number, line in enumerate(canonical_names(printed), 1) if line.strip()]
    return hashlib.blake2b(b"\n".join(line for _, line in compared), digest_size=16).digest(), (compared, printed)


def _by_digest(
    compiled: dict[str, DumpModule], stage: str, skipped: list[SkippedFile] | None, digests: Digests
) -> list[tuple[list[str], Program]]:
    """`_by_program` of programs digested on a cluster: the hosts grouped by their program's digest,
    in host order; where they differ, each group's program is read here (of its first host) for the
    lines that differ."""
    groups: dict[bytes, list[str]] = {}
    for host, module in compiled.items():
        program = module.file("hlo", stage)
        found = digests[program.location] if program is not None else None
        if isinstance(found, SkippedFile) and skipped is not None:
            found.add_to(skipped)
        if isinstance(found, bytes):
            groups.setdefault(found, []).append(host)
    if len(groups) < 2:
        return [(hosts, ([], [])) for hosts in groups.values()]
    return [(hosts, _program(_read_program(compiled[hosts[0]], stage))[1]) for hosts in groups.values()]


def _read_program(module: DumpModule, stage: str) -> bytes:
    program = module.file("hlo", stage)
    assert program is not None, "a digested program has a file"
    return module.read(program, keep=False)


def _program_bytes(module: DumpModule, stage: str, skipped: list[SkippedFile] | None) -> bytes | None:
    """The bytes of the module's HLO at `stage` (what count-recompiles read of it is not read again, what
    it did not is not kept); None when it cannot be read (added to `skipped`)."""
    program = module.file("hlo", stage)
    if program is None:
        return None
    try:
        return module.read(program, keep=False)
    except XlaInspectError as error:
        if skipped is not None:
            SkippedFile.of(program.path, error).add_to(skipped)
        return None


def _first_difference(usual: Program, odd: Program) -> tuple[int, str, str]:
    """(line number in the odd program, the usual line, the odd line, as printed) of the first line
    that differs as compared; where one program is the other's start, the line past the shorter one."""
    pairs = zip(usual[0], odd[0])
    first = next(((u, o) for u, o in pairs if u[1] != o[1]), None)
    if first is not None:
        return first[1][0], _line(usual[1], first[0][0]), _line(odd[1], first[1][0])
    shorter = min(len(usual[0]), len(odd[0]))
    past = [lines[shorter][0] if shorter < len(lines) else 0 for lines in (usual[0], odd[0])]
    number = past[1] or len(odd[1]) + 1
    return number, _line(usual[1], past[0]), _line(odd[1], past[1])


def _line(lines: list[bytes], number: int) -> str:
    return _text(lines[number - 1]) if 0 < number <= len(lines) else ""


def _text(line: bytes) -> str:
    return line.decode("utf-8", errors="replace").strip()
