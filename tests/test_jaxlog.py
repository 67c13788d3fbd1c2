"""jax's compile log (the jax.log capture saves) read back, and its seconds paired with the dump's modules.
The logs are the real ones of fixtures/cache/runs (fixtures/generate.py cache_runs, saved by capture)."""

from __future__ import annotations

import gzip
import json
import shutil
from datetime import datetime

import pytest
from conftest import DUMPS, FIXTURES
from typer.testing import CliRunner

from xlainspect.analysis.compile_times import Unpaired, compile_times
from xlainspect.cli.app import app
from xlainspect.dump.directory import load_dump
from xlainspect.dump.jaxlog import COMPONENTS, module_name, parse_jax_log, read_jax_log
from xlainspect.errors import DumpError
from xlainspect.report.views.compiles import unpaired_text

RUNS = FIXTURES / "cache" / "runs"
runner = CliRunner()


def _text(run: str) -> str:
    return gzip.decompress((RUNS / run / "jax.log.gz").read_bytes()).decode()


def test_cold_run_compiles_in_order_with_all_components():
    log = read_jax_log(RUNS / "1_cold")
    assert [(c.module, c.fun_name, c.cache) for c in log.compiles] == [
        ("jit_train_step", "jit(train_step)", "written"),
        ("jit_predict", "jit(predict)", "written"),
        ("jit_predict", "jit(predict)", "written"),
        ("jit_deep", "jit(deep)", "written"),
        ("jit_scaled", "jit(scaled)", "written"),
    ]
    assert all(tuple(c.components) == COMPONENTS for c in log.compiles)
    # every flag of this run is one jax leaves out of the key (dump flags, the CPU device count)
    assert all(c.xla_flags == () for c in log.compiles)
    assert all(c.key.startswith(f"{c.module}-") and len(c.key) == len(c.module) + 65 for c in log.compiles)


def test_each_line_printed_twice_counts_once():
    text = _text("1_cold")
    finished = [line for line in text.splitlines() if "Finished XLA compilation" in line]
    assert len(finished) == 10  # JAX_DEBUG_LOG_MODULES beside JAX_LOGGING_LEVEL: two handlers per record
    assert len(parse_jax_log(text)) == 5


def test_hits_flags_and_not_written():
    repeat = read_jax_log(RUNS / "2_repeat").compiles
    assert [(c.module, c.cache) for c in repeat] == [
        ("jit_train_step", "hit"),
        ("jit_predict", "hit"),
        ("jit_predict", "hit"),
        ("jit_deep", "hit"),
        ("jit_scaled", "written"),
    ]
    assert {c.xla_flags for c in read_jax_log(RUNS / "3_flag").compiles} == {("--xla_cpu_enable_fast_math=true",)}
    threshold = {c.module: c for c in read_jax_log(RUNS / "6_threshold").compiles}
    assert threshold["jit_evaluate"].cache == "not written"
    assert threshold["jit_evaluate"].why_not_written.startswith("it took < 1.00 seconds to compile (")


def test_log_compiles_lines_alone_give_seconds_without_cache():
    # The "Finished XLA compilation" lines of the real log: what JAX_LOG_COMPILES=1 prints (at WARNING)
    lines = "\n".join(line for line in _text("1_cold").splitlines() if "Finished XLA compilation" in line)
    compiles = parse_jax_log(lines)
    assert [(c.module, c.cache, c.key) for c in compiles][:2] == [
        ("jit_train_step", "off", None),
        ("jit_predict", "off", None),
    ]
    assert [c.seconds for c in compiles] == [c.seconds for c in read_jax_log(RUNS / "1_cold").compiles]


def test_module_name_follows_jax():
    assert module_name("jit(<lambda>)") == "jit__lambda"
    assert module_name("jit(train_step)") == "jit_train_step"


def test_no_compiles_is_an_input_error(tmp_path):
    (tmp_path / "jax.log").write_bytes(b"\x00\xff not a log\n")
    with pytest.raises(DumpError, match="no compiles in this log"):
        read_jax_log(tmp_path)
    with pytest.raises(DumpError, match="no jax log"):
        read_jax_log(tmp_path / "elsewhere")


def test_seconds_pair_with_the_dump_in_order():
    log = read_jax_log(RUNS / "1_cold")
    times = compile_times(load_dump(RUNS / "1_cold"), log)
    assert times.unpaired == []
    seconds = [c.seconds for c in log.compiles]
    assert times.functions["jit_predict"].seconds == (seconds[1], seconds[2])
    assert times.functions["jit_predict"].recompile_seconds == seconds[2]
    assert times.recompile_seconds == seconds[2]  # the only function compiled twice
    assert times.functions["jit_deep"].seconds[0] > 1  # it stored 1 s in the cache


def test_a_function_the_log_does_not_time_has_unknown_seconds_not_zero():
    # eager_flood's functions are none of 1_cold's: each compile is unpaired, its time unknown
    times = compile_times(load_dump(DUMPS / "eager_flood"), read_jax_log(RUNS / "1_cold"))
    assert times.functions["jit_stage"].seconds == (None, None)
    assert times.functions["jit_stage"].total_seconds is None
    assert times.functions["jit_stage"].recompile_seconds is None
    assert times.total_seconds is None
    out = CliRunner().invoke(app, ["count-recompiles", str(DUMPS / "eager_flood"), "--log", str(RUNS / "1_cold")])
    assert "compile seconds unknown (no compile of the log pairs with the dump's)" in out.stdout
    assert "0.00 s" not in out.stdout
    rows = json.loads(
        CliRunner()
        .invoke(
            app, ["count-recompiles", str(DUMPS / "eager_flood"), "--log", str(RUNS / "1_cold"), "--format", "json"]
        )
        .stdout
    )
    assert {f["name"]: f["seconds"] for f in rows["functions"]}["jit_stage"] is None
    assert rows["recompile_seconds"] is None


def test_hits_pair_with_the_executables_xla_dumped():
    # a hit leaves module_N.jit_f.after_optimizations.txt (the loaded executable) and debug_options
    times = compile_times(load_dump(RUNS / "2_repeat"), read_jax_log(RUNS / "2_repeat"))
    assert {n: f.cache for n, f in times.functions.items()} == {
        "jit_train_step": ("hit",),
        "jit_predict": ("hit", "hit"),
        "jit_deep": ("hit",),
        "jit_scaled": ("written",),
    }
    assert times.unpaired == []


def test_a_log_of_another_run_says_what_does_not_pair():
    log = read_jax_log(RUNS / "6_threshold")
    found = compile_times(load_dump(RUNS / "1_cold"), log)
    assert found.unpaired == [Unpaired("jit_evaluate", 0, 1)]
    assert unpaired_text(found) == [f"jit_evaluate: 1 compile(s) in the log {log.path}, none in the dump"]
    other = read_jax_log(RUNS / "1_cold")
    times = compile_times(load_dump(DUMPS / "ragged_batch"), other)
    assert times.unpaired[0] == Unpaired("jit_train_step", 2, 1)
    assert unpaired_text(times)[0] == (
        f"jit_train_step: 2 compile(s) in the dump, 1 in the log {other.path}; the first 1 paired in order"
    )
    assert times.functions["jit_train_step"].seconds == (other.compiles[0].seconds, None)


def test_count_recompiles_and_modules_show_seconds():
    seconds = [c.seconds for c in read_jax_log(RUNS / "1_cold").compiles]
    result = runner.invoke(app, ["count-recompiles", str(RUNS / "1_cold"), "--format", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    predict = next(f for f in document["functions"] if f["name"] == "jit_predict")
    assert predict["compile_seconds"] == seconds[1:3] and predict["recompile_seconds"] == seconds[2]
    assert document["recompile_seconds"] == seconds[2] and document["not_paired"] == []
    modules = runner.invoke(app, ["modules", str(RUNS / "1_cold"), "--format", "json"])
    assert [m["seconds"] for m in json.loads(modules.stdout)] == seconds


def test_log_option_and_unpaired_note(tmp_path):
    dump = tmp_path / "dump"
    shutil.copytree(DUMPS / "ragged_batch", dump)
    plain = runner.invoke(app, ["modules", str(dump), "--format", "json"])
    assert "seconds" not in json.loads(plain.stdout)[0]
    result = runner.invoke(app, ["count-recompiles", str(dump), "--log", str(RUNS / "2_repeat" / "jax.log.gz")])
    assert result.exit_code == 0
    assert "not paired: jit_train_step: 2 compile(s) in the dump, 1 in the log" in result.output
    assert "not paired: jit_scaled: 1 compile(s) in the log" in result.output


def test_a_saved_log_without_compiles_means_no_times(tmp_path):
    dump = tmp_path / "dump"
    shutil.copytree(DUMPS / "clean_run", dump)
    (dump / "jax.log").write_text("epoch 1: loss 0.5\n")  # capture of a run whose stderr had no jax lines
    plain = runner.invoke(app, ["count-recompiles", str(dump), "--format", "json"])
    assert plain.exit_code == 0 and "recompile_seconds" not in json.loads(plain.stdout)
    given = runner.invoke(app, ["count-recompiles", str(dump), "--log", str(dump / "jax.log")])
    assert given.exit_code == 2 and "no compiles in this log" in given.output


def test_a_folder_with_one_log_of_another_name(tmp_path):
    (tmp_path / "run.log").write_bytes(gzip.decompress((RUNS / "3_flag" / "jax.log.gz").read_bytes()))
    assert len(read_jax_log(tmp_path).compiles) == 5
    (tmp_path / "other.log").write_text("")
    with pytest.raises(DumpError, match="no jax log"):
        read_jax_log(tmp_path)


@pytest.mark.parametrize(
    "run", json.loads((FIXTURES / "cache" / "runs.json").read_text())["runs"], ids=lambda run: run["name"]
)
def test_log_agrees_with_jax_own_events(run):
    # jax's monitoring events in the same process: one compile event per request (hits too), a cache_hits
    # event per hit, a cache_misses event per entry written
    compiles = read_jax_log(RUNS / run["name"]).compiles
    counted = {}
    for compile_ in compiles:
        counted[compile_.module] = counted.get(compile_.module, 0) + 1
    assert counted == run["backend_compile_events"]
    events = run["events"]
    assert sum(c.cache == "hit" for c in compiles) == events.get("/jax/compilation_cache/cache_hits", 0)
    assert sum(c.cache == "written" for c in compiles) == events.get("/jax/compilation_cache/cache_misses", 0)


def test_a_compile_ends_at_its_lines_time():
    """The log format of jax puts `asctime` before each message (jax/_src/logging_config.py)."""
    (timed,) = parse_jax_log(
        "DEBUG:2026-11-26 14:20:47,218:jax._src.dispatch:204: Finished XLA compilation of jit(stage) in 0.28 sec\n"
    )
    (untimed,) = parse_jax_log("Finished XLA compilation of jit(stage) in 0.28 sec\n")
    assert timed.finished_at - datetime(2026, 11, 26, 14, 20, 47).timestamp() == pytest.approx(0.218)
    assert untimed.finished_at is None
