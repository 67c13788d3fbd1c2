"""`diff`: fixture pairs made by fixtures/generate.py where the change is known, and the CI gate.

diff_batch_*: one linear-model train_step at batch 8 and 16. diff_remat_*: a 2-layer MLP step
without and with jax.checkpoint on the gelu hidden layer. diff_sharding_*: a forward pass on 8
CPU devices with x replicated and sharded over its batch dim.
"""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest
from conftest import DUMPS, JAX011
from typer.testing import CliRunner

from xlainspect.analysis.commands.diff import DiffReport
from xlainspect.analysis.diff import (
    METRICS,
    FunctionDiff,
    Threshold,
    diff_dumps,
    parse_threshold,
    regressions,
    signature_changes,
)
from xlainspect.cli.app import app
from xlainspect.dump.directory import load_dump
from xlainspect.errors import XlaInspectError
from xlainspect.report.document import to_json
from xlainspect.report.views.diff import diff_document, regression_text


def _diff(a: str, b: str, dumps=DUMPS):
    rows = diff_dumps(load_dump(dumps / a), load_dump(dumps / b)).functions
    assert len(rows) == 1
    return rows[0]


def _metrics(row) -> dict[str, tuple]:
    return {m.name: (m.a, m.b, m.delta) for m in row.metrics}


def _cli(*args: str):
    return CliRunner().invoke(app, ["diff", *args])


def test_batch_signature_names_parameters_and_dim_and_bytes_double(jax_version):
    row = _diff("diff_batch_a", "diff_batch_b", jax_version.dumps)
    assert row.name == "jit_train_step" and row.status == "changed"
    changes = {(s.parameter, s.kind): s for s in row.signature}
    assert set(changes) == {("x", "shape"), ("y", "shape")}
    x = changes["x", "shape"]
    assert (x.a, x.b, x.dims) == ("8", "16", (0,))
    assert (x.a_bytes, x.b_bytes) == (256, 512)  # f32[8,8] -> f32[16,8]
    assert (changes["y", "shape"].a_bytes, changes["y", "shape"].b_bytes) == (32, 64)
    metrics = _metrics(row)
    assert metrics["parameter_bytes"] == (324, 612, 288)  # params (32 + 4 bytes) unchanged, x and y double
    assert metrics["peak_memory"] == (396, 748, 352)
    assert metrics["instructions"] == (74, 74, 0)
    assert row.ops == ()  # same program, only the batch differs


def test_remat_recomputes_the_hidden_activation():
    """jax.checkpoint on gelu(x @ w1): the backward pass recomputes gelu's tanh (a second `tanh`, with
    op_name .../checkpoint/rematted_computation/tanh) instead of keeping the f32[16,32] activation, so
    the peak drops by exactly that buffer (16*32*4 = 2048 bytes) and one kLoop fusion fewer is needed."""
    row = _diff("diff_remat_a", "diff_remat_b")
    assert row.status == "changed" and row.signature == ()
    ops = {d.key: (d.a, d.b) for d in row.ops}
    assert ops["tanh"] == (1, 2)
    assert ops["multiply"] == (22, 25)
    assert ops["fusion"] == (10, 9)
    assert {d.key: (d.a, d.b) for d in row.fusion_kinds} == {"kLoop": (7, 6)}
    metrics = _metrics(row)
    assert metrics["instructions"] == (104, 107, 3)
    assert metrics["peak_memory"] == (11268, 9220, -2048)
    assert metrics["parameter_bytes"][2] == 0
    assert metrics["flops"] == (42048, 44096, 2048)  # XLA's count: the recomputed layer's elementwise ops
    assert metrics["roofline_seconds"] == (None, None, None)  # a CPU dump names no roofline chip


def test_roofline_seconds_on_a_chip_and_gate():
    from xlainspect.analysis.chips import get_chip

    (row,) = diff_dumps(
        load_dump(DUMPS / "diff_remat_a"), load_dump(DUMPS / "diff_remat_b"), get_chip("h100")
    ).functions
    a, b, delta = _metrics(row)["roofline_seconds"]
    assert b < a and delta == pytest.approx(b - a)  # one fusion fewer moves fewer bytes than the recompute costs
    result = _cli(
        str(DUMPS / "diff_remat_a"),
        str(DUMPS / "diff_remat_b"),
        "--chip",
        "h100",
        "--fail-on-regression",
        "--max-increase",
        "flops=1%",
    )
    assert result.exit_code == 1 and "flops 42,048 -> 44,096" in result.stderr


def test_sharding_adds_an_all_reduce_and_changes_the_parameter_sharding():
    row = _diff("diff_sharding_a", "diff_sharding_b")
    changes = {(s.parameter, s.kind): s for s in row.signature}
    sharding = changes["x", "sharding"]
    assert (sharding.a, sharding.b) == ("{replicated}", "{devices=[8,1]<=[8]}")
    shape = changes["x", "shape"]
    assert (shape.a, shape.b, shape.a_bytes, shape.b_bytes) == ("64", "8", 4096, 512)  # per-device shard
    assert ("w", "sharding") not in changes
    metrics = _metrics(row)
    assert metrics["collectives"] == (0, 1, 1)
    assert metrics["collective_bytes"] == (0, 32, 32)  # all-reduce of f32[8]
    ops = {d.key: (d.a, d.b) for d in row.ops}
    assert ops["all-reduce"] == (0, 1) and ops["reduce-window"] == (1, 0)


def test_a_dump_against_itself_is_unchanged_and_passes_the_gate(jax_version):
    row = _diff("diff_remat_a", "diff_remat_a", jax_version.dumps)
    assert row.status == "unchanged" and row.ops == () and row.signature == ()
    assert all(m.delta == 0 for m in row.metrics if m.a is not None)
    remat = str(jax_version.dumps / "diff_remat_a")
    result = _cli(remat, remat, "--fail-on-regression")
    assert result.exit_code == 0, result.output


def test_functions_on_one_side_only_are_listed():
    rows = diff_dumps(load_dump(DUMPS / "diff_remat_a"), load_dump(DUMPS / "diff_sharding_b")).functions
    assert [(r.name, r.status) for r in rows] == [("jit_train_step", "only_a"), ("jit_forward", "only_b")]
    forward = _metrics(rows[1])
    assert forward["collectives"] == (None, 1, None)


def test_json_document_shape(jax_version):
    dumps = jax_version.dumps
    result = _cli(str(dumps / "diff_sharding_a"), str(dumps / "diff_sharding_b"), "--format", "json")
    assert result.exit_code == 0, result.output
    function = json.loads(result.stdout)["functions"][0]
    assert function["name"] == "jit_forward" and function["status"] == "changed"
    assert function["metrics"]["collective_bytes"] == {"a": 0, "b": 32, "delta": 32, "change": None}
    assert function["ops"]["all-reduce"] == {"a": 0, "b": 1, "delta": 1}
    assert {
        "kind": "sharding",
        "parameter": "x",
        "a": "{replicated}",
        "b": "{devices=[8,1]<=[8]}",
        "detail": "",
        "reason": None,
        "a_bytes": None,
        "b_bytes": None,
    } in function["signature"]


def test_markdown_has_a_heading_and_metric_table_per_changed_function(jax_version):
    dumps = jax_version.dumps
    result = _cli(str(dumps / "diff_batch_a"), str(dumps / "diff_batch_b"), "--format", "markdown")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "### jit_train_step" in text
    assert "| metric | A | B | delta | change % |" in text
    assert "| peak_memory | 396 | 748 | +352 | +88.9% |" in text
    assert "| x | shape | 8 | 16 | dim 0; 256 -> 512 bytes |" in text


def test_gate_names_each_metric_over_its_threshold(jax_version):
    a, b = str(jax_version.dumps / "diff_sharding_a"), str(jax_version.dumps / "diff_sharding_b")
    result = _cli(a, b, "--fail-on-regression", "--max-increase", "collective_bytes=0", "--max-increase", "fusions=0")
    assert result.exit_code == 1
    assert "jit_forward: collective_bytes 0 -> 32 (+32), over --max-increase collective_bytes=0" in result.stderr
    assert "fusions" not in result.stderr  # 4 -> 3 is a decrease
    assert _cli(a, b, "--fail-on-regression", "--max-increase", "collective_bytes=32").exit_code == 0


def test_relative_and_absolute_thresholds():
    rows = [_diff("diff_batch_a", "diff_batch_b")]  # peak_memory 396 -> 748 (+88.9%)
    assert regressions(rows, [parse_threshold("peak_memory=100%")]) == []
    assert regressions(rows, [parse_threshold("peak_memory=352")]) == []
    assert [regression_text(r) for r in regressions(rows, [parse_threshold("peak_memory=50%")])] == [
        "jit_train_step: peak_memory 396 -> 748 (+88.9%), over --max-increase peak_memory=50%"
    ]
    assert parse_threshold("copies=10%") == Threshold("copies", 10.0, True)


def test_remat_under_jax_0_11_recomputes_the_hidden_layer_with_its_matmul():
    """The diff_remat pair's jax 0.11.2 twin: XLA 0.11's CPU compiler recomputes the checkpointed layer
    with its matmul (one more dot, XNNPACK `__ynn_fusion` fusions) and keeps one f32[16,32] buffer less
    than jax 0.10.2's did (peak -4096 bytes, not -2048): jax compiled differently, the diff reads it."""
    row = _diff("diff_remat_a", "diff_remat_b", JAX011)
    assert row.status == "changed" and row.signature == ()
    ops = {d.key: (d.a, d.b) for d in row.ops}
    assert (ops["tanh"], ops["dot"], ops["multiply"]) == ((1, 2), (5, 6), (22, 25))
    assert "call" not in ops and "fusion" not in ops
    assert {d.key: (d.a, d.b) for d in row.fusion_kinds} == {"__ynn_fusion": (3, 4), "kLoop": (7, 6)}
    metrics = _metrics(row)
    assert metrics["instructions"] == (103, 110, 7)
    assert metrics["peak_memory"] == (11268, 7172, -4096)
    assert metrics["flops"] == (41536, 51776, 10240)


def test_the_same_program_under_jax_0_10_and_0_11_is_unchanged():
    """diff_batch_a against its jax 0.11.2 twin: one program, equal op histograms and metrics."""
    (row,) = diff_dumps(load_dump(DUMPS / "diff_batch_a"), load_dump(JAX011 / "diff_batch_a")).functions
    assert row.status == "unchanged" and row.ops == ()


def test_unknown_metric_is_a_usage_error_listing_the_valid_ones():
    with pytest.raises(XlaInspectError, match="valid metrics: modules, parameter_bytes"):
        parse_threshold("peak_mem=5%")
    result = _cli(str(DUMPS / "diff_batch_a"), str(DUMPS / "diff_batch_b"), "--max-increase", "peak_mem=5%")
    assert result.exit_code == 2
    assert all(metric in result.stderr for metric in METRICS)


def test_two_hlo_files_are_diffed_without_side_files():
    """A lone HLO file has no buffer assignment beside it: peak_memory is unknown (None), not 0."""
    name = "module_0000.jit_train_step.cpu_after_optimizations.txt"
    rows = diff_dumps(load_dump(DUMPS / "diff_batch_a" / name), load_dump(DUMPS / "diff_batch_b" / name)).functions
    assert [(r.name, r.status) for r in rows] == [("jit_train_step", "changed")]
    assert _metrics(rows[0])["peak_memory"] == (None, None, None)
    assert [(s.parameter, s.a, s.b) for s in rows[0].signature] == [("x", "8", "16"), ("y", "8", "16")]


def _damaged_copy(tmp_path, name: str):
    """A copy of a fixture dump whose after-optimizations file is cut short (a killed job)."""
    import shutil

    copy = tmp_path / name
    shutil.copytree(DUMPS / name, copy)
    (after,) = copy.glob("*after_optimizations.txt")
    after.write_bytes(after.read_bytes()[:2000])
    return copy


def test_a_module_that_does_not_parse_is_unknown_never_a_fall(tmp_path):
    damaged = _damaged_copy(tmp_path, "diff_batch_b")
    (row,) = diff_dumps(load_dump(DUMPS / "diff_batch_a"), load_dump(damaged)).functions
    assert (row.status, row.unreadable) == ("unknown", ("B module_0000.jit_train_step",))
    metrics = _metrics(row)
    assert metrics["modules"] == (1, 1, 0)
    assert metrics["instructions"][1:] == (None, None)
    assert metrics["instructions"][0] > 0
    assert row.ops == ()


def test_fail_on_regression_exits_2_naming_the_unknown_function(tmp_path):
    damaged = _damaged_copy(tmp_path, "diff_batch_b")
    result = _cli(str(DUMPS / "diff_batch_a"), str(damaged), "--fail-on-regression")
    assert result.exit_code == 2
    assert "cannot gate: jit_train_step: unknown, B module_0000.jit_train_step did not parse" in result.stderr
    assert "1 functions: 0 changed, 0 unchanged, 0 only in A, 0 only in B, 1 unknown" in result.stdout
    assert "-100" not in result.stdout
    assert _cli(str(DUMPS / "diff_batch_a"), str(damaged)).exit_code == 0


def test_a_forked_worker_sharing_the_modules_gives_the_serial_answer(tmp_path, monkeypatch):
    """Where xlainspect owns the process, a worker analyses some modules of both dumps: the rows, the
    files skipped (a truncated module, a damaged buffer assignment) and their order are the serial run's."""
    import shutil

    from xlainspect import settings
    from xlainspect.analysis import runner

    b = tmp_path / "b"
    shutil.copytree(DUMPS / "tpu_v5e", b)
    hlo = next(b.glob("module_0085.*.after_optimizations.txt"))
    hlo.write_text(hlo.read_text()[:200])
    next(b.glob("module_0219.*.after_optimizations-buffer-assignment.txt")).write_text("garbage\n")

    def run():
        found = diff_dumps(load_dump(DUMPS / "tpu_v5e"), load_dump(b))
        return found.functions, [s.path.name for s in found.skipped_b]

    monkeypatch.setattr(settings, "_cache_enabled", False)  # the worker analyses, not read the first run's facts
    monkeypatch.setattr(settings, "_parse_workers", 1)
    serial = run()
    monkeypatch.setattr(settings, "_parse_workers", 2)
    monkeypatch.setattr(runner, "SHARE_MIN_BYTES", 0)  # the per-module runner's
    monkeypatch.setattr(runner, "SHARE_MIN_MODULES", 0)
    assert run() == serial
    assert [n.split(".")[0] for n in serial[1]] == ["module_0085", "module_0219"]
    assert sorted(row.status for row in serial[0]).count("unknown") == 1  # the truncated module's function


def test_a_signature_is_the_header_and_entry_alone():
    dump = load_dump(DUMPS / "diff_batch_a")
    (module,) = dump.modules
    signature, whole = module.signature(), load_dump(DUMPS / "diff_batch_a").modules[0].module()
    assert [c.name for c in signature.computations] == [whole.entry.name] != [c.name for c in whole.computations]
    assert signature.parameter_shapes == whole.parameter_shapes and signature.name == whole.name
    assert [(p.name, p.op_name) for p in signature.entry.parameters] == [
        (p.name, p.op_name) for p in whole.entry.parameters
    ]
    assert module.signature() is signature and module.module() is module.signature()  # once parsed whole


def _counted_facts(monkeypatch) -> list[str]:
    """The modules `diff_dumps` analyses, serially, caches off (each module's facts computed here)."""
    from xlainspect import settings
    from xlainspect.analysis import diff

    monkeypatch.setattr(settings, "_cache_enabled", False)
    monkeypatch.setattr(settings, "_parse_workers", 1)
    analysed = []
    facts = diff._share_and_peak

    def counted(module, chip):
        analysed.append(module.label)
        return facts(module, chip)

    monkeypatch.setattr(diff, "_share_and_peak", counted)
    return analysed


def test_a_module_equal_in_both_dumps_is_analysed_once(tmp_path, monkeypatch):
    """Two dumps of one program hold mostly the same modules byte for byte, here under other module
    ids: each is analysed once, and the rows are those of analysing every module."""
    import shutil

    from xlainspect.analysis import diff

    b = tmp_path / "b"
    b.mkdir()
    for path in (DUMPS / "tpu_v5e").iterdir():  # a later run: the same compiles, ids shifted by 1000
        if path.is_file():
            shutil.copy(path, b / path.name.replace("module_0", "module_1", 1))
    changed = next(b.glob("module_1085.*.after_optimizations.txt"))
    changed.write_text(changed.read_text() + "\n")  # one module's text differs (a byte)
    modules = len(load_dump(DUMPS / "tpu_v5e").modules)
    analysed = _counted_facts(monkeypatch)
    rows = diff_dumps(load_dump(DUMPS / "tpu_v5e"), load_dump(b)).functions
    assert len(analysed) == modules + 1
    assert sum(label.startswith("module_1085.") for label in analysed) == 1
    monkeypatch.setattr(diff, "_inputs_digest", lambda module: module)  # every module analysed
    assert diff_dumps(load_dump(DUMPS / "tpu_v5e"), load_dump(b)).functions == rows
    assert len(analysed) == 3 * modules + 1


def test_equal_damaged_modules_are_each_skipped_under_their_own_path(tmp_path, monkeypatch):
    """A module that does not parse, byte-identical in both dumps: each dump names its own file. Both
    dumps also hold one readable module (ragged_batch's eval step): a diff of which nothing could be
    read is an input error (tests/test_cli_errors.py)."""
    a, b = _damaged_copy(tmp_path / "a", "diff_batch_a"), _damaged_copy(tmp_path / "b", "diff_batch_a")
    for root in (a, b):
        for path in (DUMPS / "ragged_batch").glob("module_0004.jit_eval_step.*"):
            shutil.copy(path, root / path.name.replace("module_0004", "module_0001"))
    analysed = _counted_facts(monkeypatch)
    dumps = load_dump(a), load_dump(b)
    found = diff_dumps(*dumps)
    row = next(r for r in found.functions if r.name == "jit_train_step")
    assert (row.status, row.unreadable) == ("unknown", ("A module_0000.jit_train_step", "B module_0000.jit_train_step"))
    assert len(analysed) == 3  # the damaged file on each side, the equal eval step once
    assert dumps[0].skipped == dumps[1].skipped == []  # the dumps are not changed: the diff returns its skips
    for (skipped,), root in zip((found.skipped_a, found.skipped_b), (a, b)):
        assert skipped.path.parent == root and str(root) in skipped.reason


def test_csv_is_every_functions_metrics_unchanged_ones_too():
    """`--format csv` (once exit 2): the metrics table, a row per function and metric, as JSON holds them."""
    a, b = str(DUMPS / "ragged_batch"), str(DUMPS / "diff_batch_b")
    result = CliRunner().invoke(app, ["diff", a, b, "--format", "csv"])
    assert result.exit_code == 0, result.output
    header, *rows = [line.split(",") for line in result.stdout.splitlines()]
    assert header == ["function", "status", "metric", "a", "b", "delta", "change"]
    document = json.loads(CliRunner().invoke(app, ["diff", a, b, "--format", "json"]).stdout)
    expected = [
        [f["name"], f["status"], name, *("" if v is None else str(v) for v in values.values())]
        for f in document["functions"]
        for name, values in f["metrics"].items()
    ]
    assert rows == expected
    assert {(r[0], r[1]) for r in rows} == {("jit_train_step", "changed"), ("jit_eval_step", "only_a")}


def test_the_result_and_a_missing_sharding_are_data_the_view_words():
    # sharded_mesh's jit_project, before optimizations: module 6's result is sharded {devices=[2,4]<=[8]},
    # module 8's {replicated}; the analysis says "the result" and "no sharding" as None, the view words them
    dump = load_dump(DUMPS / "sharded_mesh")
    six, eight = (next(m for m in dump.modules if m.module_id == n).module("before") for n in (6, 8))
    change = next(c for c in signature_changes(six, eight) if c.kind == "sharding")
    assert (change.parameter, change.a, change.b) == (None, "{devices=[2,4]<=[8]}", "{replicated}")
    unsharded = dataclasses.replace(change, a=None)  # a side without `sharding=`
    row = FunctionDiff("jit_project", "changed", (), (), (), (), (change, unsharded))
    report = DiffReport(DUMPS / "sharded_mesh", DUMPS / "sharded_mesh", [row], [], [])
    found = json.loads(to_json(diff_document(report)))["functions"][0]["signature"]
    assert [(s["parameter"], s["a"], s["b"]) for s in found] == [
        ("(result)", "{devices=[2,4]<=[8]}", "{replicated}"),
        ("(result)", "(none)", "{replicated}"),
    ]
