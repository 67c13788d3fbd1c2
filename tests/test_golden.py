"""Every command's output on the committed fixtures, kept in tests/golden/: a change of behaviour or
output shows in review as a diff of these files. Regenerate them all with
`python -m pytest tests/test_golden.py --update-golden` (and read the diff before committing it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import xlainspect.cli.commands  # noqa: F401  (registers the commands)
from tests.conftest import REPO
from xlainspect.cli import app

GOLDEN = Path(__file__).parent / "golden"
D = "fixtures/dumps"
AFTER = f"{D}/clean_run/module_0000.jit_train_step.cpu_after_optimizations.txt"

#: (golden file name, command line), paths relative to the repository root.
CASES = [
    ("parse.json", ["parse", AFTER, "--format", "json"]),
    ("layout.json", ["layout", "bf16[3,5]{1,0:T(8,128)(2,1)}", "--format", "json"]),
    ("layouts-tpu_v5e.json", ["layouts", f"{D}/tpu_v5e", "--format", "json", "--top", "10"]),
    ("fusions-clean_run.json", ["fusions", f"{D}/clean_run", "--format", "json"]),
    ("copies-tpu_v4.json", ["copies", f"{D}/tpu_v4", "--format", "json"]),
    ("collectives-collectives_cpu.json", ["collectives", f"{D}/collectives_cpu", "--format", "json"]),
    ("ops-clean_run.json", ["ops", f"{D}/clean_run", "--format", "json"]),
    ("graph-around.dot", ["graph", AFTER, "--around", "reduce_multiply_fusion", "--depth", "1"]),
    ("doctor-per_pass.json", ["doctor", f"{D}/per_pass", "--format", "json"]),
    ("modules-ragged_batch.json", ["modules", f"{D}/ragged_batch", "--format", "json"]),
    ("count-recompiles-ragged_batch.json", ["count-recompiles", f"{D}/ragged_batch", "--format", "json"]),
    ("count-recompiles-ragged_batch.md", ["count-recompiles", f"{D}/ragged_batch", "--format", "markdown"]),
    ("memory-clean_run.json", ["memory", f"{D}/clean_run", "--format", "json"]),
    ("diff-batch.json", ["diff", f"{D}/diff_batch_a", f"{D}/diff_batch_b", "--format", "json"]),
    ("cost-tpu_v5e.json", ["cost", f"{D}/tpu_v5e", "--chip", "tpu-v5e", "--format", "json", "--top", "5"]),
    (
        "cache-misses-flag.json",
        ["cache-misses", "fixtures/cache/runs/2_repeat", "fixtures/cache/runs/3_flag", "--format", "json"],
    ),
]


@pytest.fixture(autouse=True)
def _repository_root(monkeypatch):
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("COLUMNS", "120")


@pytest.mark.parametrize(("name", "argv"), CASES, ids=[c[0] for c in CASES])
def test_golden(name, argv, request):
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    path = GOLDEN / name
    if request.config.getoption("--update-golden"):
        path.write_text(result.stdout)
    assert path.exists(), f"no golden file {path.name}: run pytest tests/test_golden.py --update-golden"
    assert result.stdout == path.read_text()
