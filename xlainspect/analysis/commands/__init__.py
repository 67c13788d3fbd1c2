"""One library function per CLI command: read the inputs, run the analyses, return a typed report.

A command of the CLI is these functions' options, one call and `emit`; a Python user calls the same
function (`xlainspect.fusions_report("dump/")`) and gets the same rows. Each report carries the files it
left out and why (`skipped`), so nothing that failed to parse is counted as zero. Long calls take a
`progress` (`xlainspect.progress`), which the CLI draws as a bar.

They live in one module per group of commands, imported by its commands alone: a run creates the
report classes of its own command only (a dataclass takes 0.4 to 1 ms to create, and there are 18).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

from xlainspect.dump.directory import (
    SHARE_MIN_BYTES,
    SHARE_MIN_MODULES,
    Dump,
    DumpModule,
    SkippedFile,
    select_dump_modules,
)
from xlainspect.errors import AnalysisBug, UsageError, XlaInspectError
from xlainspect.progress import Progress, silent
from xlainspect.workers import map_shared

Paths = str | Path | Sequence[str | Path]
T = TypeVar("T")


def input_paths(paths: Paths) -> Path | list[Path]:
    """One path as a Path, several as a list of them, as `load_dump` takes them."""
    return Path(paths) if isinstance(paths, (str, Path)) else [Path(p) for p in paths]


class Analysed(NamedTuple, Generic[T]):
    """What `analyse_each` found: one result per module analysed, and the files it could not analyse
    (the `Dump` it was given is not changed; a report lists these after the dump's own)."""

    results: list[T]
    skipped: list[SkippedFile]


def analyse_modules(
    dump: Dump,
    analysis: str,
    analyse: Callable[[DumpModule], T],
    *,
    function: str | None = None,
    module_re: str | None = None,
    stage: str = "after",
    progress: Progress = silent,
) -> Analysed[T]:
    """`analyse(dump_module)` for each selected module, answered from the results cache while its file is
    unchanged (the module is then not even read); a file that does not parse is returned skipped."""
    selected = select_dump_modules(dump, function=function, module_re=module_re)
    hlo = lambda m: m.hlo_file(stage).path  # noqa: E731  (what is read, and what is skipped when it fails)
    return analyse_each(
        selected,
        analyse,
        inputs=hlo,
        key=lambda m: f"{analysis}:{stage}:{m.platform}",
        blame=hlo,
        advance=progress("analysing modules", len(selected)),
    )


def analyse_each(
    modules: list[DumpModule],
    analyse: Callable[[DumpModule], T],
    *,
    inputs: Callable[[DumpModule], Path | list[Path]],
    key: Callable[[DumpModule], str],
    blame: Callable[[DumpModule], Path],
    advance: Callable[[int], None],
) -> Analysed[T]:
    """`analyse(m)` for each of `modules`, in order, answered from the results cache (under `key(m)`)
    while the files `inputs(m)` are unchanged; a module it cannot analyse (`inputs` or `analyse` raise
    XlaInspectError) is returned skipped under the file `blame(m)`; any other exception is a bug, raised
    as AnalysisBug naming that file. Where xlainspect owns the process and the modules are many or large,
    a forked worker shares them, the largest first."""
    from xlainspect.dump.model_cache import cached_result

    def result_or_error(dump_module: DumpModule) -> T | XlaInspectError:
        try:
            return cached_result(inputs(dump_module), key(dump_module), lambda: analyse(dump_module))
        except UsageError:
            raise
        except XlaInspectError as error:
            return error
        except Exception as error:  # noqa: BLE001 (not bad input: a bug, named with the file it was reading)
            raise AnalysisBug(blame(dump_module), error) from error

    found = map_shared(
        result_or_error,
        modules,
        1,
        advance=advance,
        size=DumpModule.hlo_bytes,
        serial_below=SHARE_MIN_MODULES,
        serial_below_size=SHARE_MIN_BYTES,
    )
    analysed: Analysed[T] = Analysed([], [])
    for dump_module, result in zip(modules, found):
        if isinstance(result, XlaInspectError):
            analysed.skipped.append(SkippedFile.of(blame(dump_module), result))
        else:
            analysed.results.append(result)
    return analysed


@dataclass(frozen=True, slots=True)
class Selection:
    """Which modules a command reads: one function or names matching a regex, at one stage."""

    function: str | None = None
    module_re: str | None = None
    stage: str = "after"


def run_selected(
    dump: Dump, analysis: str, analyse: Callable[[DumpModule], T], selection: Selection, progress: Progress
) -> Analysed[T]:
    """`analyse_modules` over the modules a `Selection` names."""
    return analyse_modules(
        dump,
        analysis,
        analyse,
        function=selection.function,
        module_re=selection.module_re,
        stage=selection.stage,
        progress=progress,
    )
