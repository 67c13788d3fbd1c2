"""The ops' measured time by jax op_name and by the line of the user's program that made them: what
XProf's framework_op_stats shows by op_name (there, a CUDA graph's kernels are one `XlaModule` row), and
per source line, which it has no table for. Each row sums its ops' rows, so the rows of either add up
to the time of every op of the profile. `user_frame` says which source files are the user's program
(the host's time is charged to the user's frames by it, `breakdown.HostThread`, and the straggler's host work
named by its user frame, `hosts.straggler`)."""

from __future__ import annotations

import linecache
from collections.abc import Callable, Iterable
from pathlib import PurePosixPath

from xlainspect.analysis.profile.model import OpTime, SourceTime

LIBRARY_FOLDERS = frozenset({"site-packages", "dist-packages", "jax", "jaxlib"})
"""Folders whose files are not the user's program: where pip and Debian install packages, and jax's and
jaxlib's own packages (jax/_src/source_info_util.py `is_user_filename` leaves out jax's package folder)."""


def by_key(ops: list[OpTime], key: Callable[[OpTime], str | None], text: bool = False) -> list[SourceTime]:
    """The `ops` grouped by `key` (op_name, source), most time first; ops without one in a row of None;
    `text`: each key's source line (`line_text`)."""
    groups: dict[str | None, list[OpTime]] = {}
    for op in ops:
        groups.setdefault(key(op), []).append(op)
    total = sum(op.total_seconds for op in ops)
    rows = [_row(name, members, total, line_text(name) if text else None) for name, members in groups.items()]
    return sorted(rows, key=lambda row: (-row.total_seconds, row.name or ""))


def _row(name: str | None, ops: list[OpTime], total: float, text: str | None) -> SourceTime:
    seconds = sum(op.total_seconds for op in ops)
    per_step = [op.seconds_per_step for op in ops if op.seconds_per_step is not None]
    flops = [op.flops * op.executions_in_trace for op in ops if op.flops is not None and op.executions_in_trace]
    return SourceTime(
        name,
        len(ops),
        sum(op.kernels for op in ops),
        seconds,
        sum(per_step) if per_step else None,
        seconds / total if total else 0.0,
        float(sum(flops)) if flops else None,
        text,
    )


def line_text(source: str | None) -> str | None:
    """The text of a `file:line` where the file is readable here (the run's machine may be another)."""
    path, _, line = (source or "").rpartition(":")
    text = linecache.getline(path, int(line)).strip() if path and line.isdigit() else ""
    return text or None


def user_frame(path: str) -> bool:
    """Whether a frame's file (a path, as HLO metadata and Python's tracebacks give it) is the user's
    program: in no folder of `LIBRARY_FOLDERS` (an installed package, jax or jaxlib)."""
    return not LIBRARY_FOLDERS.intersection(PurePosixPath(path.replace("\\", "/")).parts[:-1])


def user_files(sources: Iterable[str]) -> dict[str, str]:
    """The user's files among `sources` (`file:line`s of the ops' HLO metadata), each by its base name:
    the Python tracer names a frame by its file's base name alone (tsl's python_hooks.cc, `$file.py:12
    f`), so a frame is the user's where its base name is a user's file the program's HLO names."""
    files = {source.rpartition(":")[0] for source in sources}
    return {PurePosixPath(path).name: path for path in sorted(files) if path and user_frame(path)}
