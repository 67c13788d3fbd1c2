"""A user's terminal session: `xlainspect count-recompiles` in a real pseudo-terminal (pexpect), 60 columns
wide, with NO_COLOR=1, and the same command piped into a file. Checks that a narrow terminal gets readable
text (one paragraph per function, no line wider than the terminal) and that pipes get plain text.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import DUMPS, REPO

pexpect = pytest.importorskip("pexpect")

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
WIDTH = 60
COMMAND = ["-m", "xlainspect", "count-recompiles", str(DUMPS / "ragged_batch")]


def _environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES", "TERM")}
    return {**env, "PYTHONPATH": str(REPO), "TERM": "xterm-256color", **extra}


def _terminal_run(**extra: str) -> tuple[str, int]:
    child = pexpect.spawn(
        sys.executable,
        COMMAND,
        cwd=str(REPO),
        env=_environment(**extra),
        dimensions=(40, WIDTH),
        encoding="utf-8",
        timeout=120,
    )
    output = child.read()
    child.close()
    return output.replace("\r\n", "\n"), child.exitstatus


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_narrow_terminal_without_colour_is_readable():
    output, status = _terminal_run(NO_COLOR="1")
    assert status == 0, output
    assert not ANSI.search(output), repr(output[:200])
    assert "jit_train_step" in output and "jit_eval_step" in output
    assert "Traceback" not in output
    widest = max(len(line) for line in output.splitlines())
    assert widest <= WIDTH, f"a {widest}-character line in a {WIDTH}-column terminal"
    lines = output.splitlines()
    # too narrow for a table with a readable why column: one paragraph per function, wrapped, none cropped
    assert lines[1] == "jit_train_step: 2 compiles, fixtures/generate.py:153"
    assert lines[2] == "  why: shape x dim 0: 100 -> 5; shape y dim 0: 100 -> 5"
    assert "pad it to 100 and mask the padded rows in the loss -> 1 compile" in " ".join(w.strip() for w in lines)


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_terminal_with_colour_fits_and_pipe_is_plain(tmp_path):
    output, status = _terminal_run()
    assert status == 0
    plain = ANSI.sub("", output)
    assert "jit_train_step" in plain and max(len(line) for line in plain.splitlines()) <= WIDTH
    target = tmp_path / "recompiles.txt"
    with open(target, "w") as handle:  # `xlainspect count-recompiles DIR > file`
        result = subprocess.run(
            [sys.executable, *COMMAND],
            cwd=REPO,
            env=_environment(),
            stdout=handle,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert result.returncode == 0, result.stderr
    piped = target.read_text()
    assert not ANSI.search(piped) and not ANSI.search(result.stderr)
    assert "jit_train_step" in piped and "jit_eval_step" in piped
