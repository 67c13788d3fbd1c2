"""`memory`: memory per module from the buffer assignment, memory-usage report and live ranges."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from xlainspect.analysis.memory import memory_inputs, module_memory
from xlainspect.analysis.runner import analyse_each, remembered
from xlainspect.analysis.tabular import Tabular
from xlainspect.dump.directory import load_dump, load_module_of
from xlainspect.dump.module import DumpModule, SkippedFile
from xlainspect.dump.selection import select_dump_modules
from xlainspect.errors import DumpError
from xlainspect.progress import Progress, silent

if TYPE_CHECKING:
    from xlainspect.analysis.memory import ModuleMemory


@dataclass
class MemoryReport(Tabular):
    """Memory per module: allocations by kind and space, the peak and what is live there."""

    modules: list[ModuleMemory]
    skipped: list[SkippedFile]


@remembered("path")
def memory_report(
    path: str | Path, *, function: str | None = None, top: int | None = 10, progress: Progress = silent
) -> MemoryReport:
    """Memory per compiled module from the buffer assignment, memory-usage report and live ranges: bytes
    by allocation kind, the peak and the `top` biggest buffers live there (None: all). `path` may be one
    dump file."""
    path = Path(path)
    dump = load_module_of(path) if path.is_file() else load_dump(path)
    chosen = [
        m
        for m in select_dump_modules(dump, function=function)
        if not path.is_file() or any(f.path.resolve() == path.resolve() for f in m.files)
    ]
    found, skipped, _ = analyse_each(
        chosen,
        lambda m: module_memory(m, top),
        inputs=memory_inputs,
        key=lambda m: f"memory:{top}",
        blame=_assignment_path,  # reported and skipped, like a truncated file
        advance=progress("reading buffer assignments", len(chosen)),
    )
    rows = [row for row in found if row is not None]
    if not rows:
        raise DumpError(
            f"no *buffer-assignment.txt for the selected modules under {path} (XLA writes it "
            "after optimizations, with --xla_dump_to and text dumps)"
        )
    return MemoryReport(rows, [*dump.skipped, *skipped, *(r.unparsed for r in rows if r.unparsed is not None)])


def _assignment_path(dump_module: DumpModule) -> Path:
    """The buffer assignment a module's memory was read from (`module_memory` reads nothing without one,
    so a module that failed has one; its HLO text otherwise)."""
    found = dump_module.file(kind="buffer-assignment")
    return found.path if found is not None else dump_module.hlo_path()
