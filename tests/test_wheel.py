"""The built wheel carries the grammar: install it in a fresh venv and parse a fixture from elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile

import pytest
from conftest import DUMPS, REPO

pytestmark = pytest.mark.skipif(os.environ.get("XLAINSPECT_SKIP_WHEEL") == "1", reason="XLAINSPECT_SKIP_WHEEL=1")


def test_wheel_ships_grammar_and_parses_outside_the_repo(tmp_path):
    # Built against the installed backend (the test extra brings it): no package index needed.
    pytest.importorskip("hatchling", reason="the build backend (hatchling) is not installed: pip install hatchling")
    dist = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(dist),
            str(REPO),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = dist.glob("xlainspect-*.whl")
    assert {"xlainspect/grammars/hlo.lark", "xlainspect/data/chips.json"} <= set(zipfile.ZipFile(wheel).namelist())

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)], check=True)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    fixture = DUMPS / "clean_run" / "module_0000.jit_train_step.cpu_after_optimizations.txt"
    (elsewhere / fixture.name).write_bytes(fixture.read_bytes())
    script = (
        "import xlainspect, pathlib;"
        f"assert xlainspect.__file__.startswith({str(venv)!r}), xlainspect.__file__;"
        f"(m,) = xlainspect.parse_hlo(pathlib.Path({fixture.name!r}).read_text());"
        "assert xlainspect.module_cost(m, xlainspect.get_chip('tpu-v5e')).flops == 1393;"
        "print(m.name, m.instruction_count)"
    )
    # The wheel was installed without dependencies; lend it this environment's lark (and friends)
    # through PYTHONPATH, which does not process .pth files, so the checkout stays invisible.
    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"]}
    result = subprocess.run([python, "-c", script], cwd=elsewhere, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    name, count = result.stdout.split()
    assert name == "jit_train_step" and int(count) > 10
