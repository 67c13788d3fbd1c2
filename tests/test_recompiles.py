"""count-recompiles on the real fixture dumps: exact counts, causes and the CI gate's exit codes."""

from __future__ import annotations

import io
import json
import os
from collections import Counter

import pytest
from conftest import DUMPS, FIXTURES, JAX_VERSIONS, twins
from typer.testing import CliRunner

import xlainspect.settings
from xlainspect.analysis.commands.compiles import recompiles_report
from xlainspect.analysis.recompiles import count_recompiles
from xlainspect.cli.app import app
from xlainspect.dump.directory import load_dump
from xlainspect.report.causes import cause_detail, cause_values, causes_text, describe_cause, suggestion

runner = CliRunner()


def _rows(scenario, jax_version=JAX_VERSIONS[0]):
    return {r.name: r for r in count_recompiles(load_dump(jax_version.dumps / scenario)).functions}


def _json(*args):
    result = runner.invoke(app, ["count-recompiles", *map(str, args), "--format", "json"])
    return result, json.loads(result.stdout)


def test_ragged_batch_shape_cause_and_buckets(jax_version):
    rows = _rows("ragged_batch", jax_version)
    assert {n: r.modules for n, r in rows.items()} == {"jit_train_step": 2, "jit_eval_step": 2}
    x, y = rows["jit_train_step"].causes
    assert (x.kind, x.parameter, x.index, x.values, x.dims) == ("shape", "x", 2, (100, 5), (0,))
    assert (y.kind, y.parameter, y.values) == ("shape", "y", (100, 5))
    advice = suggestion(rows["jit_train_step"])
    assert advice.startswith("the last batch is ragged (x, y dim 0: 5 after batches of 100): drop it")
    assert "pad it to 100 and mask the padded rows" in advice and "buckets" not in advice
    assert rows["jit_train_step"].source == jax_version.source(153)


def test_shape_branch_names_the_ops_of_each_branch_and_their_lines(jax_version):
    row = _rows("shape_branch", jax_version)["jit_featurize"]
    shape, branch = row.causes
    assert (shape.kind, shape.values) == ("shape", (8, 16, 64, 128))
    assert branch.kind == "branch"
    # the small sizes' branch calls a nested jit (jnp.sort): its ops are counted as inlined, not as `call`
    small = (("compare", 5), ("select", 4), ("sort", 1))
    large = (("add", 1), ("dot", 1), ("reduce", 1), ("tanh", 1), ("transpose", 1))
    assert branch.values == (small,) * 2 + (large,) * 2
    assert cause_values(branch) == ("compare x5, select x4, sort",) * 2 + ("add, dot, reduce, tanh, transpose",) * 2
    assert (branch.reason, branch.sources[-1]) == ("branch_on_shape", jax_version.source(208))
    assert cause_detail(branch).endswith(f"at {jax_version.source(208)}")
    # buckets that do not reduce the compile count (powers of two: 4 sizes, 4 buckets) are not offered
    assert "powers of two" not in suggestion(row)
    assert "multiples of 32 [32, 64, 128] -> 3 compiles, up to 300% padding" in suggestion(row)
    assert "always 128 [128] -> 1 compile, up to 1500% padding" in suggestion(row)


def test_buckets_offered_only_when_fewer_and_cheaper(jax_version):
    """timestamped: sizes 4 then 6 (not a ragged last batch: it grows); multiples of 8 would pad more than
    always 6 for the same single compile."""
    row = _rows("timestamped", jax_version)["jit_train_step"]
    assert suggestion(row) == "pad x, y dim 0 (sizes 4, 6) to buckets: always 6 [6] -> 1 compile, up to 50% padding"


def test_static_arg_body_constants(jax_version):
    row = _rows("static_arg", jax_version)["jit_scaled_tanh"]
    assert row.modules == 3
    assert [c.kind for c in row.causes] == ["body"]
    assert (row.causes[0].reason, row.causes[0].values) == ("baked_in", (("0.5",), ("1",), ("2",)))
    assert row.causes[0].constant_types == ("f32",)
    assert describe_cause(row.causes[0]) == "body: a Python float baked in: 0.5 -> 1 -> 2"


def test_static_arg_body_when_computations_do_not_parse_alone(jax_version, monkeypatch):
    """Pieces cut in the wrong place (what a multi-line value at column 0 would cause) fail to parse
    alone; the whole modules are parsed instead and the answer is the same."""
    import xlainspect.hlo.parser

    def halves(text):
        return [text[: len(text) // 2], text[len(text) // 2 :]]

    monkeypatch.setattr(xlainspect.hlo.parser, "split_computations", halves)
    row = _rows("static_arg", jax_version)["jit_scaled_tanh"]
    assert row.causes[0].values == (("0.5",), ("1",), ("2",))


def test_dtype_change(jax_version):
    (cause,) = _rows("dtype_change", jax_version)["jit_affine_sum"].causes  # the converts a dtype brings are no branch
    assert (cause.kind, cause.values) == ("dtype", ("f32", "bf16", "s32"))


def test_recreated_function_identical(jax_version):
    rows = _rows("recreated_fn", jax_version)
    assert rows["jit__lambda"].modules == 4 and rows["jit_double"].modules == 1
    assert [c.kind for c in rows["jit__lambda"].causes] == ["identical"]
    (identical,) = rows["jit__lambda"].causes
    assert (identical.values, identical.compiles, identical.same_as) == ((0, 2, 4, 6), (2, 3, 4), 1)


def test_a_recreated_function_that_then_branches_has_both_causes():
    """recreated_branch: the layer jitted anew on each of 4 calls, relu off, off, off, on. Compiles 2-3 are
    the program of compile 1 again (the function re-created), compile 4 another program: both causes,
    each naming its compiles, not `branch` alone."""
    (row,) = _rows("recreated_branch").values()
    identical, branch = row.causes
    assert (identical.kind, identical.compiles, identical.same_as, identical.values) == (
        "identical",
        (2, 3),
        1,
        (0, 2, 4),
    )
    assert (branch.kind, branch.compiles, branch.values) == ("branch", (4,), ((), (("maximum", 1),)))  # jax.nn.relu
    assert branch.reason == "branch_on_static"
    assert causes_text(row.causes) == [
        "compiles 2-3: identical to compile 1 (the HLO cannot tell apart the function re-created, a static "
        "argument's value, a weak type, a pytree jax prunes to the same program (an unused key, a keyword call) or "
        "a tracing context; jax's log says which: xlainspect capture -- python train.py)",
        "compile 4: another program (maximum): a Python branch on a static argument",
    ]
    assert suggestion(row).startswith("create the jitted function once and reuse it")
    assert "a Python if/for on a shape or static value picks the program" in suggestion(row)


def test_causes_of_different_compiles_name_them(jax_version):
    """shape_branch: every size is new (compiles 2-4), the program changes once (compile 3, size 64);
    sharded_mesh: the sharding changes at compile 2, the global shape at compile 3."""
    (featurize,) = _rows("shape_branch", jax_version).values()
    assert [c.compiles for c in featurize.causes] == [(2, 3, 4), (3,)]
    assert causes_text(featurize.causes) == [
        "compiles 2-4: shape x dim 0: 8 -> 16 -> 64 -> 128",
        "compile 3: another program (add, dot, reduce, tanh, transpose): a Python branch or loop on a shape, "
        f"at {jax_version.source(208)}",
    ]
    dense = _rows("sharded_mesh", jax_version)["jit_dense"]
    assert [(c.kind, c.compiles) for c in dense.causes] == [("shape", (3,)), ("sharding", (2,))]
    ragged = _rows("ragged_batch", jax_version)["jit_train_step"]  # causes of the same compile: no numbers
    assert causes_text(ragged.causes) == ["shape x dim 0: 100 -> 5", "shape y dim 0: 100 -> 5"]


def test_a_flag_that_drops_an_unused_argument_and_image_sizes_are_both_named():
    """The GPU corpus' MLP-Mixer (jax 0.11.2, H200; fixtures/gpu_corpus/mixer_profile): jit_train_step
    compiled 6 times, 3 image sizes x a static `train` flag. With train=False the dropout key is unused
    and jax leaves it out (keep_unused=False): 22 parameters, then 21, the other 21 paired one-for-one
    by op_name. That is a static value changing what the function uses (compile 2), not a signature
    change to cast away; the image sizes, compared among signatures of one count, explain compiles 3-6."""
    folder = FIXTURES / "gpu_corpus" / "mixer_profile"
    (step,) = count_recompiles(load_dump(folder / "dump")).functions
    assert step.modules == 6 == _expected_truth(folder)["jit(train_step)"]
    by_parameter = {c.parameter: c for c in step.causes}
    assert set(by_parameter) >= {"key", "images"}
    assert not any(c.kind == "dtype" and c.parameter is None for c in step.causes)  # no all-parameters dtype
    key, images = by_parameter["key"], by_parameter["images"]
    assert (key.kind, key.values, key.compiles) == ("unused", ((), ("key",)) * 3, (2,))
    assert (images.values, images.dims, images.compiles) == (((32, 32), (16, 16), (24, 24)), (1, 2), (3, 4, 5, 6))
    text = causes_text(step.causes)
    assert text[0] == (
        "compile 2: argument key: used -> unused -> used -> unused -> used -> unused (a static argument or "
        "Python value changes what the function uses: jax leaves an argument the program does not use out of "
        "it (jit's keep_unused=False))"
    )
    assert text[1].startswith("compiles 3-6: shape params['tok1'] dim 1: 64 -> 16 -> 36")
    advice = suggestion(step)
    assert advice.startswith("a static argument or Python value (a train flag) decides which arguments")
    assert "cast the inputs" not in advice and "pytree" not in advice
    assert "pad params['tok1'], opt_state[0].mu['tok1'], opt_state[0].nu['tok1'] dim 1" in advice


def test_a_parameter_count_change_that_drops_no_unused_argument_stays_a_signature_change():
    """tpu_v5e's jit_layouts (jax 0.10.2): 15 parameters, then 7 of other element types: no variant's
    parameters are the widest's less some, so the cause stays the parameter count (a pytree change)."""
    (layouts,) = [r for r in count_recompiles(load_dump(DUMPS / "tpu_v5e")).functions if r.name == "jit_layouts"]
    assert [c.kind for c in layouts.causes if c.kind == "unused"] == []
    (count,) = [c for c in layouts.causes if c.reason == "parameter_count"]
    assert (count.values, count.compiles) == ((15,) * 4 + (7,) * 8, (5,))


def test_a_persistent_cache_hit_classifies_as_the_compile_it_loaded():
    """fixtures/gpu_corpus/cache_runs (jax 0.11.2, H200): one program run twice over one persistent
    cache. run2 hit it for every compile, and XLA dumped only the executables it loaded (the optimized
    program: `args[0]` and copy insertion's `copy` for a convert to the dtype it has, or `jit_stage`; no
    stack frames left). jax's rule for eager dispatch (`prim_fun(*args)` jitted under the primitive's
    name) tells them eager either way: the same rows in both runs, as jax counted them."""
    folder = FIXTURES / "gpu_corpus" / "cache_runs"
    truth = _expected_truth(folder / "run2")
    rows = [count_recompiles(load_dump(folder / run / "dump")).functions for run in ("run1", "run2")]
    cold, hit = ({(r.name, r.eager): r.modules for r in found} for found in rows)
    assert truth["jit(convert_element_type)"] == 11
    assert (
        cold
        == hit
        == {
            ("jit_stage", True): truth["jit(stage)"],
            ("jit_squeeze", True): truth["jit(squeeze)"],
            ("jit_convert_element_type", True): truth["jit(convert_element_type)"],
        }
    )


def _expected_truth(folder):
    return json.loads((folder / "truth.json").read_text())["per_function"]


def test_eager_flood_tells_eager_from_user_functions(jax_version):
    rows = _rows("eager_flood", jax_version)
    assert sum(r.modules for r in rows.values()) == 18 and len(rows) == 15
    assert not rows["jit_model"].eager
    assert all(r.eager for n, r in rows.items() if n != "jit_model")
    # jnp.sum(f, axis=0) then axis=1: the same argument, another result (a static argument)
    (axis,) = rows["jit__reduce_sum"].causes
    assert (axis.kind, axis.values) == ("result", ("f32[8]", "f32[4]"))
    assert describe_cause(axis) == "result f32[8] -> f32[4] (a static argument)"
    assert rows["jit_add"].source == jax_version.source(296)  # the line that called jnp.add
    assert rows["jit_model"].source == jax_version.source(316)


def test_cli_json_and_gate_exit_codes(jax_version):
    result, document = _json(jax_version.dumps / "ragged_batch")
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

    gated = runner.invoke(app, ["count-recompiles", str(jax_version.dumps / "ragged_batch"), "--max-per-function", "1"])
    assert gated.exit_code == 1 and "jit_train_step compiled 2 times" in gated.stderr
    named = runner.invoke(
        app,
        [
            "count-recompiles",
            str(jax_version.dumps / "ragged_batch"),
            "--max-per-function",
            "1",
            "--max",
            "jit_train_step=2",
            "--max",
            "jit_eval_step=2",
        ],
    )
    assert named.exit_code == 0
    clean = runner.invoke(app, ["count-recompiles", str(jax_version.dumps / "clean_run"), "--max-per-function", "1"])
    assert clean.exit_code == 0
    assert (
        runner.invoke(
            app,
            ["count-recompiles", str(jax_version.dumps / "eager_flood"), "--max-per-function", "1", "--ignore-eager"],
        ).exit_code
        == 0
    )
    assert (
        runner.invoke(app, ["count-recompiles", str(jax_version.dumps / "eager_flood"), "--max-total", "17"]).exit_code
        == 1
    )


def test_cli_usage_errors(tmp_path):
    missing = runner.invoke(app, ["count-recompiles", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no such file" in missing.stderr
    empty = runner.invoke(app, ["count-recompiles", str(tmp_path)])
    assert empty.exit_code == 2 and "no XLA dump files" in empty.stderr
    assert runner.invoke(app, ["count-recompiles", str(DUMPS / "clean_run"), "--max", "oops"]).exit_code == 2


def test_baseline_round_trip(jax_version, tmp_path):
    baseline = tmp_path / "baseline.json"
    written = runner.invoke(
        app,
        ["count-recompiles", str(jax_version.dumps / "clean_run"), "--baseline", str(baseline), "--update-baseline"],
    )
    assert written.exit_code == 0
    assert json.loads(baseline.read_text()) == {"functions": {"jit_train_step": 1}}
    worse = runner.invoke(
        app, ["count-recompiles", str(jax_version.dumps / "ragged_batch"), "--baseline", str(baseline)]
    )
    assert worse.exit_code == 1 and "budget 1 (baseline)" in worse.stderr


def test_sharding_change_across_two_dumps(jax_version):
    """Two runs (directories) of jit_forward: x replicated vs sharded on the batch dim; per-device shapes
    differ after optimization but the global shapes agree, so the cause is the sharding."""
    dump = load_dump([jax_version.dumps / "diff_sharding_a", jax_version.dumps / "diff_sharding_b"])
    assert [m.host for m in dump.modules] == ["diff_sharding_a", "diff_sharding_b"]
    (row,) = count_recompiles(dump).functions
    assert [(c.kind, c.parameter, c.values) for c in row.causes] == [("sharding", "x", ("P()", "P('data', None)"))]
    assert describe_cause(row.causes[0]) == "sharding x: P() (replicated) -> P('data', None)"


def test_tpu_layouts_one_compile_per_dtype():
    """Libtpu dumps (cl_ tags, ids jumping by 13-29): jit_layouts compiled once per dtype of 12."""
    row = _rows("tpu_v5e")["jit_layouts"]
    assert row.modules == 12 and row.module_ids[:3] == (0, 29, 58)
    dtype = next(c for c in row.causes if c.kind == "dtype")
    assert dtype.values == ("bf16", "f32", "s8", "s4", "u8", "s32", "f16", "pred", "u4", "s16", "f8e4m3fn", "f8e5m2")


def test_table_leads_with_user_functions_and_folds_eager_traffic_but_csv_keeps_every_function(jax_version):
    markdown = runner.invoke(app, ["count-recompiles", str(jax_version.dumps / "eager_flood"), "--format", "markdown"])
    assert markdown.exit_code == 0
    lines = [line for line in markdown.stdout.splitlines() if line.startswith("| ")]
    assert lines[0] == "| function | compiles | eager | source | why | suggestion |"
    assert lines[1] == f"| jit_model | 1 | False | {jax_version.source(316)} |  |  |"
    assert lines[2].startswith(
        "| eager ops (14 jax functions) | 17 | True |  | jit_stage x2, jit_multiply x2, jit__reduce_sum x2, jit_add,"
    )
    first = int(jax_version.source(296).rpartition(":")[2])
    sites = ", ".join(f":{n}" for n in range(first + 1, first + 6))
    assert f"called at fixtures/generate.py:{first}, {sites} and 7 more" in lines[2]
    assert len(lines) == 3
    csv = runner.invoke(app, ["count-recompiles", str(jax_version.dumps / "eager_flood"), "--format", "csv"])
    assert len(csv.stdout.strip().splitlines()) == 1 + 15


def test_piped_table_is_a_list_within_80_columns(jax_version):
    """A pipe is 80 columns: each function as a paragraph, nothing wider, the whole text kept."""
    result = runner.invoke(app, ["count-recompiles", str(jax_version.dumps / "flax_nnx")], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    assert lines[:3] == [
        "21 compiles of 12 functions, 6 compiled more than once",
        "jit_train_step: 2 compiles, fixtures/generate.py:692",
        "  why: shape batch['image'] dim 0: 64 -> 8; shape batch['label'] dim 0: 64 -> 8",
    ]
    assert "eager ops (10 jax functions): 17 compiles" in lines
    assert "drop_remainder=True" in result.stdout and "mask the padded" in result.stdout


def _expected(scenario, jax_version):
    """What jax counted (jax.monitoring backend compile events) when the fixture was made."""
    return json.loads((jax_version.dumps / f"{scenario}.compiles.json").read_text())["backend_compiles"]


@pytest.mark.parametrize(
    ("jax_version", "scenario"),
    twins("library_names", "flax_nnx", "flax_linen", "equinox", "keras", "sharded_mesh", "same_signature"),
)
def test_compile_counts_equal_jax_monitoring(jax_version, scenario):
    counts = Counter()
    for row in count_recompiles(load_dump(jax_version.dumps / scenario)).functions:
        counts[row.name] += row.modules
    assert counts == _expected(scenario, jax_version)


def test_user_functions_named_like_jax_functions_are_not_eager(jax_version):
    """jit_matmul and jit_std are the user's own multi-op functions; model init's library calls are eager
    (by stack frames, not by name)."""
    rows = _rows("library_names", jax_version)
    assert [n for n, r in rows.items() if not r.eager] == ["jit_matmul", "jit_std", "jit_smooth", "jit_sgd"]
    assert rows["jit_matmul"].source == jax_version.source(630)
    gated = runner.invoke(
        app, ["count-recompiles", str(jax_version.dumps / "library_names"), "--ignore-eager", "--max-per-function", "1"]
    )
    assert gated.exit_code == 1
    assert [line for line in gated.stderr.splitlines() if line.startswith("over budget")] == [
        f"over budget: {name} compiled 2 times, budget 1 (--max-per-function)"
        for name in ("jit_matmul", "jit_std", "jit_smooth", "jit_sgd")
    ]


_INIT_CALLS = {
    "library_names": ["jit__truncated_normal", "jit_relu", "jit_true_divide", "jit_dot"],
    "flax_linen": ["jit__truncated_normal", "jit_conv_general_dilated", "jit_relu", "jit_reduce_window_sum"],
    "equinox": ["jit__uniform", "jit_unstack", "jit__threefry_split"],
    "keras": ["jit__uniform", "jit__where", "jit_equal", "jit_true_divide"],
}


@pytest.mark.parametrize(("jax_version", "scenario"), twins(*_INIT_CALLS))
def test_library_calls_from_model_init_are_eager(jax_version, scenario):
    rows = _rows(scenario, jax_version)
    assert all(rows[name].eager for name in _INIT_CALLS[scenario])


def test_static_shape_argument_is_a_result_cause(jax_version):
    """jax.random.truncated_normal(key, -2, 2, shape) with two shapes: the arguments agree, the result
    does not."""
    (cause,) = _rows("library_names", jax_version)["jit__truncated_normal"].causes
    assert describe_cause(cause) == "result f32[20,64] -> f32[64,4] (a static argument)"


def test_eager_split_by_weak_type_only(jax_version):
    """jnp.add(h, 1.0) then jnp.add(h, np.float32(1.0)): one program, two compiles."""
    (cause,) = _rows("library_names", jax_version)["jit_add"].causes
    assert (cause.kind, cause.values) == ("weak_type", (12, 14))


def test_body_causes_in_words(jax_version):
    rows = _rows("library_names", jax_version)
    (unrolled,) = rows["jit_smooth"].causes
    assert (unrolled.kind, unrolled.reason, unrolled.factor) == ("body", "unrolled", 2)
    assert cause_detail(unrolled) == "a loop unrolled 2x (a static count)"
    assert unrolled.values == tuple(tuple((op, n) for op in ("add", "multiply", "tanh")) for n in (2, 4))
    assert cause_values(unrolled) == ("add x2, multiply x2, tanh x2", "add x4, multiply x4, tanh x4")
    assert suggestion(rows["jit_smooth"]).startswith(
        "a static count unrolls a Python loop: loop with jax.lax.fori_loop"
    )
    (lr,) = rows["jit_sgd"].causes
    assert describe_cause(lr) == "body: a Python float baked in: 0.1 -> 0.05"
    (scale,) = _rows("equinox", jax_version)["jit_make_step"].causes  # filter_jit: a Python float is static
    assert scale.values == ((), ("0.5",), ("0.25",))  # x * 1.0 is simplified away: no constant
    assert describe_cause(scale) == "body: a Python float baked in: (folded away) -> 0.5 -> 0.25"


_LOOPS = [
    ("flax_nnx", "jit_train_step", ["batch['image']", "batch['label']"], (64, 8)),
    ("flax_nnx", "jit_eval_step", ["batch['image']", "batch['label']"], (64, 8)),
    ("flax_linen", "jit_cnn_train_step", ["batch['image']", "batch['label']"], (16, 10)),
    ("keras", "jit_train_step", ["data[0]", "data[1]"], (64, 8)),
    ("keras", "jit_test_step", ["data[0]", "data[1]"], (64, 8)),
    ("keras", "jit_predict_step", ["data"], (64, 8)),
]


@pytest.mark.parametrize(
    ("jax_version", "scenario", "function", "parameters", "sizes"),
    [pytest.param(twin.values[0], *loop, id=f"{twin.id}-{loop[1]}") for loop in _LOOPS for twin in twins(loop[0])],
)
def test_ragged_last_batch_in_library_training_loops(jax_version, scenario, function, parameters, sizes):
    row = _rows(scenario, jax_version)[function]
    assert [(c.kind, c.parameter, c.values) for c in row.causes] == [("shape", p, sizes) for p in parameters]
    assert suggestion(row).startswith(f"the last batch is ragged ({', '.join(parameters)} dim 0: {sizes[1]} after")
    assert not row.eager


def test_sharded_run_in_mesh_terms(jax_version):
    rows = _rows("sharded_mesh", jax_version)
    shape, sharding = rows["jit_dense"].causes
    assert (shape.parameter, shape.values, shape.reason, shape.per_device) == (
        "x",
        (64, 64, 32),
        "per_device",
        (32, 8, 16),
    )
    assert cause_detail(shape) == "per device 32 -> 8 -> 16"
    assert sharding.values == ("P('data', None)", "P(('data', 'model'), None)", "P('data', None)")
    (out,) = rows["jit_project"].causes
    assert (out.kind, out.values) == ("out_sharding", ("P('data', 'model')", "P()"))
    assert describe_cause(out) == "output sharding P('data', 'model') -> P() (replicated)"
    assert suggestion(rows["jit_project"]) == "jit the function once, with one out_shardings"
    assert (rows["jit_row_total"].modules, rows["jit_row_total"].eager) == (1, False)  # mesh replica groups


def test_same_signature_causes(jax_version):
    """same_signature: a static flag that adds ops (a branch, at the line it adds), one that changes nothing
    and a weak type (identical programs), a dict under another key (pytree), dtype and shape together."""
    rows = _rows("same_signature", jax_version)
    (branch,) = rows["jit_layer"].causes  # jax's per-module xla_detailed_logging is no flag change
    assert branch.kind == "branch" and branch.values == (
        tuple((op, 1) for op in ("add", "divide", "exponential", "multiply", "negate", "tanh")),
        (),  # the other side adds no op of its own
    )
    assert describe_cause(branch).endswith(
        ": add, divide, exponential, multiply, negate, tanh vs only ops every program has"
    )
    assert (branch.reason, branch.sources) == ("branch_on_static", ("fixtures/generate.py:894",))
    assert cause_detail(branch).endswith("a Python branch on a static argument, at fixtures/generate.py:894")
    for name, ids in (("jit_scale", (4, 6)), ("jit_shift", (8, 10))):
        (identical,) = rows[name].causes
        assert (identical.kind, identical.values) == ("identical", ids)
    (pytree,) = rows["jit_total"].causes
    assert pytree.values == (("batch['image']",), ("batch['inputs']",))
    assert describe_cause(pytree) == (
        "pytree (argument paths): batch['image'] -> batch['inputs'] "
        "(the same arrays under other pytree paths (dict keys, dataclass fields))"
    )
    assert [(c.kind, c.parameter, c.values) for c in rows["jit_norm"].causes] == [
        ("dtype", "v", ("f32", "bf16")),
        ("shape", "v", (8, 16)),
    ]


def test_prng_keys_get_no_padding_advice(jax_version):
    """4 then 8 PRNG keys (u32[n,2] to XLA): padding would invent keys, so no bucket is offered."""
    row = _rows("same_signature", jax_version)["jit_noise"]
    (keys,) = row.causes
    assert (keys.kind, keys.parameter, keys.values, keys.reason) == ("shape", "keys", (4, 8), "prng_key")
    assert describe_cause(keys) == "shape keys dim 0: 4 -> 8 (a PRNG key array)"
    assert suggestion(row) is None


def test_gate_on_library_training_loops_ignores_eager_init(jax_version):
    """With flax NNX, model init compiles 17 eager ops; the gate with --ignore-eager names the two steps only."""
    argv = ["count-recompiles", str(jax_version.dumps / "flax_nnx"), "--ignore-eager", "--max-per-function", "1"]
    gated = runner.invoke(app, argv)
    assert gated.exit_code == 1
    assert [line for line in gated.stderr.splitlines() if line.startswith("over budget")] == [
        "over budget: jit_train_step compiled 2 times, budget 1 (--max-per-function)",
        "over budget: jit_eval_step compiled 2 times, budget 1 (--max-per-function)",
    ]
    allowed = runner.invoke(app, [*argv, "--max", "jit_train_step=2", "--max", "jit_eval_step=2"])
    assert allowed.exit_code == 0
    assert (
        runner.invoke(app, ["count-recompiles", str(jax_version.dumps / "flax_nnx"), "--max-total", "20"]).exit_code
        == 1
    )


def test_a_user_function_and_an_eager_op_of_one_name_are_two_rows(jax_version):
    """An eager `x @ w` (jit_matmul) first, then the user's own `def matmul` twice: the user's row is
    gated, the eager one left out with --ignore-eager; without it the budget counts all 3 compiles."""
    user, eager = (
        r for r in count_recompiles(load_dump(jax_version.dumps / "same_signature")).functions if r.name == "jit_matmul"
    )
    assert (user.modules, user.eager, user.module_ids, user.source) == (2, False, (36, 40), jax_version.source(939))
    assert [(c.kind, c.parameter, c.values) for c in user.causes] == [("shape", "a", (4, 2))]
    assert (eager.modules, eager.eager, eager.module_ids) == (1, True, (34,))
    argv = ["count-recompiles", str(jax_version.dumps / "same_signature"), "--max", "jit_matmul=2"]
    assert runner.invoke(app, [*argv, "--ignore-eager"]).exit_code == 0
    counted = runner.invoke(app, argv)
    assert counted.exit_code == 1 and "jit_matmul compiled 3 times, budget 2 (--max jit_matmul)" in counted.stderr


@pytest.mark.parametrize(
    ("jax_version", "scenario"),
    twins("ragged_batch", "static_arg", "shape_branch", "sharded_mesh", "recreated_branch", "fleet_divergence"),
)
def test_each_file_is_opened_once(jax_version, scenario, monkeypatch):
    """count-recompiles' routes (origin, headers, signatures, op histograms, bodies, flags, then the hosts'
    programs, which the command keeps read for divergence) share what the dump layer read: each file of these dumps of small modules (under 16 KB, read
    whole with their header) is opened once. Larger files are opened for the header, then again where
    their whole text is needed."""
    folder = str(jax_version.dumps / scenario)
    opened: Counter[str] = Counter()

    def counting(opener):
        def open_counted(path, *args, **kwargs):
            if os.fspath(path).startswith(folder):
                opened[os.fspath(path)] += 1
            return opener(path, *args, **kwargs)

        return open_counted

    monkeypatch.setattr(os, "open", counting(os.open))
    monkeypatch.setattr(io, "open", counting(io.open))
    monkeypatch.setattr(xlainspect.settings, "_cache_enabled", False)
    assert recompiles_report(folder).functions  # the command holds the hosts' programs for divergence
    assert len(opened) >= 6 and set(opened.values()) == {1}, opened.most_common(3)
