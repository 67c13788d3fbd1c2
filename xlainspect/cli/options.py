"""What every command module shares: the common options, the error boundary for bad input, and `show`.

Exit codes: 0 fine, 1 a failed gate (the command says which budget), 2 a usage or input error, 3 a bug
in xlainspect (one line naming the file it was reading; `--debug` shows the traceback).
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Annotated

import typer

from xlainspect.analysis.runner import Selection
from xlainspect.cli.progress import progress_bars
from xlainspect.cli.render import OutputFormat, emit, note
from xlainspect.dump.files import located
from xlainspect.dump.module import SkippedFile
from xlainspect.dump.storage import is_url, local
from xlainspect.errors import UsageError, XlaInspectError
from xlainspect.report.document import Document

EXIT_GATE_FAILED = 1
EXIT_USAGE = 2
EXIT_BUG = 3

FormatOpt = Annotated[OutputFormat, typer.Option("--format", "-f", help="table, json, csv or markdown.")]


def readable(value: str) -> Path:
    """A path argument as commands read it: a local path, or an fsspec URL (gs://, s3://, ...) whose
    objects are fetched into their local mirror first, with a progress bar (an error: one line, exit 2)."""
    if not is_url(value):
        return Path(value)
    with user_errors(), progress_bars() as progress:
        return local(value, progress)


def readable_here(value: str, scheduler: str | None) -> str | Path:
    """`readable`, but a URL read on a cluster (`--scheduler`) is left a URL: the command only lists
    it, and the workers fetch their hosts' objects."""
    return value if scheduler is not None and is_url(value) else readable(value)


FleetPath = Annotated[
    str,
    typer.Argument(
        help="A --xla_dump_to directory, or HLO text files (a path or a URL: gs://, s3://, ...; with "
        "--scheduler the workers fetch a URL's per-host files).",
        show_default=False,
    ),
]
"""A dump whose per-host reads a cluster may do: `readable_here` it."""

DumpPath = Annotated[
    Path,
    typer.Argument(
        help="A --xla_dump_to directory, or HLO text files (a path or a URL: gs://, s3://, ...).",
        show_default=False,
        parser=readable,
    ),
]
FunctionOpt = Annotated[str | None, typer.Option("--function", help="Only modules of this function (HloModule name).")]
LogOpt = Annotated[
    Path | None,
    typer.Option(
        "--log",
        help="The run's jax log, for compile seconds (default: jax.log in the dump directory, as capture saves it).",
        show_default=False,
        parser=readable,
        metavar="<path>",
    ),
]
PathsArg = Annotated[
    list[Path],
    typer.Argument(
        help="A --xla_dump_to directory, or HLO text files (paths or URLs: gs://, s3://, ...).",
        show_default=False,
        parser=readable,
    ),
]
ModuleReOpt = Annotated[str | None, typer.Option("--module-re", help="Only modules whose name matches this regex.")]


class Stage(str, enum.Enum):
    before = "before"
    after = "after"


StageOpt = Annotated[Stage, typer.Option("--stage", help="HLO before or after optimizations (after where present).")]
StrictOpt = Annotated[
    bool,
    typer.Option(
        "--strict", help="Exit 2 when a file cannot be read or parsed (default: skip it with a note on stderr)."
    ),
]
SchedulerOpt = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        envvar="XLAINSPECT_SCHEDULER",
        help="A Dask scheduler's address (tcp://host:8786): each host's read is a task on that cluster, "
        "whose workers (the same xlainspect installed) read the files where they lie.",
        metavar="<address>",
    ),
]


def rows_kept(top: int | None, fmt: OutputFormat, shown: int) -> int | None:
    """The rows a `--top` keeps (None: every row). Given, its number (0: every row). Not given, `shown`
    where people read (a table, Markdown) and every row in JSON and CSV: machines read every row unless
    asked otherwise. The one rule of every command's `--top`."""
    if top is not None:
        return top or None
    return shown if fmt in (OutputFormat.table, OutputFormat.markdown) else None


def selection(function: str | None, module_re: str | None, stage: Stage) -> Selection:
    """The modules `--function`, `--module-re` and `--stage` name."""
    return Selection(function, module_re, stage.value)


OPTIONS = {"per_name": "--max"}
"""The option that sets a library argument, where typer's rule (`step_function`: `--step-function`) does not
give it: a `Budget`'s `per_name` is `--max NAME=N`."""


def option(argument: str) -> str:
    """The command-line option of a library argument a `UsageError` names."""
    return OPTIONS.get(argument) or "--" + argument.replace("_", "-")


@contextlib.contextmanager
def user_errors() -> Generator[None]:
    """Turn input errors into a message on stderr and exit code 2, never a traceback."""
    try:
        yield
    except UsageError as error:
        note(error.worded(option))
        raise typer.Exit(EXIT_USAGE) from None
    except XlaInspectError as error:
        note(str(located(error)))
        raise typer.Exit(EXIT_USAGE) from None
    except (BrokenPipeError, KeyboardInterrupt):
        raise typer.Exit(EXIT_USAGE) from None


def note_skipped(skipped: Sequence[SkippedFile], strict: bool = False) -> None:
    """Name each file a command left out, and why, on stderr; with --strict that is an input error (exit 2)."""
    if not skipped:
        return
    note(f"skipped {len(skipped)} file(s) that could not be analysed:")
    for one in skipped:
        reason = one.reason.removeprefix(f"{one.path}: ").replace("\n", "\n    ")  # the path is said once
        note(f"  skipped {one.path}: {reason}")
    if strict:
        raise typer.Exit(EXIT_USAGE)


def show(document: Document, fmt: OutputFormat, skipped: Sequence[SkippedFile] = (), strict: bool = False) -> None:
    """Write a command's document, name the files left out, and exit 1 when its gate failed."""
    emit(document, fmt)
    note_skipped(skipped, strict)
    if document.gate_undecided:
        raise typer.Exit(EXIT_USAGE)
    if document.gate_failed:
        raise typer.Exit(EXIT_GATE_FAILED)
