"""`cache` and `cache-misses`: jax's persistent compilation cache."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xlainspect.analysis.cache_inventory import timestamp
from xlainspect.report.document import Document, record, records, table

if TYPE_CHECKING:
    from xlainspect.analysis.cache_inventory import CachedFunction
    from xlainspect.analysis.cache_misses import CacheMiss
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
    blocks = [inventory]
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
    shown = table(title, rows, ("name", "status", "changed", "detail"))
    notes = []
    if any(r.earlier for r in rows):
        notes.append(
            f"{b} ran before {a} ({a} hit entries {b} wrote): give the earlier run first: cache-misses {b} {a}"
        )
    if all(r.status == "off" for r in rows):
        notes.append(f"{b}: no persistent-cache lines: the cache was off, or jax._src.compiler was not logged at DEBUG")
    return Document({"functions": records(rows)}, [shown], csv=shown, notes=notes)
