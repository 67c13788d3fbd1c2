"""Every command's output on the committed fixtures, kept in tests/golden/: a change of behaviour or
output shows in review as a diff of these files. Regenerate them all with
`python -m pytest tests/test_golden.py --update-golden` (and read the diff before committing it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import JAX011, REPO
from typer.testing import CliRunner

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
    # What people and spreadsheets read: the table, Markdown and CSV forms of each command.
    ("parse.txt", ["parse", AFTER]),
    ("layout.txt", ["layout", "bf16[3,5]{1,0:T(8,128)(2,1)}"]),
    ("layout-two.json", ["layout", "(f32[2,3]{1,0}, bf16[8]{0})", "--format", "json"]),
    ("layout.csv", ["layout", "bf16[3,5]{1,0:T(8,128)(2,1)}", "--format", "csv"]),
    ("layouts-tpu_v5e.txt", ["layouts", f"{D}/tpu_v5e", "--top", "5"]),
    ("layouts-tpu_v5e.csv", ["layouts", f"{D}/tpu_v5e", "--top", "5", "--format", "csv"]),
    ("fusions-clean_run.txt", ["fusions", f"{D}/clean_run"]),
    ("fusions-clean_run.csv", ["fusions", f"{D}/clean_run", "--format", "csv"]),
    ("copies-tpu_v4.md", ["copies", f"{D}/tpu_v4", "--format", "markdown"]),
    ("collectives-collectives_cpu.txt", ["collectives", f"{D}/collectives_cpu"]),
    ("ops-clean_run.csv", ["ops", f"{D}/clean_run", "--format", "csv"]),
    ("ops-per-function.txt", ["ops", f"{D}/ragged_batch", "--per-function"]),
    ("doctor-per_pass.txt", ["doctor", f"{D}/per_pass"]),
    ("modules-ragged_batch.txt", ["modules", f"{D}/ragged_batch"]),
    ("modules-ragged_batch.csv", ["modules", f"{D}/ragged_batch", "--format", "csv"]),
    ("count-recompiles-ragged_batch.txt", ["count-recompiles", f"{D}/ragged_batch"]),
    ("count-recompiles-ragged_batch.csv", ["count-recompiles", f"{D}/ragged_batch", "--format", "csv"]),
    ("memory-clean_run.txt", ["memory", f"{D}/clean_run", "--top", "3"]),
    ("memory-clean_run.md", ["memory", f"{D}/clean_run", "--top", "3", "--format", "markdown"]),
    ("memory-clean_run.csv", ["memory", f"{D}/clean_run", "--format", "csv"]),
    ("diff-batch.txt", ["diff", f"{D}/diff_batch_a", f"{D}/diff_batch_b"]),
    ("diff-batch.md", ["diff", f"{D}/diff_batch_a", f"{D}/diff_batch_b", "--format", "markdown"]),
    ("diff-batch.csv", ["diff", f"{D}/diff_batch_a", f"{D}/diff_batch_b", "--format", "csv"]),
    ("cost-tpu_v5e.txt", ["cost", f"{D}/tpu_v5e", "--chip", "tpu-v5e", "--top", "3"]),
    ("cost-tpu_v5e.csv", ["cost", f"{D}/tpu_v5e", "--chip", "tpu-v5e", "--top", "3", "--format", "csv"]),
    ("cache-misses-flag.txt", ["cache-misses", "fixtures/cache/runs/2_repeat", "fixtures/cache/runs/3_flag"]),
    ("profile.txt", ["profile", "fixtures/profiles/profile_steps", "--dump", f"{D}/profile_steps", "--top", "5"]),
    (
        "profile.json",
        [
            "profile",
            "fixtures/profiles/profile_steps",
            "--dump",
            f"{D}/profile_steps",
            "--top",
            "5",
            "--format",
            "json",
        ],
    ),
]


def _twin(argv: list[str]) -> list[str] | None:
    """The command line on the jax 0.11.2 twins of its fixtures (fixtures/jax011/dumps), or None where a
    fixture it reads has none (TPU, the cache runs, the profile)."""
    paths = [a for a in argv if a.startswith(("fixtures/", f"{D}/"))]
    if not paths or not all(a.startswith(f"{D}/") and (JAX011 / a.removeprefix(f"{D}/")).exists() for a in paths):
        return None
    return [f"fixtures/jax011/dumps/{a.removeprefix(f'{D}/')}" if a in paths else a for a in argv]


#: The same commands on the jax 0.11.2 twins, in tests/golden/jax011/: what differs from the jax 0.10.2
#: golden beside it is what jax 0.11.2 compiled differently (source lines moved with generate.py, `%p#1`
#: operands for get-tuple-element lines, its own fusion and buffer choices); counts and causes agree.
CASES += [(f"jax011/{name}", twin) for name, argv in CASES if (twin := _twin(argv))]


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
