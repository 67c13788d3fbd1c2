"""The one runner of per-module work, apart from the commands that use it (`analysis.commands`): which
modules a command reads (`Selection`), each analysed once, answered from the results cache while its
files are unchanged, shared with forked workers where the dump is large (`analyse_each`), an input
error a skipped entry, never an exception (`Analysed`); and a command's whole answer remembered
(`remembered`). Analyses (diff, profile, doctor) run on it too, and never import the commands.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar, cast

from xlainspect.cache import Key, TooManyFiles, listing
from xlainspect.dump.directory import Dump
from xlainspect.dump.model_cache import cached_result, code_fingerprint, open_cache, paths_of
from xlainspect.dump.module import DumpModule, SkippedFile
from xlainspect.dump.selection import select_dump_modules
from xlainspect.dump.storage import is_url, local
from xlainspect.errors import AnalysisBug, UsageError, XlaInspectError
from xlainspect.progress import Progress, silent
from xlainspect.settings import kept_objects
from xlainspect.workers import map_shared

Paths = str | Path | Sequence[str | Path]
T = TypeVar("T")

SHARE_MIN_MODULES = 64
"""Modules from which analysing a dump's modules is shared with forked workers (where xlainspect owns
the process), whatever their size: below it, and below `SHARE_MIN_BYTES`, a fork costs more than the
half of the work it takes."""
SHARE_MIN_BYTES = 256 << 10
"""HLO bytes from which analysing a dump's modules is shared with forked workers however few they are:
a 350 KB module's analyses take about 0.15 s, a fork 3 ms."""


def input_paths(paths: Paths) -> Path | list[Path]:
    """One path as a Path, several as a list of them, as `load_dump` takes them."""
    return Path(paths) if isinstance(paths, (str, Path)) else [Path(p) for p in paths]


class Analysed(NamedTuple, Generic[T]):
    """What `analyse_each` found: one result per module analysed (`modules`, in order), and the files it
    could not analyse (the `Dump` it was given is not changed; a report lists these after the dump's own)."""

    results: list[T]
    skipped: list[SkippedFile]
    modules: list[DumpModule]


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
    hlo = functools.partial(DumpModule.hlo_path, stage=stage)  # what is read, and what is skipped when it fails
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
    key: Callable[[DumpModule], str] | None,
    blame: Callable[[DumpModule], Path],
    advance: Callable[[int], None],
    chunk: int = 1,
    meanwhile: Callable[[], None] | None = None,
    same: Callable[[DumpModule], Hashable] | None = None,
    only_input: bool = True,
) -> Analysed[T]:
    """The one per-module runner of every command, the report and `diff`: `analyse(m)` for each of
    `modules`, in order, answered from the results cache (under `key(m)`) while the files `inputs(m)` are
    unchanged (`key` None: not kept, for an analysis that costs less than its entry); a module it cannot
    analyse (`inputs` or `analyse` raise XlaInspectError) is returned skipped under the file `blame(m)`;
    any other exception is a bug, raised as AnalysisBug naming that file.

    Where xlainspect owns the process and the modules are many or large, forked workers share them, the
    largest first, `chunk` modules a task, while this process runs `meanwhile()` (work that needs no
    result); garbage collection pauses meanwhile, and what was made is frozen after (it lives to the end
    of the run). Modules whose `same(m)` is equal (made of the same bytes) are analysed once, the first;
    an error is met again in each module's own files, so that it names them.

    Where the modules are the command's only input (`only_input`; `profile`'s are not: its trace is read
    first) and not one of them could be analysed, there is no answer: `nothing_read` is raised."""
    keys: list[Hashable] = [same(m) for m in modules] if same is not None else [id(m) for m in modules]
    firsts: dict[Hashable, DumpModule] = {}
    for k, dump_module in zip(keys, modules):
        firsts.setdefault(k, dump_module)
    shared = list(firsts.values())

    def result_or_error(dump_module: DumpModule) -> T | XlaInspectError:
        try:
            return _answer(dump_module, analyse, inputs, key)
        except UsageError:
            raise
        except XlaInspectError as error:
            return error
        except Exception as error:  # noqa: BLE001 (not bad input: a bug, named with the file it was reading)
            raise AnalysisBug(blame(dump_module), error) from error

    with kept_objects():
        found = map_shared(
            result_or_error,
            shared,
            chunk,
            advance=advance,
            meanwhile=meanwhile,
            size=DumpModule.hlo_bytes,
            serial_below=SHARE_MIN_MODULES,
            serial_below_size=SHARE_MIN_BYTES,
        )
    results = dict(zip(firsts, found))  # by the key of the module that was analysed
    analysed: Analysed[T] = Analysed([], [], [])
    for k, dump_module in zip(keys, modules):
        result = results[k]
        if firsts[k] is not dump_module:  # answered by the module it equals
            result = result_or_error(dump_module) if isinstance(result, XlaInspectError) else result
            advance(1)
        if isinstance(result, XlaInspectError):
            analysed.skipped.append(SkippedFile.of(blame(dump_module), result))
        else:
            analysed.results.append(result)
            analysed.modules.append(dump_module)
    if only_input and modules and not analysed.results:
        raise nothing_read(analysed.skipped)
    return analysed


def _answer(
    dump_module: DumpModule,
    analyse: Callable[[DumpModule], T],
    inputs: Callable[[DumpModule], Path | list[Path]],
    key: Callable[[DumpModule], str] | None,
) -> T:
    """`analyse(dump_module)`, from the results cache where it has a `key`. Without one it is not kept:
    hashing a module's file and writing an entry cost more than counting its lines (`modules`: a 64-host
    fleet's first run with the cache on took 25 s so, 13 s without; bench/run.py --modules-only)."""
    if key is None:
        return analyse(dump_module)
    return cached_result(inputs(dump_module), key(dump_module), lambda: analyse(dump_module))


def nothing_read(skipped: Sequence[SkippedFile]) -> XlaInspectError:
    """The error of a command that could read none of its inputs: every one was skipped. An empty table
    and exit 0 would pass a CI job on garbage; this is an input error (exit 2) quoting the first file's
    error (`path:line:col: message`, its line and a caret), as `parse` does, and counting the rest. A
    command that read some of its inputs answers from those and names the others (`skipped`)."""
    first, *others = skipped
    rest = f"\n{len(others)} more file(s) could not be read either: nothing was analysed" if others else ""
    return XlaInspectError(first.reason + rest)


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


def remembered(*inputs: str, uses: tuple[str, ...] = ()) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """A command's library function, answered from `commands/` while its arguments, xlainspect's code
    and every file under the arguments named in `inputs` (files or folders, one or a sequence, None
    for none) keep their path, size and mtime: a warm re-run lists and stats the inputs, nothing more.
    `uses` names optional packages the answer depends on; which of them can be imported is part of the
    key. An argument named `progress` is not. With the cache off it is the function."""

    def wrap(function: Callable[..., T]) -> Callable[..., T]:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> T:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            _read_urls(bound.arguments, inputs)
            args, kwargs = bound.args, bound.kwargs
            cache = open_cache()
            if not cache.enabled:
                return function(*args, **kwargs)
            arguments = {name: value for name, value in bound.arguments.items() if name != "progress"}
            try:
                files = listing(p for name in inputs for p in paths_of(arguments[name]))
            except (OSError, TooManyFiles):
                return function(*args, **kwargs)
            call_text = f"{function.__module__}.{function.__qualname__}{arguments!r} {_importable(uses)}"
            key = Key(code_fingerprint(), tuple(files), call_text)
            return cache.answer("commands", key, lambda: function(*args, **kwargs))

        return call

    return wrap


def _read_urls(arguments: dict[str, Any], inputs: tuple[str, ...]) -> None:
    """Replace each URL among the `inputs` arguments by its local mirror (`storage.local`), so the
    command reads, and its answer is keyed by, local files that change when the objects' versions do."""
    progress = arguments.get("progress") or silent
    for name in inputs:
        value = arguments[name]
        if isinstance(value, (list, tuple)):
            named = cast("list[str | Path] | tuple[str | Path, ...]", value)  # `inputs` name paths
            arguments[name] = type(named)(local(v, progress) if is_url(v) else v for v in named)
        elif isinstance(value, (str, Path)) and is_url(value):
            arguments[name] = local(value, progress)


def _importable(packages: tuple[str, ...]) -> tuple[bool, ...]:
    importable: list[bool] = []
    for package in packages:
        try:
            importable.append(importlib.util.find_spec(package) is not None)
        except (ImportError, ValueError):  # a parent missing, or a module set to None in sys.modules
            importable.append(False)
    return tuple(importable)
