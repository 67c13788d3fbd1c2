"""`diff A B` of two profiles on the committed pairs (fixtures/generate.py profile_pair_*: 200 steps of one
CPU train step each): a rerun is the machine, a wider layer and host work are significant and say what
changed, remat adds and removes ops; the gate fails only for a significant increase."""

from __future__ import annotations

import json
import statistics

import pytest
from conftest import REPO
from typer.testing import CliRunner

import xlainspect
from xlainspect.analysis.profile.compare import mann_whitney_p
from xlainspect.cli import app
from xlainspect.report.views.profile_diff import compared_headline

P = "fixtures/profiles/profile_pair_"
D = "fixtures/dumps/profile_pair_"
PAIRS = ("rerun", "wider", "remat", "host")


@pytest.fixture(scope="module")
def compared():
    def of(name: str):
        dump_a, dump_b = REPO / f"{D}a", REPO / f"{D}{name}"
        return xlainspect.profile_diff_report(REPO / f"{P}a", REPO / f"{P}{name}", dump_a=dump_a, dump_b=dump_b)

    return {name: of(name).compared for name in PAIRS}


def _truth_median(name: str) -> float:
    walls = json.loads((REPO / f"{P}{name}/truth.json").read_text())["wall_seconds"]
    return statistics.median(walls[1:])  # step 0 compiles


def test_step_medians_are_what_the_program_measured(compared):
    for name, found in compared.items():
        assert found.step.before_seconds == pytest.approx(_truth_median("a"), rel=0.05)
        assert found.step.after_seconds == pytest.approx(_truth_median(name), rel=0.05)


def test_a_rerun_is_the_machine_not_the_program(compared):
    found = compared["rerun"]
    assert not found.step.significant
    assert found.step.ratio == pytest.approx(0.851, abs=0.01)  # 2.21 ms -> 1.88 ms
    assert not [op for op in found.ops if op.changed] and not found.removed and not found.added
    assert found.uniform_factor == pytest.approx(0.97, abs=0.01)  # the ops' steps without a compile
    assert compared_headline(found) == (
        "step 2.21 ms -> 1.88 ms (-15%, within noise): ops 1.03x faster as a whole, none singled out: "
        "the machine, not the program"
    )


def test_a_wider_layer_is_a_significant_program_change_naming_its_ops(compared):
    found = compared["wider"]
    assert found.step.significant and found.step.ratio == pytest.approx(2.75, abs=0.05)
    changed = {op.name: op for op in found.ops if op.changed}
    assert {"ynn_fusion", "dot.3", "ynn_fusion.1", "ynn_fusion.2", "dot.2"} <= set(changed)
    assert changed["ynn_fusion"].shape_before == "f32[256,256]" and changed["ynn_fusion"].shape == "f32[256,1024]"
    assert changed["ynn_fusion.1"].shape_before is None  # the second layer's matmul: same output, 4x the work
    assert changed["ynn_fusion.1"].residual == pytest.approx(1.9, abs=0.1)
    assert compared_headline(found).startswith(
        "step 2.21 ms -> 6.03 ms (+173%, significant): program change: 9 ops of jit_train_step changed "
        "(+3.69 ms a step: dot.3, ynn_fusion, ynn_fusion.1 ...); the rest scaled 1.51x"
    )


def test_host_work_in_the_step_is_the_host_not_the_ops(compared):
    found = compared["host"]
    assert found.step.significant
    assert not [op for op in found.ops if op.changed]
    host = {m.name: m for m in found.metrics}["host_seconds"]
    assert host.significant and host.after_seconds - host.before_seconds == pytest.approx(2.36e-3, rel=0.02)
    categories = {c.category: c for c in found.categories}
    assert categories["host"].after_seconds > 10 * categories["host"].before_seconds
    assert compared_headline(found) == (
        "step 2.21 ms -> 4.52 ms (+105%, significant): the host +2.36 ms a step (237 us -> 2.6 ms); "
        "the ops scaled 1.08x"
    )


def test_remat_removes_and_adds_ops(compared):
    found = compared["remat"]
    assert not found.step.significant  # 2.21 -> 1.87 ms, as the rerun moved
    assert len(found.added) == 6 and all("checkpoint" in (op.op_name or "") for op in found.added)
    assert len(found.removed) == 6
    assert "program change: 1 op of jit_train_step changed, 6 added, 5 removed" in compared_headline(found)


def test_mann_whitney_u_by_hand():
    # U = 0 for n1 = n2 = 3: z = (4.5 - 0.5) / sqrt(9 / 12 * 7), p = erfc(z / sqrt 2)
    assert mann_whitney_p([1, 2, 3], [4, 5, 6]) == pytest.approx(0.0809, abs=1e-3)
    assert mann_whitney_p([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)


def _diff(*arguments: str):
    return CliRunner().invoke(app, ["diff", *arguments])


@pytest.mark.parametrize(
    ("b", "gate", "code"),
    [
        ("wider", ["--max-increase", "step_seconds=5%"], 1),
        ("rerun", ["--max-increase", "step_seconds=5%"], 0),
        ("host", ["--max-increase", "host_seconds=10%"], 1),
        ("host", ["--max-increase", "busy_seconds=5%"], 0),  # the device's work did not change
        ("remat", ["--max-increase", "step_seconds=0"], 0),  # faster
        ("rerun", [], 0),  # any significant growth of the four
    ],
)
def test_the_gate_fails_only_for_a_significant_increase(monkeypatch, b, gate, code):
    monkeypatch.chdir(REPO)
    result = _diff(P + "a", P + b, *gate, "--fail-on-regression", "--format", "json")
    assert result.exit_code == code, result.output
    regressions = json.loads(result.stdout)["regressions"]
    assert bool(regressions) == bool(code)


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ([P + "a", D + "a"], "A is a jax.profiler trace and B is not"),
        ([D + "a", P + "a"], "B is a jax.profiler trace and A is not"),
        ([D + "a", D + "rerun", "--dump-a", D + "a"], "--dump-a and dump_b join a profile"),
        ([P + "a", P + "rerun", "--max-increase", "peak_memory=5%"], "valid metrics: step_seconds, busy_seconds"),
        ([P + "a", P + "rerun", "--max-increase", "step_seconds=fast"], "expected METRIC=NUMBER"),
    ],
)
def test_bad_usage_is_exit_2(monkeypatch, arguments, said):
    monkeypatch.chdir(REPO)
    result = _diff(*arguments)
    assert result.exit_code == 2, result.output
    assert said in result.output and "Traceback" not in result.output


def test_json_keys(monkeypatch):
    monkeypatch.chdir(REPO)
    result = _diff(P + "a", P + "wider", "--format", "json")
    data = json.loads(result.stdout)
    assert set(data["step"]) == {"before_seconds", "after_seconds", "ratio", "p_value", "significant"}
    assert set(data["metrics"]) == {"step_seconds", "busy_seconds", "host_seconds", "compile_seconds"}
    assert set(data["categories"]["host"]) == {"before_seconds", "after_seconds"}
    assert isinstance(data["uniform_factor"], float)
    op = data["ops"][0]
    for key in (
        "function",
        "name",
        "before_seconds_per_step",
        "after_seconds_per_step",
        "ratio",
        "residual",
        "changed",
    ):
        assert key in op
    assert data["said"].startswith("step 2.21 ms -> 6.03 ms")
    markdown = _diff(P + "a", P + "wider", "--format", "markdown").stdout
    assert markdown.startswith(f"## xlainspect diff: `{P}a` -> `{P}wider`")


def test_report_compares_with_a_baseline(monkeypatch, tmp_path):
    monkeypatch.chdir(REPO)
    out = tmp_path / "report.md"
    arguments = ["report", D + "host", "--profile", P + "host", "--baseline", P + "a", "--markdown", str(out)]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "## Compared with the baseline" in text
    assert "step 2.21 ms -> 4.52 ms (+105%, significant): the host +2.36 ms a step" in text
    alone = CliRunner().invoke(app, ["report", D + "host", "--baseline", P + "a", "--markdown", str(out)])
    assert alone.exit_code == 2 and "--baseline" in alone.output
