"""The typer application, its shared options and the one error boundary.

Exit codes: 0 fine, 1 a failed gate (the command says which budget), 2 a usage or input error, 3 a bug
in xlainspect (one line naming the file it was reading; `--debug` shows the traceback).
"""

from __future__ import annotations

import atexit
import contextlib
import enum
import os
import sys
import threading
from pathlib import Path
from typing import Annotated

import typer

from xlainspect.cli.progress import progress_bars
from xlainspect.cli.render import OutputFormat, emit, note
from xlainspect.errors import AnalysisBug, XlaInspectError
from xlainspect.report.document import Document

app = typer.Typer(
    name="xlainspect",
    help="Read XLA dumps (--xla_dump_to) and HLO text: recompilations and why, layouts and padding, "
    "fusions, copies, collectives, memory.",
    no_args_is_help=True,
    rich_markup_mode=None,  # typer's rich help imports rich and markdown-it: --help took 0.25 s, not 0.13 s
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

EXIT_GATE_FAILED = 1
EXIT_USAGE = 2
EXIT_BUG = 3

FormatOpt = Annotated[OutputFormat, typer.Option("--format", "-f", help="table, json, csv or markdown.")]


def readable(value: str) -> Path:
    """A path argument as commands read it: a local path, or an fsspec URL (gs://, s3://, ...) whose
    objects are fetched into their local mirror first, with a progress bar (an error: one line, exit 2)."""
    from xlainspect.dump.storage import is_url, local

    if not is_url(value):
        return Path(value)
    with user_errors(), progress_bars() as progress:
        return local(value, progress)


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


@contextlib.contextmanager
def user_errors():
    """Turn input errors into a message on stderr and exit code 2, never a traceback."""
    try:
        yield
    except XlaInspectError as error:
        note(str(error))
        raise typer.Exit(EXIT_USAGE) from None
    except (BrokenPipeError, KeyboardInterrupt):
        raise typer.Exit(EXIT_USAGE) from None


def note_skipped(skipped, strict: bool = False) -> None:
    """Name each file a command left out, and why, on stderr; with --strict that is an input error (exit 2)."""
    if not skipped:
        return
    note(f"skipped {len(skipped)} file(s) that could not be analysed:")
    for one in skipped:
        reason = one.reason.replace("\n", "\n    ")
        note(f"  skipped {one.path}: {reason}")
    if strict:
        raise typer.Exit(EXIT_USAGE)


def show(document: Document, fmt: OutputFormat, skipped=(), strict: bool = False) -> None:
    """Write a command's document, name the files left out, and exit 1 when its gate failed."""
    emit(document, fmt)
    note_skipped(skipped, strict)
    if document.gate_undecided:
        raise typer.Exit(EXIT_USAGE)
    if document.gate_failed:
        raise typer.Exit(EXIT_GATE_FAILED)


def main() -> None:
    """The `xlainspect` script. Typer builds every registered command's click parameters from its
    signature at each start (~45 ms for all commands) though a run invokes one: when the first word
    that is not an option names a command, only that command is registered (click's lazy
    subcommands). `--help`, no command or a misspelt one build them all."""
    invoked = next((word for word in sys.argv[1:] if not word.startswith("-")), None)
    every = app.registered_commands
    chosen = [info for info in every if _command_name(info) == invoked]
    try:
        app.registered_commands = chosen or every
        app()
    except BrokenPipeError:  # a reader that left (`| head`): `run` leaves as the interpreter would
        raise
    except Exception as error:  # noqa: BLE001 (the boundary: input errors left as exit 2 above; this is a bug)
        if "--debug" in sys.argv[1:]:
            raise
        note(bug_report(error))
        raise SystemExit(EXIT_BUG) from None
    finally:  # a caller that runs main() again (a test, a notebook) finds every command
        app.registered_commands = every


def run() -> None:
    """The `xlainspect` script and `python -m xlainspect`: `main()`, then leave as the interpreter would,
    less its teardown. Teardown frees every object one at a time: a parsed 350 KB module's are a twentieth
    of a cold `diff`, a 45 MB module's most of a second, and a process that is ending needs none of it.
    Files are closed and caches written before a command returns; exit handlers still run. With another
    thread alive (an embedding program's), or an exit code that is not a number, the ordinary exit."""
    try:
        main()
        code = 0
    except SystemExit as leaving:
        code = leaving.code
    if not isinstance(code, int | None) or threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
    except (OSError, ValueError):  # a closed pipe (`| head`): the interpreter's own code for it
        code = 120
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(code or 0)


def bug_report(error: Exception) -> str:
    """One line for an exception that is not bad input: the file it was reading, and a request."""
    where = f"while reading {error.path}" if isinstance(error, AnalysisBug) else "while running"
    cause = error.error if isinstance(error, AnalysisBug) else error
    return (
        f"xlainspect: internal error {where}: {type(cause).__name__}: {cause}. This is a bug in xlainspect, "
        "not in your input: please report it with the traceback `xlainspect --debug ...` prints"
    )


def _command_name(info) -> str:
    return info.name or typer.main.get_command_name(info.callback.__name__)


@app.callback()
def _root(
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache",
            help="Read and analyse every file again: neither read nor write xlainspect's caches "
            "(parsed models, per-file results, whole answers).",
        ),
    ] = False,
    debug: Annotated[  # noqa: ARG001 (read by main, which meets the exception after typer is done)
        bool, typer.Option("--debug", help="Show the traceback of an internal error (exit 3) instead of one line.")
    ] = False,
) -> None:
    """Read XLA dumps (--xla_dump_to) and HLO text: recompilations and why, layouts and padding, fusions,
    copies, collectives, memory. Exit codes: 0 ok, 1 a CI gate failed, 2 bad usage or input, 3 a bug."""
    from xlainspect import settings

    settings.own_process()
    if no_cache:
        settings.set_cache_enabled(False)
