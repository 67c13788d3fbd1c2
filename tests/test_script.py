"""The `xlainspect` script (`cli.main`) in a process of its own: what it writes, its exit codes, and the
process's exit handlers and threads are those of an ordinary exit."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import DUMPS, REPO
from typer.testing import CliRunner

from xlainspect.cli.app import app

RAGGED = DUMPS / "ragged_batch"


def _script(*args: str, before: str = "") -> subprocess.CompletedProcess:
    """`main()` in a fresh interpreter, after the statements `before`."""
    code = f"import sys\n{before}\nfrom xlainspect.cli import main\nsys.argv = ['xlainspect', *sys.argv[1:]]\nmain()"
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "XLAINSPECT_NO_CACHE": "1"},
        timeout=120,
    )


def test_output_is_whole_and_equal_to_the_in_process_run():
    """Everything buffered reaches the pipe before the process leaves."""
    args = ["ops", RAGGED / "module_0000.jit_train_step.cpu_after_optimizations.txt", "--format", "json"]
    result = _script(*args)
    assert result.returncode == 0
    assert result.stdout == CliRunner().invoke(app, [str(a) for a in args]).stdout
    assert result.stdout.rstrip().endswith("]")


def test_exit_codes_are_the_commands():
    gated = _script("count-recompiles", RAGGED, "--max-per-function", "1")
    assert gated.returncode == 1
    assert "jit_train_step" in gated.stdout
    assert _script("parse", RAGGED / "no_such_file.txt").returncode == 2
    assert _script("count-recompiles", RAGGED).returncode == 0


def test_exit_handlers_run():
    result = _script("modules", RAGGED, before="import atexit\natexit.register(print, 'handler ran', file=sys.stderr)")
    assert result.returncode == 0
    assert result.stderr.endswith("handler ran\n")


def test_a_live_thread_is_waited_for(tmp_path):
    """An embedding program's thread still running: the ordinary exit, which lets it finish."""
    marker = tmp_path / "finished"
    before = (
        "import threading, time, pathlib\n"
        f"threading.Thread(target=lambda: (time.sleep(0.5), pathlib.Path({str(marker)!r}).touch())).start()"
    )
    result = _script("modules", RAGGED, before=before)
    assert result.returncode == 0
    assert marker.exists()
