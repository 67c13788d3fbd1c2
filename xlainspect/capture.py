"""Run a program with XLA dumping switched on and jax's compile log saved beside the dump, so its
compiles can be counted, timed and matched with the persistent cache afterwards."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from xlainspect.dump.jaxlog import DEBUG_LOG_MODULES, EXPLAIN_FLAG, EXPLANATIONS, LOG_NAMES
from xlainspect.errors import XlaInspectError

_DUMP_TO = re.compile(r"(?:^|\s)--xla_dump_to=\S*")
_JAX_RECORD = re.compile(rb"^(?P<level>[A-Z]+):\d{4}-\d\d-\d\d [\d:,]+:(?P<logger>[\w.]+):\d+: ")
_LINE_END = re.compile(rb"(?<=[\r\n])")
_CONTINUED = re.compile(rb"^  ")
"""A line of a multi-line jax record after its first: jax indents every one (partial_eval.explain)."""


@dataclass(frozen=True, slots=True)
class Hidden:
    """What only capture asked jax for, kept off the user's terminal (still in jax.log): the DEBUG records
    of `loggers`, and with `explanations` jax's cache-miss explanations, which the flag makes WARNING
    records (`EXPLANATIONS`), each with its indented lines."""

    loggers: frozenset[str] = frozenset()
    explanations: bool = False

    def hides(self, level: bytes, logger: str, message: bytes) -> bool:
        if level == b"DEBUG":
            return logger in self.loggers
        return self.explanations and level == b"WARNING" and message.startswith(EXPLANATIONS)


def xla_flags_with_dump(flags: str, dump_dir: Path) -> str:
    """The user's XLA_FLAGS with `--xla_dump_to` pointing at `dump_dir` (an earlier one is replaced)."""
    kept = _DUMP_TO.sub("", flags).strip()
    return f"{kept} --xla_dump_to={dump_dir}".strip()


def child_env(environ: dict[str, str], dump_dir: Path) -> tuple[dict[str, str], Hidden]:
    """The child's environment, and what in its log only we asked for (kept off the terminal).

    JAX_DEBUG_LOG_MODULES turns on DEBUG for the modules that log compile times, cache keys and each
    compile's argument types, not for all of jax and not for XLA's C++ logging (JAX_LOGGING_LEVEL=DEBUG
    also sets the C++ minimum log level to 0). jax emits those records only when JAX_LOGGING_LEVEL is
    set, hence WARNING when the user set none. JAX_EXPLAIN_CACHE_MISSES=1 (`jax_explain_cache_misses`)
    makes jax say why each trace missed its cache, unless the user set the flag either way."""
    env = dict(environ, XLA_FLAGS=xla_flags_with_dump(environ.get("XLA_FLAGS", ""), dump_dir))
    explain = EXPLAIN_FLAG not in environ
    if explain:
        env[EXPLAIN_FLAG] = "1"
    if environ.get("JAX_LOGGING_LEVEL", "").upper() == "DEBUG":
        return env, Hidden(explanations=explain)
    asked = [m for m in environ.get("JAX_DEBUG_LOG_MODULES", "").split(",") if m]
    ours = [m for m in DEBUG_LOG_MODULES if m not in asked]
    env["JAX_DEBUG_LOG_MODULES"] = ",".join(asked + ours)
    env.setdefault("JAX_LOGGING_LEVEL", "WARNING")
    return env, Hidden(frozenset(ours), explain)


def dump_folder(dump_dir: Path | None) -> Path:
    """Where the run's dump goes: `dump_dir`, else a new folder under the system's temporary directory
    that is kept afterwards (a dump is what every other command reads; deleting it would leave the
    user nothing to look at beyond one report)."""
    return dump_dir if dump_dir is not None else Path(tempfile.mkdtemp(prefix="xlainspect-dump-"))


def run_with_dump(command: list[str], dump_dir: Path) -> int:
    """Run `command` with XLA_FLAGS extended and jax's compile lines on; its stderr is copied whole to
    `dump_dir/jax.log` and, less the lines only we asked for, to ours. Returns its exit status."""
    if not command:
        raise XlaInspectError("no command to run: put it after `--`, e.g. xlainspect capture -- python train.py")
    dump_dir.mkdir(parents=True, exist_ok=True)
    env, hidden = child_env(dict(os.environ), dump_dir)
    try:
        child = subprocess.Popen(command, env=env, stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise XlaInspectError(f"{command[0]}: command not found") from None
    except PermissionError:
        raise XlaInspectError(f"{command[0]}: permission denied") from None
    with open(dump_dir / LOG_NAMES[0], "wb") as log:
        _tee(cast("io.BufferedReader", child.stderr), log, hidden)  # Popen.PIPE is buffered
    return child.wait()


def _tee(stream: io.BufferedReader, log: IO[bytes], hidden: Hidden) -> None:
    r"""Everything to the log; to our stderr the rest, once (a jax record reaching two handlers prints twice).
    Read as it comes and cut after every newline or carriage return, so a progress bar redrawn with `\r`
    shows at once."""
    terminal, partial = _Terminal(hidden), b""
    while chunk := stream.read1(1 << 16):
        log.write(chunk)
        *lines, partial = _LINE_END.split(partial + chunk)
        for line in lines:
            terminal.show(line)
    if partial:
        terminal.show(partial)


class _Terminal:
    """Our stderr: the child's lines but those only we asked for and a jax record repeating the one before."""

    def __init__(self, hidden: Hidden) -> None:
        self.hidden = hidden
        self.previous = b""
        self.hiding = False
        """The last record was hidden: its indented lines are too."""

    def show(self, line: bytes) -> None:
        if self.hiding and _CONTINUED.match(line):
            return
        record = _JAX_RECORD.match(line)
        self.hiding = bool(record) and self.hidden.hides(
            record["level"], record["logger"].decode(), line[record.end() :]
        )
        if self.hiding or (record and line == self.previous):
            return
        sys.stderr.buffer.write(line)
        sys.stderr.buffer.flush()
        self.previous = line
