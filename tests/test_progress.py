"""Progress bars: every command that may run for seconds draws one on a terminal (stderr a pseudo-terminal,
here through pexpect) and never into a pipe. XLAINSPECT_PROGRESS_AFTER=0 shows the bar at once instead of
after a second of work, so the test needs no slow input and no timing."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import DUMPS, REPO

pexpect = pytest.importorskip("pexpect")

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

COMMANDS = {
    "count-recompiles": (["count-recompiles", str(DUMPS / "tpu_v5e")], "counting compiles", 18),
    "modules": (["modules", str(DUMPS / "tpu_v5e")], "reading modules", 18),
    "memory": (["memory", str(DUMPS / "tpu_v5e")], "reading buffer assignments", 18),
    "layouts": (["layouts", str(DUMPS / "tpu_v5e")], "reading modules", 18),
    "fusions": (["fusions", str(DUMPS / "tpu_v5e")], "analysing modules", 18),
    "ops": (["ops", "--per-function", str(DUMPS / "tpu_v5e")], "analysing modules", 18),
    "diff": (["diff", str(DUMPS / "diff_batch_a"), str(DUMPS / "diff_batch_b")], "comparing modules", 2),
    "report": (["report", str(DUMPS / "tpu_v5e"), "--markdown", os.devnull], "analysing modules", 18),
}


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM", "CI")}
    return {
        **env,
        "PYTHONPATH": str(REPO),
        "TERM": "xterm-256color",
        "XLAINSPECT_PROGRESS_AFTER": "0",
        "XLAINSPECT_NO_CACHE": "1",
    }


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_terminal_shows_the_bar(name):
    args, description, total = COMMANDS[name]
    child = pexpect.spawn(
        sys.executable,
        ["-m", "xlainspect", *args],
        cwd=str(REPO),
        env=_environment(),
        dimensions=(40, 120),
        encoding="utf-8",
        timeout=120,
    )
    output = ANSI.sub("", child.read())
    child.close()
    assert child.exitstatus in (0, 1), output[-2000:]  # diff's gate may say 1; never a crash
    assert description in output
    assert re.search(rf"\b\d+/{total}\b", output), output[-2000:]  # rich's M/N column of the bar


@pytest.mark.parametrize("name", ["count-recompiles", "report"])
def test_pipe_gets_no_bar(name):
    args, description, _ = COMMANDS[name]
    result = subprocess.run(
        [sys.executable, "-m", "xlainspect", *args],
        cwd=REPO,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert description not in result.stderr and description not in result.stdout
