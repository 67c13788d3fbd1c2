"""Run a program with XLA dumping switched on and jax's compile log saved beside the dump, so its
compiles can be counted, timed and matched with the persistent cache afterwards."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, cast

from xlainspect.dump.jaxlog import DEBUG_LOG_MODULES, LOG_NAMES
from xlainspect.errors import XlaInspectError

_DUMP_TO = re.compile(r"(?:^|\s)--xla_dump_to=\S*")
_JAX_RECORD = re.compile(rb"^(?P<level>[A-Z]+):\d{4}-\d\d-\d\d [\d:,]+:(?P<logger>[\w.]+):\d+: ")
_LINE_END = re.compile(rb"(?<=[\r\n])")


def xla_flags_with_dump(flags: str, dump_dir: Path) -> str:
    """The user's XLA_FLAGS with `--xla_dump_to` pointing at `dump_dir` (an earlier one is replaced)."""
    kept = _DUMP_TO.sub("", flags).strip()
    return f"{kept} --xla_dump_to={dump_dir}".strip()


def child_env(environ: dict[str, str], dump_dir: Path) -> tuple[dict[str, str], frozenset[str]]:
    """The child's environment, and the loggers whose DEBUG lines only we asked for (kept off the terminal).

    JAX_DEBUG_LOG_MODULES turns on DEBUG for the four modules that log compile times and cache keys, not
    for all of jax and not for XLA's C++ logging (JAX_LOGGING_LEVEL=DEBUG also sets the C++ minimum log
    level to 0). jax emits those records only when JAX_LOGGING_LEVEL is set, hence WARNING when the user
    set none."""
    env = dict(environ, XLA_FLAGS=xla_flags_with_dump(environ.get("XLA_FLAGS", ""), dump_dir))
    if environ.get("JAX_LOGGING_LEVEL", "").upper() == "DEBUG":
        return env, frozenset()
    asked = [m for m in environ.get("JAX_DEBUG_LOG_MODULES", "").split(",") if m]
    ours = [m for m in DEBUG_LOG_MODULES if m not in asked]
    env["JAX_DEBUG_LOG_MODULES"] = ",".join(asked + ours)
    env.setdefault("JAX_LOGGING_LEVEL", "WARNING")
    return env, frozenset(ours)


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


def _tee(stream: io.BufferedReader, log: IO[bytes], hidden: frozenset[str]) -> None:
    r"""Everything to the log; to our stderr the rest, once (a jax record reaching two handlers prints twice).
    Read as it comes and cut after every newline or carriage return, so a progress bar redrawn with `\r`
    shows at once."""
    previous, partial = b"", b""
    while chunk := stream.read1(1 << 16):
        log.write(chunk)
        *lines, partial = _LINE_END.split(partial + chunk)
        for line in lines:
            previous = _show(line, previous, hidden)
    if partial:
        _show(partial, previous, hidden)


def _show(line: bytes, previous: bytes, hidden: frozenset[str]) -> bytes:
    """Write `line` to our stderr unless only we asked for it or it repeats the line before; the last shown."""
    record = _JAX_RECORD.match(line)
    if record and (line == previous or (record["level"] == b"DEBUG" and record["logger"].decode() in hidden)):
        return previous
    sys.stderr.buffer.write(line)
    sys.stderr.buffer.flush()
    return line
