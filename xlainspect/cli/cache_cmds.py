"""`xlainspect cache DIR` (what jax's persistent compilation cache holds) and `xlainspect cache-misses A B`
(why run B missed it)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from xlainspect.cli.app import FormatOpt, LogOpt, app, note_skipped, user_errors
from xlainspect.cli.render import OutputFormat, emit_json, emit_rows, stderr_console
from xlainspect.errors import XlaInspectError


@app.command()
def cache(
    path: Annotated[Path, typer.Argument(help="A jax_compilation_cache_dir.", show_default=False)],
    dump: Annotated[
        Path | None,
        typer.Option("--dump", help="A dump directory: say which of its compiles have an entry.", show_default=False),
    ] = None,
    log: LogOpt = None,
    many: Annotated[int, typer.Option("--many", help="Flag functions with more entries than this.")] = 3,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Per function: cache entries, bytes, the compile seconds stored in them, oldest and newest write;
    functions with many entries (one per run: jax #21159). Damaged or foreign files are named on stderr."""
    from xlainspect.analysis.cache_inventory import cache_inventory, dump_entries
    from xlainspect.dump.compilation_cache import read_cache_dir
    from xlainspect.dump.directory import load_dump
    from xlainspect.dump.jaxlog import run_log

    with user_errors():
        if log is not None and dump is None:
            raise XlaInspectError("--log is the log of the run of --dump DIR: give both")
        cached = read_cache_dir(path)
        joined = dump_entries(cached, load_dump(dump), run_log(dump, log)) if dump is not None else None
    functions = cache_inventory(cached, many)
    if fmt is OutputFormat.json:
        emit_json(_document(cached, functions, joined))
    else:
        rows = [dataclasses.asdict(f) | {"note": _note(f)} for f in functions]
        emit_rows(
            rows,
            ["name", "entries", "bytes", "compile_seconds", "oldest", "newest", "note"],
            fmt,
            title=f"{len(cached.entries)} entries of {len(functions)} functions in {path}",
        )
        if joined is not None:
            emit_rows(
                [dataclasses.asdict(r) for r in joined],
                ["function", "compile", "module_id", "cached", "matched_by", "key"],
                fmt,
                title=f"compiles of {dump}: {sum(r.cached for r in joined)} of {len(joined)} in the cache",
            )
    note_skipped(cached)


def _document(cached, functions, joined) -> dict:
    """`{"functions", "entries"}`, and `"dump"` with --dump; entry times as UTC ISO 8601."""
    from xlainspect.analysis.cache_inventory import timestamp

    entries = [dataclasses.asdict(e) | {"modified": timestamp(e.modified)} for e in cached.entries]
    document = {"functions": [dataclasses.asdict(f) for f in functions], "entries": entries}
    return document | ({"dump": [dataclasses.asdict(r) for r in joined]} if joined is not None else {})


def _note(function) -> str:
    return "many entries: a key that changes per run? (jax #21159)" if function.many_entries else ""


def _dump_if_any(path: Path):
    """The dump beside B's log (a capture directory), for the HLO it holds; None for a lone log."""
    from xlainspect.dump.directory import load_dump

    if not path.is_dir():
        return None
    try:
        return load_dump(path)
    except XlaInspectError:
        return None


@app.command("cache-misses")
def cache_misses_cmd(
    a: Annotated[
        Path,
        typer.Argument(
            help="The earlier run: a jax log, or a folder holding jax.log (a capture dump directory).",
            show_default=False,
        ),
    ],
    b: Annotated[Path, typer.Argument(help="The run that missed: the same.", show_default=False)],
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Per function of run B: hit, miss or not written (and why), and for a miss of a function A compiled
    too, the cache-key components whose hashes changed (computation, XLA flags with the flags added or
    removed, compile_options, jax_lib version, backend version, accelerator_config, compression)."""
    from xlainspect.analysis.cache_misses import cache_misses
    from xlainspect.dump.jaxlog import read_jax_log

    with user_errors():
        rows = cache_misses(read_jax_log(a), read_jax_log(b), _dump_if_any(b))
    if fmt is OutputFormat.json:
        emit_json({"functions": [dataclasses.asdict(r) for r in rows]})
        return
    missed = sum(r.status != "hit" for r in rows)
    emit_rows(
        [dataclasses.asdict(r) for r in rows],
        ["name", "status", "changed", "detail"],
        fmt,
        title=f"{b} against {a}: {missed} of {len(rows)} functions missed the persistent cache",
    )
    if all(r.status == "off" for r in rows):
        stderr_console().print(
            f"{b}: no persistent-cache lines: the cache was off, or jax._src.compiler was not logged at DEBUG",
            markup=False,
            highlight=False,
        )
