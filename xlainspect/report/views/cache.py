"""`cache` and `cache-misses`: jax's persistent compilation cache."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlainspect.analysis.cache_inventory import timestamp
from xlainspect.report.document import Block, Document, record, records, table

if TYPE_CHECKING:
    from xlainspect.analysis.cache_inventory import CachedFunction
    from xlainspect.analysis.cache_misses import CacheMiss, MissReason
    from xlainspect.analysis.commands.cache import CacheReport


def cache_document(report: CacheReport, where: str, dump: str) -> Document:
    """`{"functions", "entries"}` (and `"dump"` with one), entry times as UTC ISO 8601."""
    cached, functions, joined = report.cached, report.functions, report.joined
    entries = [record(e) | {"modified": timestamp(e.modified)} for e in cached.entries]
    data = {"functions": records(functions), "entries": entries}
    if joined is not None:
        data["dump"] = records(joined)
    rows = [record(f) | {"note": _note(f)} for f in functions]
    title = f"{len(cached.entries)} entries of {len(functions)} functions in {where}"
    columns = ("name", "entries", "programs", "bytes", "compile_seconds", "oldest", "newest", "note")
    inventory = table(title, rows, columns)
    blocks: list[Block] = [inventory]
    if joined is not None:
        title = f"compiles of {dump}: {sum(r.cached for r in joined)} of {len(joined)} in the cache"
        blocks.append(table(title, joined, ("function", "compile", "module_id", "cached", "matched_by", "key")))
    return Document(data, blocks, csv=inventory)


def _note(function: CachedFunction) -> str:
    """Why a function holds one program under several keys; "" where each entry is another program."""
    if not function.same_program:
        return ""
    return "one program, several keys: a key part changed between runs, or changes every run (jax #21159)?"


def cache_misses_document(rows: list[CacheMiss], a: str, b: str) -> Document:
    missed = sum(r.status != "hit" for r in rows)
    title = f"{b} against {a}: {missed} of {len(rows)} functions missed the persistent cache"
    worded = [miss_record(r) for r in rows]
    shown = table(title, worded, ("name", "status", "changed", "detail"))
    notes: list[str] = []
    if any(r.earlier for r in rows):
        notes.append(
            f"{b} ran before {a} ({a} hit entries {b} wrote): give the earlier run first: cache-misses {b} {a}"
        )
    if all(r.status == "off" for r in rows):
        notes.append(f"{b}: no persistent-cache lines: the cache was off, or jax._src.compiler was not logged at DEBUG")
    return Document({"functions": worded}, [shown], csv=shown, notes=notes)


def miss_record(row: CacheMiss) -> dict[str, object]:
    """A function's row as JSON and the table show it: what happened and why in one `detail`."""
    detail = miss_detail(row)
    return {"name": row.name, "status": row.status, "changed": row.changed, "detail": detail, "earlier": row.earlier}


_CUSTOM_PARTITIONING = (
    "computation changed: it calls custom_partitioning, whose callback address (backend_config) is "
    "hashed into the key anew in every process (jax #21159; jax_remove_custom_partitioning_ptr_from_"
    "cache_key=True leaves it out)"
)


def miss_detail(row: CacheMiss) -> str:
    """`2 compiles: 1 miss, 1 hit; XLA flags: added ...`: how many compiles had which status, then why each
    miss missed."""
    counts = ", ".join(f"{n} {status}" for status, n in row.statuses)
    compiles = sum(n for _, n in row.statuses)
    notes = [f"{compiles} compiles: {counts}"] if compiles > 1 else []
    detail = "; ".join(dict.fromkeys([*notes, *(_reason_text(r) for r in row.reasons)]))
    return detail.replace("computation changed", _CUSTOM_PARTITIONING, 1) if row.custom_partitioning else detail


def _reason_text(reason: MissReason) -> str:
    written = [f"not written: {reason.not_written}"] if reason.not_written is not None else []
    return "; ".join([_why(reason), *written])


_SAME_KEY = {
    "b_ran_first": "same key as in A, where it was a hit of the entry B wrote: B ran before A (the cold run)",
    "b_ran_first_or_evicted": "same key as in A, where it was a hit, and B wrote it: B ran before A (the cold run), "
    "or the entry was removed since (eviction?) and B wrote it again",
    "evicted_after_hit": "same key as in A, where it was a hit: the entry was removed since (eviction?) or B used "
    "another cache dir",
    "evicted": "same key as in A, which wrote it: the entry was removed since (eviction?) or B used another cache dir",
}


def _why(reason: MissReason) -> str:
    if reason.kind == "not_in_a":
        return "not compiled in A"
    if reason.kind == "no_hashes":
        return "key differs; the log has no component hashes (log jax._src.cache_key at DEBUG)"
    if reason.kind == "same_key":
        if reason.same_key == "not_written_in_a":
            return f"same key as in A, where it was not written ({reason.a_not_written})"
        return _SAME_KEY[reason.same_key or "evicted"]
    return "; ".join(_component_text(name, reason) for name in reason.components)


def _component_text(component: str, reason: MissReason) -> str:
    if component == "compile_options" and "XLA flags" in reason.components:
        return "compile_options changed (they hold the debug options XLA_FLAGS set)"
    if component != "XLA flags":
        return f"{component} changed"
    if not reason.added and not reason.removed:
        return "XLA flags changed (the log lists no flag that differs)"
    return "XLA flags: " + ", ".join(
        ([f"added {' '.join(reason.added)}"] if reason.added else [])
        + ([f"removed {' '.join(reason.removed)}"] if reason.removed else [])
    )
