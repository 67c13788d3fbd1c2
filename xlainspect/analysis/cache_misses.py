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

from xlainspect.dump.directory import Dump, DumpModule
from xlainspect.dump.files import read_text
from xlainspect.dump.jaxlog import COMPONENTS, JaxLog, LogCompile
from xlainspect.errors import XlaInspectError

_SEVERITY = ("hit", "miss", "not written", "off")
CUSTOM_PARTITIONING = 'custom_call_target="CustomSPMDPartitioning"'
"""How a custom_partitioning call reaches HLO; its backend_config is a Python object's address."""


@dataclass(slots=True)
class CacheMiss:
    """Why run B missed the persistent cache for one function: its status and the cache-key parts that changed."""

    name: str
    status: str
    changed: tuple[str, ...]
    """Key components whose hashes differ from A, in jax's order, over all of B's misses of the function."""
    detail: str
    earlier: bool = False
    """B wrote an entry that A hit later (by the logs' times): B ran before A, its misses are a cold start."""


def cache_misses(a: JaxLog, b: JaxLog, b_dump: Dump | None = None) -> list[CacheMiss]:
    """Per function of B, in first-compile order: its cache status and what changed since A. With B's dump,
    a changed computation that calls custom_partitioning is named as jax #21159."""
    earlier = a.by_module()
    rows = [_function_row(name, compiles, earlier.get(name, [])) for name, compiles in b.by_module().items()]
    return [_custom_partitioning(row, b_dump) for row in rows] if b_dump is not None else rows


def _custom_partitioning(row: CacheMiss, dump: Dump) -> CacheMiss:
    """The row, its detail saying why when B's HLO of the function calls custom_partitioning."""
    modules = dump.functions().get(row.name, [])
    if "computation" not in row.changed or not any(_calls_custom_partitioning(m) for m in modules):
        return row
    why = (
        "computation changed: it calls custom_partitioning, whose callback address (backend_config) is "
        "hashed into the key anew in every process (jax #21159; jax_remove_custom_partitioning_ptr_from_"
        "cache_key=True leaves it out)"
    )
    return replace(row, detail=row.detail.replace("computation changed", why, 1))


def _calls_custom_partitioning(module: DumpModule) -> bool:
    hlo = module.hlo_file("before")
    try:
        return hlo is not None and CUSTOM_PARTITIONING in read_text(hlo.path)
    except XlaInspectError:
        return False


def _status(compile_: LogCompile) -> str:
    return "miss" if compile_.cache == "written" else compile_.cache


def _function_row(name: str, compiles: list[LogCompile], earlier: list[LogCompile]) -> CacheMiss:
    statuses = [_status(c) for c in compiles]
    status = max(statuses, key=_SEVERITY.index)
    changed: dict[str, None] = {}
    notes: list[str] = []
    if len(compiles) > 1:
        counts = ", ".join(f"{statuses.count(s)} {s}" for s in dict.fromkeys(statuses))
        notes.append(f"{len(compiles)} compiles: {counts}")
    for position, compile_ in enumerate(compiles):
        if compile_.cache in ("hit", "off"):
            continue
        components, why = explain(compile_, earlier, position)
        changed.update(dict.fromkeys(components))
        notes.append(why)
    detail = "; ".join(n for n in dict.fromkeys(notes) if n)
    return CacheMiss(name, status, tuple(changed), detail, any(_hit_later(c, earlier) for c in compiles))


def explain(miss: LogCompile, earlier: list[LogCompile], position: int = 0) -> tuple[list[str], str]:
    """The key components that differ from the closest earlier compile, and a sentence saying so."""
    written = f"not written: {miss.why_not_written}" if miss.cache == "not written" else ""
    keyed = [c for c in earlier if c.key is not None]
    if not keyed:
        return [], _join("not compiled in A", written)
    if not miss.components:
        return [], _join("key differs; the log has no component hashes (log jax._src.cache_key at DEBUG)", written)
    closest = min(keyed, key=lambda c: (len(changed_components(c, miss)), c is not _at(earlier, position)))
    components = changed_components(closest, miss)
    if not components:
        return [], _join(_same_key(closest, miss), written)
    described = [_describe(name, closest, miss, components) for name in components]
    return components, _join("; ".join(described), written)


def changed_components(before: LogCompile, after: LogCompile) -> list[str]:
    """Components whose hashes differ, in jax's order (names jax 0.10.2 does not know follow)."""
    names = list(COMPONENTS) + sorted((set(before.components) | set(after.components)) - set(COMPONENTS))
    return [n for n in names if before.components.get(n) != after.components.get(n)]


def _describe(component: str, before: LogCompile, after: LogCompile, changed: list[str]) -> str:
    if component == "compile_options" and "XLA flags" in changed:
        return "compile_options changed (they hold the debug options XLA_FLAGS set)"
    if component != "XLA flags":
        return f"{component} changed"
    added = [f for f in after.xla_flags if f not in before.xla_flags]
    removed = [f for f in before.xla_flags if f not in after.xla_flags]
    if not added and not removed:
        return "XLA flags changed (the log lists no flag that differs)"
    return "XLA flags: " + ", ".join(
        ([f"added {' '.join(added)}"] if added else []) + ([f"removed {' '.join(removed)}"] if removed else [])
    )


def _same_key(earlier: LogCompile, miss: LogCompile) -> str:
    if earlier.cache == "not written":
        return f"same key as in A, where it was not written ({earlier.why_not_written})"
    if earlier.cache == "hit" and _hit_later(miss, [earlier]):
        return "same key as in A, where it was a hit of the entry B wrote: B ran before A (the cold run)"
    if earlier.cache == "hit" and miss.cache == "written" and None in (miss.finished_at, earlier.finished_at):
        return (
            "same key as in A, where it was a hit, and B wrote it: B ran before A (the cold run), or the entry "
            "was removed since (eviction?) and B wrote it again"
        )
    if earlier.cache == "hit":
        return (
            "same key as in A, where it was a hit: the entry was removed since (eviction?) or B used another cache dir"
        )
    return "same key as in A, which wrote it: the entry was removed since (eviction?) or B used another cache dir"


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


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)
