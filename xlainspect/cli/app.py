"""The typer application: the root options, the command table and the one boundary for bugs.

Each command lives in a module of its own group (`cost_cmd`, `graph_cmds`, ...) that imports what the
command runs at its top; the root group loads the module of the command a run names, and no other
(click's lazy subcommands: a `click.Group` whose `get_command` imports on demand). So a run imports
one command's analyses, and `xlainspect --help` lists every command from `COMMANDS` without importing
any of them.

Exit codes: 0 fine, 1 a failed gate, 2 a usage or input error (`options.user_errors`), 3 a bug in
xlainspect (one line naming the file it was reading; `--debug` shows the traceback).
"""

from __future__ import annotations

import difflib
import importlib
import sys
from typing import TYPE_CHECKING, Annotated

import typer
from typer.core import TyperGroup

from xlainspect import settings
from xlainspect.cli.render import note
from xlainspect.errors import AnalysisBug

if TYPE_CHECKING:  # typer's own click
    from typer._click import Command, Context, HelpFormatter

EXIT_BUG = 3

COMMANDS: dict[str, tuple[str, str]] = {
    # the command: the module of xlainspect.cli that defines it, and what `xlainspect --help` says of it
    "report": ("report_cmd", "A whole dump on one page: where the time goes first."),
    "count-recompiles": ("dump_cmds", "Compiles per function, and why each recompile."),
    "capture": ("dump_cmds", "Run a program with a dump and jax's log; count-recompiles."),
    "modules": ("dump_cmds", "The modules (compiles) of a dump, with compile seconds."),
    "doctor": ("doctor_cmd", "Dump health: what to know before trusting a count."),
    "cost": ("cost_cmd", "FLOPs, bytes and roofline time per op, as executed."),
    "profile": ("profile_cmd", "Measured time per op from a jax.profiler trace."),
    "memory": ("memory_cmd", "Memory per module: the peak and what is live there."),
    "layouts": ("layout_cmds", "The padding ledger: values ranked by wasted bytes."),
    "layout": ("layout_cmds", "Decode one layout: tiles, padded bytes, memory space."),
    "fusions": ("graph_cmds", "Every fusion: kind, ops inside, bytes, library calls."),
    "copies": ("graph_cmds", "Every copy, transpose and relayout, with its bytes."),
    "collectives": ("graph_cmds", "Every collective: groups, payload, bytes per device."),
    "ops": ("graph_cmds", "Opcode histogram per module or per function."),
    "graph": ("graph_cmds", "The data-flow neighbourhood of one instruction."),
    "diff": ("diff_cmd", "What XLA did differently between two dumps; a CI gate."),
    "cache": ("cache_cmds", "What jax's persistent compilation cache holds."),
    "cache-misses": ("cache_cmds", "Why a run missed jax's persistent compilation cache."),
    "parse": ("parse_cmd", "Parse HLO text with the grammar; list its modules."),
}


class LazyCommands(TyperGroup):
    """The root group: commands come from `COMMANDS`, each built from its module when a run names it."""

    def list_commands(self, ctx: Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if cmd_name not in COMMANDS:  # click says so; typer's "did you mean" reads `commands`, empty here
            close = difflib.get_close_matches(cmd_name, COMMANDS)
            if close and not ctx.resilient_parsing:
                ctx.fail(f"No such command {cmd_name!r}. Did you mean {', '.join(map(repr, close))}?")
            return None
        module = importlib.import_module(f"xlainspect.cli.{COMMANDS[cmd_name][0]}")
        info = next(i for i in module.commands.registered_commands if command_name(i) == cmd_name)
        return typer.main.get_command_from_info(info, pretty_exceptions_short=True, rich_markup_mode=None)

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, summary) for name, (_, summary) in COMMANDS.items()])


def command_name(info: typer.models.CommandInfo) -> str:
    """The name a registered command is invoked by: its own, else its function's (typer's rule)."""
    if info.name:
        return info.name
    assert info.callback is not None, "a registered command has its function"
    return typer.main.get_command_name(info.callback.__name__)


app = typer.Typer(
    name="xlainspect",
    cls=LazyCommands,
    help="Read XLA dumps (--xla_dump_to) and HLO text: recompilations and why, layouts and padding, "
    "fusions, copies, collectives, memory.",
    no_args_is_help=True,
    rich_markup_mode=None,  # typer's rich help imports rich and markdown-it: --help took 0.25 s, not 0.13 s
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def commands_of(group: str) -> typer.Typer:
    """The typer a command module registers its commands on (`COMMANDS` says which module runs which)."""
    return typer.Typer(name=group, rich_markup_mode=None, pretty_exceptions_show_locals=False)


def main() -> None:
    """The `xlainspect` script: the app, with a bug (not bad input) turned into one line and exit 3."""
    try:
        app()
    except BrokenPipeError:  # a reader that left (`| head`): `run` leaves as the interpreter would
        raise
    except Exception as error:  # noqa: BLE001 (the boundary: input errors left as exit 2 above; this is a bug)
        if "--debug" in sys.argv[1:]:
            raise
        note(bug_report(error))
        raise SystemExit(EXIT_BUG) from None


def bug_report(error: Exception) -> str:
    """One line for an exception that is not bad input: the file it was reading, and a request."""
    where = f"while reading {error.path}" if isinstance(error, AnalysisBug) else "while running"
    cause = error.error if isinstance(error, AnalysisBug) else error
    return (
        f"xlainspect: internal error {where}: {type(cause).__name__}: {cause}. This is a bug in xlainspect, "
        "not in your input: please report it with the traceback `xlainspect --debug ...` prints"
    )


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
    settings.own_process()
    if no_cache:
        settings.set_cache_enabled(False)
