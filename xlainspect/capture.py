"""Run a program with XLA dumping switched on, so its compiles can be counted afterwards."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from xlainspect.errors import XlaInspectError

_DUMP_TO = re.compile(r"(?:^|\s)--xla_dump_to=\S*")


def xla_flags_with_dump(flags: str, dump_dir: Path) -> str:
    """The user's XLA_FLAGS with `--xla_dump_to` pointing at `dump_dir` (an earlier one is replaced)."""
    kept = _DUMP_TO.sub("", flags).strip()
    return f"{kept} --xla_dump_to={dump_dir}".strip()


def run_with_dump(command: list[str], dump_dir: Path) -> int:
    """Run `command` with XLA_FLAGS extended; its exit status is returned (XLA writes into `dump_dir`)."""
    if not command:
        raise XlaInspectError("no command to run: put it after `--`, e.g. xlainspect capture -- python train.py")
    dump_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, XLA_FLAGS=xla_flags_with_dump(os.environ.get("XLA_FLAGS", ""), dump_dir))
    try:
        return subprocess.call(command, env=env)
    except FileNotFoundError:
        raise XlaInspectError(f"{command[0]}: command not found") from None
    except PermissionError:
        raise XlaInspectError(f"{command[0]}: permission denied") from None
