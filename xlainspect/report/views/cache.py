"""`cache` and `cache-misses`: jax's persistent compilation cache."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlainspect.analysis.cache_inventory import timestamp
from xlainspect.report.document import Document, record, records, table

if TYPE_CHECKING:
    from xlainspect.analysis.cache_misses import CacheMiss
    from xlainspect.analysis.commands.cache import CacheReport


def cache_document(report: CacheReport, where: str, dump: str) -> Document:
    """`{"functions", "entries"}` (and `"dump"` with one), entry times as UTC ISO 8601."""
    cached, functions, joined = report.cached, report.functions, report.joined
    entries = [record(e) | {"modified": timestamp(e.modified)} for e in cached.entries]
    data = {"functions": records(functions), "entries": entries}
    if joined is not None:
        data["dump"] = records(joined)
    note = "many entries: a key that changes per run? (jax #21159)"
    rows = [record(f) | {"note": note if f.many_entries else ""} for f in functions]
    title = f"{len(cached.entries)} entries of {len(functions)} functions in {where}"
    inventory = table(title, rows, ("name", "entries", "bytes", "compile_seconds", "oldest", "newest", "note"))
    blocks = [inventory]
    if joined is not None:
        title = f"compiles of {dump}: {sum(r.cached for r in joined)} of {len(joined)} in the cache"
        blocks.append(table(title, joined, ("function", "compile", "module_id", "cached", "matched_by", "key")))
    return Document(data, blocks, csv=inventory)


def cache_misses_document(rows: list[CacheMiss], a: str, b: str) -> Document:
    missed = sum(r.status != "hit" for r in rows)
    title = f"{b} against {a}: {missed} of {len(rows)} functions missed the persistent cache"
    shown = table(title, rows, ("name", "status", "changed", "detail"))
    notes = []
    if all(r.status == "off" for r in rows):
        notes.append(f"{b}: no persistent-cache lines: the cache was off, or jax._src.compiler was not logged at DEBUG")
    return Document({"functions": records(rows)}, [shown], csv=shown, notes=notes)
