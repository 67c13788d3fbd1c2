"""Why run B missed the persistent compilation cache: B's compiles against run A's, by cache-key component.

jax hashes a key from COMPONENTS (jaxlog.COMPONENTS) and logs each component's own hash. A miss of a
function that A compiled too is explained by the components whose hashes differ from the closest of A's
compiles of that function (fewest differences; the same position on a tie): "computation" (the program:
code, shapes, constants; jax #21159's custom_partitioning pointer), "XLA flags" (the flags the log lists
are diffed), "compile_options" (jit options, and the debug options XLA_FLAGS set), "jax_lib version",
"backend version", "accelerator_config" (devices, topology), "compression" (zstandard vs zlib),
"custom_hook". A miss with A's very key means A's entry was not written or is gone, or, where A hit that
key and B wrote it, that B ran first: A hit the entry B wrote (the logs' times say which; the arguments
were given the other way round).

Status per function in B: "hit", "miss" (compiled, and written unless the log says otherwise),
"not written" (compiled and not stored, the detail says why), "off" (no cache lines: no cache in use).
A function compiled several times takes its worst status; the detail counts them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from xlainspect.dump.directory import Dump
from xlainspect.dump.files import read_text
from xlainspect.dump.jaxlog import COMPONENTS, JaxLog, LogCompile
from xlainspect.dump.module import DumpModule, SkippedFile
from xlainspect.errors import XlaInspectError
from xlainspect.hlo.fastpath import calls_custom_call_target

_SEVERITY = ("hit", "miss", "not written", "off")
CUSTOM_PARTITIONING = "CustomSPMDPartitioning"
"""The custom-call target a custom_partitioning call reaches HLO as; its backend_config is a Python object's
address."""


SameKey = Literal["not_written_in_a", "b_ran_first", "b_ran_first_or_evicted", "evicted_after_hit", "evicted"]
"""Why B missed a key A had: A did not write it, A hit the entry B wrote (B ran first), A hit it and B
wrote it without the logs' times to say which came first, A hit it and the entry is gone, A wrote it and
the entry is gone (evicted, or B used another cache dir)."""


@dataclass(frozen=True, slots=True)
class MissReason:
    """Why one compile of B missed, as data (`report.views.cache.miss_detail` words it): not compiled in A
    (`not_in_a`), a key the log gives no component hashes of (`no_hashes`), components that changed
    (`changed`), or A's very key (`same_key`)."""

    kind: Literal["not_in_a", "no_hashes", "changed", "same_key"]
    components: tuple[str, ...] = ()
    """changed: the key components whose hashes differ from the closest of A's compiles, in jax's order."""
    added: tuple[str, ...] = ()
    """changed with XLA flags: the flags B's log lists and A's does not."""
    removed: tuple[str, ...] = ()
    same_key: SameKey | None = None
    a_not_written: str = ""
    """same_key not_written_in_a: why A did not write it (jax's words)."""
    not_written: str | None = None
    """B's compile was not written: why (jax's words)."""


@dataclass(slots=True)
class CacheMiss:
    """Why run B missed the persistent cache for one function: its status and the cache-key parts that changed."""

    name: str
    status: str
    changed: tuple[str, ...]
    """Key components whose hashes differ from A, in jax's order, over all of B's misses of the function."""
    statuses: tuple[tuple[str, int], ...]
    """Per status, in first-seen order, how many of the function's compiles had it."""
    reasons: tuple[MissReason, ...]
    """Why each compile that missed did, each reason once."""
    earlier: bool = False
    """B wrote an entry that A hit later (by the logs' times): B ran before A, its misses are a cold start."""
    custom_partitioning: bool = False
    """The changed computation calls custom_partitioning, whose callback address is hashed into the key
    anew in every process (jax #21159); read from B's dump."""


def cache_misses(
    a: JaxLog, b: JaxLog, b_dump: Dump | None = None, skipped: list[SkippedFile] | None = None
) -> list[CacheMiss]:
    """Per function of B, in first-compile order: its cache status and what changed since A. With B's dump,
    a changed computation that calls custom_partitioning is named as jax #21159; a file of it that cannot
    be read is added to `skipped` (raised where there is no `skipped` to add it to)."""
    earlier = a.by_module()
    rows = [_function_row(name, compiles, earlier.get(name, [])) for name, compiles in b.by_module().items()]
    if b_dump is None:
        return rows
    return [_custom_partitioning(row, b_dump, skipped) for row in rows]


def _custom_partitioning(row: CacheMiss, dump: Dump, skipped: list[SkippedFile] | None) -> CacheMiss:
    """The row, its detail saying why when B's HLO of the function calls custom_partitioning."""
    modules = dump.functions().get(row.name, [])
    if "computation" not in row.changed or not any(_calls_custom_partitioning(m, skipped) for m in modules):
        return row
    return replace(row, custom_partitioning=True)


def _calls_custom_partitioning(module: DumpModule, skipped: list[SkippedFile] | None) -> bool:
    hlo = module.hlo_file("before")
    try:
        return hlo is not None and calls_custom_call_target(read_text(hlo.path), CUSTOM_PARTITIONING)
    except XlaInspectError as error:
        if hlo is None or skipped is None:
            raise
        SkippedFile.of(hlo.path, error).add_to(skipped)
        return False


def _status(compile_: LogCompile) -> str:
    return "miss" if compile_.cache == "written" else compile_.cache


def _function_row(name: str, compiles: list[LogCompile], earlier: list[LogCompile]) -> CacheMiss:
    statuses = [_status(c) for c in compiles]
    status = max(statuses, key=_SEVERITY.index)
    reasons = [
        explain(compile_, earlier, position)
        for position, compile_ in enumerate(compiles)
        if compile_.cache not in ("hit", "off")
    ]
    changed = dict.fromkeys(name for reason in reasons for name in reason.components)
    counts = tuple((s, statuses.count(s)) for s in dict.fromkeys(statuses))
    later = any(_hit_later(c, earlier) for c in compiles)
    return CacheMiss(name, status, tuple(changed), counts, tuple(dict.fromkeys(reasons)), later)


def explain(miss: LogCompile, earlier: list[LogCompile], position: int = 0) -> MissReason:
    """Why `miss` missed: the key components that differ from the closest earlier compile, or why not."""
    written = miss.why_not_written if miss.cache == "not written" else None
    keyed = [c for c in earlier if c.key is not None]
    if not keyed:
        return MissReason("not_in_a", not_written=written)
    if not miss.components:
        return MissReason("no_hashes", not_written=written)
    closest = min(keyed, key=lambda c: (len(changed_components(c, miss)), c is not _at(earlier, position)))
    components = changed_components(closest, miss)
    if not components:
        return replace(_same_key(closest, miss), not_written=written)
    flags = "XLA flags" in components
    added = tuple(f for f in miss.xla_flags if f not in closest.xla_flags) if flags else ()
    removed = tuple(f for f in closest.xla_flags if f not in miss.xla_flags) if flags else ()
    return MissReason("changed", tuple(components), added, removed, not_written=written)


def changed_components(before: LogCompile, after: LogCompile) -> list[str]:
    """Components whose hashes differ, in jax's order (names jax 0.10.2 does not know follow)."""
    names = list(COMPONENTS) + sorted((set(before.components) | set(after.components)) - set(COMPONENTS))
    return [n for n in names if before.components.get(n) != after.components.get(n)]


def _same_key(earlier: LogCompile, miss: LogCompile) -> MissReason:
    if earlier.cache == "not written":
        return MissReason("same_key", same_key="not_written_in_a", a_not_written=earlier.why_not_written)
    if earlier.cache == "hit" and _hit_later(miss, [earlier]):
        return MissReason("same_key", same_key="b_ran_first")
    if earlier.cache == "hit" and miss.cache == "written" and None in (miss.finished_at, earlier.finished_at):
        return MissReason("same_key", same_key="b_ran_first_or_evicted")
    return MissReason("same_key", same_key="evicted_after_hit" if earlier.cache == "hit" else "evicted")


def _hit_later(written: LogCompile, earlier: list[LogCompile]) -> bool:
    """B's compile wrote its key and one of A's compiles hit that key after it, by the logs' times: A read
    what B wrote, so B ran first. Without times (a log format with none) nothing is concluded."""
    if written.cache != "written" or written.key is None or written.finished_at is None:
        return False
    return any(
        c.cache == "hit" and c.key == written.key and c.finished_at is not None and c.finished_at > written.finished_at
        for c in earlier
    )


def _at(compiles: list[LogCompile], position: int) -> LogCompile | None:
    return compiles[position] if position < len(compiles) else None
