"""count-recompiles on the real fixture dumps: exact counts, causes and the CI gate's exit codes."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tests.conftest import DUMPS
from xlainspect.analysis.recompiles import count_recompiles
from xlainspect.cli.app import app
from xlainspect.dump.directory import load_dump

runner = CliRunner()


def _rows(scenario):
    return {r.name: r for r in count_recompiles(load_dump(DUMPS / scenario))}


def _json(*args):
    result = runner.invoke(app, ["count-recompiles", *map(str, args), "--format", "json"])
    return result, json.loads(result.stdout)


def test_ragged_batch_shape_cause_and_buckets():
    rows = _rows("ragged_batch")
    assert {n: r.modules for n, r in rows.items()} == {"jit_train_step": 2, "jit_eval_step": 2}
    x = rows["jit_train_step"].causes[0]
    assert (x.kind, x.parameter, x.index, x.values, x.dims) == ("shape", "x", 2, (100, 5), (0,))
    assert "always 100 -> 1 compile" in rows["jit_train_step"].suggestion


def test_shape_branch_values():
    cause = _rows("shape_branch")["jit_featurize"].causes[0]
    assert (cause.kind, cause.values) == ("shape", (8, 16, 64, 128))


def test_static_arg_body_constants():
    row = _rows("static_arg")["jit_scaled_tanh"]
    assert row.modules == 3
    assert [c.kind for c in row.causes] == ["body"]
    assert row.causes[0].values == ("f32[] constant(0.5)", "f32[] constant(1)", "f32[] constant(2)")


def test_static_arg_body_when_computations_do_not_parse_alone(monkeypatch):
    """Pieces cut in the wrong place (what a multi-line value at column 0 would cause) fail to parse
    alone; the whole modules are parsed instead and the answer is the same."""
    import xlainspect.hlo.parser

    def halves(text):
        return [text[: len(text) // 2], text[len(text) // 2 :]]

    monkeypatch.setattr(xlainspect.hlo.parser, "split_computations", halves)
    row = _rows("static_arg")["jit_scaled_tanh"]
    assert row.causes[0].values == ("f32[] constant(0.5)", "f32[] constant(1)", "f32[] constant(2)")


def test_dtype_change():
    cause = _rows("dtype_change")["jit_affine_sum"].causes[0]
    assert (cause.kind, cause.values) == ("dtype", ("f32", "bf16", "s32"))


def test_recreated_function_identical():
    rows = _rows("recreated_fn")
    assert rows["jit__lambda"].modules == 4 and rows["jit_double"].modules == 1
    assert [c.kind for c in rows["jit__lambda"].causes] == ["identical"]


def test_eager_flood_tells_eager_from_user_functions():
    rows = _rows("eager_flood")
    assert sum(r.modules for r in rows.values()) == 18 and len(rows) == 15
    assert not rows["jit_model"].eager
    assert all(r.eager for n, r in rows.items() if n != "jit_model")
    assert [c.kind for c in rows["jit__reduce_sum"].causes] == ["body"]


def test_cli_json_and_gate_exit_codes():
    result, document = _json(DUMPS / "ragged_batch")
    assert result.exit_code == 0
    assert document["total_modules"] == 4
    train = document["functions"][0]
    assert (train["name"], train["modules"], train["module_ids"], train["eager"]) == (
        "jit_train_step",
        2,
        [0, 2],
        False,
    )
    assert train["causes"][0]["kind"] == "shape" and train["causes"][0]["values"] == [100, 5]

    gated = runner.invoke(app, ["count-recompiles", str(DUMPS / "ragged_batch"), "--max-per-function", "1"])
    assert gated.exit_code == 1 and "jit_train_step compiled 2 times" in gated.stderr
    named = runner.invoke(
        app,
        [
            "count-recompiles",
            str(DUMPS / "ragged_batch"),
            "--max-per-function",
            "1",
            "--max",
            "jit_train_step=2",
            "--max",
            "jit_eval_step=2",
        ],
    )
    assert named.exit_code == 0
    clean = runner.invoke(app, ["count-recompiles", str(DUMPS / "clean_run"), "--max-per-function", "1"])
    assert clean.exit_code == 0
    assert (
        runner.invoke(
            app, ["count-recompiles", str(DUMPS / "eager_flood"), "--max-per-function", "1", "--ignore-eager"]
        ).exit_code
        == 0
    )
    assert runner.invoke(app, ["count-recompiles", str(DUMPS / "eager_flood"), "--max-total", "17"]).exit_code == 1


def test_cli_usage_errors(tmp_path):
    missing = runner.invoke(app, ["count-recompiles", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no such file" in missing.stderr
    empty = runner.invoke(app, ["count-recompiles", str(tmp_path)])
    assert empty.exit_code == 2 and "no XLA dump files" in empty.stderr
    assert runner.invoke(app, ["count-recompiles", str(DUMPS / "clean_run"), "--max", "oops"]).exit_code == 2


def test_baseline_round_trip(tmp_path):
    baseline = tmp_path / "baseline.json"
    written = runner.invoke(
        app, ["count-recompiles", str(DUMPS / "clean_run"), "--baseline", str(baseline), "--update-baseline"]
    )
    assert written.exit_code == 0
    assert json.loads(baseline.read_text()) == {"functions": {"jit_train_step": 1}}
    worse = runner.invoke(app, ["count-recompiles", str(DUMPS / "ragged_batch"), "--baseline", str(baseline)])
    assert worse.exit_code == 1 and "budget 1 (baseline)" in worse.stderr


def test_sharding_change_across_two_dumps():
    """Two runs (directories) of jit_forward: x replicated vs sharded on the batch dim; per-device shapes
    differ after optimization but the global shapes agree, so the cause is the sharding."""
    dump = load_dump([DUMPS / "diff_sharding_a", DUMPS / "diff_sharding_b"])
    assert [m.host for m in dump.modules] == ["diff_sharding_a", "diff_sharding_b"]
    (row,) = count_recompiles(dump)
    assert [(c.kind, c.parameter, c.values) for c in row.causes] == [
        ("sharding", "x", ("{replicated}", "{devices=[8,1]<=[8]}"))
    ]


def test_tpu_layouts_one_compile_per_dtype():
    """Libtpu dumps (cl_ tags, ids jumping by 13-29): jit_layouts compiled once per dtype of 12."""
    row = _rows("tpu_v5e")["jit_layouts"]
    assert row.modules == 12 and row.module_ids[:3] == (0, 29, 58)
    dtype = next(c for c in row.causes if c.kind == "dtype")
    assert dtype.values == ("bf16", "f32", "s8", "s4", "u8", "s32", "f16", "pred", "u4", "s16", "f8e4m3fn", "f8e5m2")


def test_table_folds_eager_ops_compiled_once_but_csv_keeps_every_function():
    markdown = runner.invoke(app, ["count-recompiles", str(DUMPS / "eager_flood"), "--format", "markdown"])
    assert markdown.exit_code == 0
    lines = [line for line in markdown.stdout.splitlines() if line.startswith("| ")]
    assert lines[1].startswith("| jit_stage | 2 |")  # recompiled functions first
    folded = next(line for line in lines if "more eager ops" in line)
    assert folded.startswith("| 11 more eager ops | 11 | True | compiled once each: jit_add, jit_sin,")
    csv = runner.invoke(app, ["count-recompiles", str(DUMPS / "eager_flood"), "--format", "csv"])
    assert len(csv.stdout.strip().splitlines()) == 1 + 15
