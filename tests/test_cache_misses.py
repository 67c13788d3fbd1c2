"""`xlainspect cache-misses A B` on the real runs of fixtures/cache/runs, and live: runs made by the
installed jax through `xlainspect capture` sharing one cache directory."""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest
from conftest import FIXTURES, REPO
from typer.testing import CliRunner

from xlainspect.analysis.cache_misses import cache_misses
from xlainspect.analysis.commands.cache import cache_misses_report
from xlainspect.capture import Hidden, _tee, child_env
from xlainspect.cli.app import app
from xlainspect.dump.jaxlog import DEBUG_LOG_MODULES, read_jax_log
from xlainspect.report.views.cache import miss_detail, miss_record

RUNS = FIXTURES / "cache" / "runs"
runner = CliRunner()
FLAG = "--xla_cpu_enable_fast_math=true"


def _rows(a: str, b: str) -> dict:
    """Per function, its row with the detail as the command words it."""
    return {
        r.name: SimpleNamespace(**miss_record(r)) for r in cache_misses(read_jax_log(RUNS / a), read_jax_log(RUNS / b))
    }


def _summary(rows: dict) -> dict:
    return {name: (r.status, r.changed) for name, r in rows.items()}


def test_repeat_hits_but_custom_partitioning_misses_every_run():
    assert _summary(_rows("1_cold", "2_repeat")) == {
        "jit_train_step": ("hit", ()),
        "jit_predict": ("hit", ()),
        "jit_deep": ("hit", ()),
        "jit_scaled": ("miss", ("computation",)),
    }  # jax #21159: the callback pointer is in the computation


def test_added_flag_is_named():
    rows = _rows("2_repeat", "3_flag")
    assert rows["jit_train_step"].changed == ("XLA flags", "compile_options")
    assert {r.status for r in rows.values()} == {"miss"}
    assert rows["jit_deep"].detail.startswith(f"XLA flags: added {FLAG}; compile_options changed")
    assert rows["jit_predict"].detail.startswith("2 compiles: 2 miss; XLA flags: added")
    predict = _rows("3_flag", "4_constant")["jit_predict"]  # the flag dropped and the constant changed
    assert predict.changed == ("computation", "XLA flags", "compile_options")
    assert f"XLA flags: removed {FLAG}" in predict.detail


def test_changed_constant_is_computation_for_that_function_alone():
    assert _summary(_rows("2_repeat", "4_constant")) == {
        "jit_train_step": ("hit", ()),
        "jit_predict": ("miss", ("computation",)),
        "jit_deep": ("hit", ()),
        "jit_scaled": ("miss", ("computation",)),
    }


def test_zlib_instead_of_zstandard_is_compression():
    rows = _rows("4_constant", "5_zlib")
    assert rows["jit_train_step"].changed == ("compression",)
    assert rows["jit_deep"].changed == ("compression",)


def test_not_written_says_why_and_new_functions_say_so():
    rows = _rows("2_repeat", "6_threshold")
    assert rows["jit_evaluate"].status == "not written" and rows["jit_evaluate"].changed == ()
    assert rows["jit_evaluate"].detail.startswith("not compiled in A; not written: it took < 1.00 seconds")
    assert rows["jit_scaled"].status == "not written" and rows["jit_scaled"].changed == ("computation",)


def test_same_key_as_a_means_the_entry_is_gone():
    assert _rows("1_cold", "1_cold")["jit_deep"].detail.startswith("same key as in A, which wrote it")


def test_runs_given_the_other_way_round_name_the_cold_run():
    """B = 1_cold wrote the entries A = 2_repeat hit (by the logs' times, later): B ran first, its misses
    are the cold start, not an eviction. jit_scaled's key changed (jax #21159): A hit nothing B wrote."""
    rows = _rows("2_repeat", "1_cold")
    for name in ("jit_train_step", "jit_predict", "jit_deep"):
        assert rows[name].detail.endswith(
            "same key as in A, where it was a hit of the entry B wrote: B ran before A (the cold run)"
        )
        assert "eviction" not in rows[name].detail and rows[name].earlier
    assert not rows["jit_scaled"].earlier and rows["jit_scaled"].changed == ("computation",)
    assert not any(r.earlier for r in _rows("1_cold", "2_repeat").values())
    result = runner.invoke(app, ["cache-misses", str(RUNS / "2_repeat"), str(RUNS / "1_cold")])
    assert result.exit_code == 0
    cold, repeat = RUNS / "1_cold", RUNS / "2_repeat"
    assert f"{cold} ran before {repeat} ({repeat} hit entries {cold} wrote): give the earlier run first" in (
        result.stderr
    )


def test_without_times_a_key_b_wrote_and_a_hit_names_both_readings():
    """The same logs read without their `asctime` (a logging format that has none): which run came first
    is not known, so the cold start and the eviction are both named, and `earlier` stays false."""
    untimed = [read_jax_log(RUNS / run) for run in ("2_repeat", "1_cold")]
    for log in untimed:
        log.compiles = [dataclasses.replace(c, finished_at=None) for c in log.compiles]
    rows = {r.name: r for r in cache_misses(*untimed)}
    assert miss_detail(rows["jit_deep"]) == (
        "same key as in A, where it was a hit, and B wrote it: B ran before A (the cold run), or the entry was "
        "removed since (eviction?) and B wrote it again"
    )
    assert not any(r.earlier for r in rows.values())


def test_cli_json_and_bad_input():
    result = runner.invoke(app, ["cache-misses", str(RUNS / "2_repeat"), str(RUNS / "3_flag"), "--format", "json"])
    assert result.exit_code == 0, result.output
    functions = json.loads(result.stdout)["functions"]
    assert [set(f) for f in functions][0] == {"name", "status", "changed", "detail", "earlier"}
    missing = runner.invoke(app, ["cache-misses", str(RUNS / "2_repeat"), str(RUNS / "nope")])
    assert missing.exit_code == 2 and "no jax log" in missing.output and "Traceback" not in missing.output


def test_capture_asks_for_the_five_loggers_and_the_explanations_only():
    env, hidden = child_env({"XLA_FLAGS": "--xla_foo=1"}, RUNS)
    assert env["JAX_DEBUG_LOG_MODULES"] == ",".join(DEBUG_LOG_MODULES) and env["JAX_LOGGING_LEVEL"] == "WARNING"
    assert env["JAX_EXPLAIN_CACHE_MISSES"] == "1"
    assert hidden == Hidden(frozenset(DEBUG_LOG_MODULES), explanations=True)
    env, hidden = child_env({"JAX_DEBUG_LOG_MODULES": "jax._src.compiler", "JAX_LOGGING_LEVEL": "INFO"}, RUNS)
    assert env["JAX_DEBUG_LOG_MODULES"].startswith("jax._src.compiler,jax._src.cache_key")
    assert env["JAX_LOGGING_LEVEL"] == "INFO" and "jax._src.compiler" not in hidden.loggers
    env, hidden = child_env({"JAX_LOGGING_LEVEL": "DEBUG", "JAX_EXPLAIN_CACHE_MISSES": "0"}, RUNS)
    assert "JAX_DEBUG_LOG_MODULES" not in env and hidden == Hidden()
    assert env["JAX_EXPLAIN_CACHE_MISSES"] == "0"  # the user's own choice, shown as they asked


def test_capture_keeps_jax_explanations_off_the_terminal_unless_asked(monkeypatch):
    lines = [
        b"WARNING:2026-11-28 23:37:58,874:jax._src.interpreters.partial_eval:2167: TRACING CACHE MISS at a.py:18:\n",
        b"  never seen function:\n",
        b"    <lambda> id=1 defined at a.py:18\n",
        b"  indented output of the program's own\n",
        b"WARNING:2026-11-28 23:37:58,875:jax._src.compiler:131: PERSISTENT COMPILATION CACHE MISS for 'jit_f'\n",
        b"WARNING:2026-11-28 23:37:58,876:jax._src.compiler:9: something else jax warns about\n",
        b"loss 0.5\n",
    ]
    for hidden, shown_lines in (
        (Hidden(explanations=True), [lines[5], lines[6]]),
        (Hidden(), lines),
    ):
        shown = io.BytesIO()
        monkeypatch.setattr(sys, "stderr", type("Err", (), {"buffer": shown})())
        log = io.BytesIO()
        _tee(io.BytesIO(b"".join(lines)), log, hidden)
        assert log.getvalue() == b"".join(lines)
        assert shown.getvalue() == b"".join(shown_lines)


def test_capture_keeps_the_whole_log_and_shows_the_rest(monkeypatch):
    # The first lines of a real log (each jax record twice), then a line of the program's own.
    text = gzip.decompress((RUNS / "1_cold" / "jax.log.gz").read_bytes())
    lines = text.splitlines(keepends=True)[:12] + [b"epoch 1: 50%\r100%\r\n", b"done"]
    shown = io.BytesIO()
    monkeypatch.setattr(sys, "stderr", type("Err", (), {"buffer": shown})())
    log = io.BytesIO()
    _tee(io.BytesIO(b"".join(lines)), log, Hidden(frozenset(DEBUG_LOG_MODULES), explanations=True))
    assert log.getvalue() == b"".join(lines)
    assert shown.getvalue() == b"epoch 1: 50%\r100%\r\ndone"


PROGRAM = textwrap.dedent("""
    import sys
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_compilation_cache_dir", sys.argv[1])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    SCALE = float(sys.argv[2])

    @jax.jit
    def step(x):
        return jnp.tanh(x) * SCALE

    @jax.jit
    def loss(x):
        return jnp.sum(x * x)

    x = np.ones((4, 3), np.float32)
    step(x), loss(x)
    print("done", file=sys.stderr)
""")


def test_live_runs_sharing_one_cache(tmp_path):
    pytest.importorskip("jax")
    cache_dir = tmp_path / "cache"

    def capture(run: str, scale: str, flags: str = "") -> subprocess.CompletedProcess:
        env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(REPO), XLA_FLAGS=flags)
        for name in ("JAX_LOGGING_LEVEL", "JAX_DEBUG_LOG_MODULES", "JAX_ENABLE_COMPILATION_CACHE"):
            env.pop(name, None)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "xlainspect",
                "capture",
                "--dump-dir",
                str(tmp_path / run),
                "--",
                sys.executable,
                "-c",
                PROGRAM,
                str(cache_dir),
                scale,
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
        )
        assert done.returncode == 0, done.stderr
        return done

    first = capture("cold", "2.0")
    assert "done" in first.stderr and "get_cache_key" not in first.stderr  # the user's stderr, not ours
    capture("flag", "2.0", FLAG)
    capture("constant", "3.0")
    cold = read_jax_log(tmp_path / "cold")
    flag = cache_misses(cold, read_jax_log(tmp_path / "flag"))
    assert [(r.name, r.status, r.changed) for r in flag] == [
        ("jit_step", "miss", ("XLA flags", "compile_options")),
        ("jit_loss", "miss", ("XLA flags", "compile_options")),
    ]
    assert all(f"added {FLAG}" in miss_detail(r) for r in flag)
    constant = cache_misses(cold, read_jax_log(tmp_path / "constant"))
    assert [(r.name, r.status, r.changed) for r in constant] == [
        ("jit_step", "miss", ("computation",)),
        ("jit_loss", "hit", ()),
    ]
    result = runner.invoke(app, ["cache", str(cache_dir), "--format", "json"])
    assert {f["name"]: f["entries"] for f in json.loads(result.stdout)["functions"]} == {"jit_step": 3, "jit_loss": 2}
    seconds = runner.invoke(app, ["count-recompiles", str(tmp_path / "constant"), "--format", "json"])
    # XLA dumps the executable a hit loads too (after_optimizations.txt): both pair with the log
    functions = {f["name"]: f for f in json.loads(seconds.stdout)["functions"]}
    assert {n: f["cache"] for n, f in functions.items()} == {"jit_step": ["written"], "jit_loss": ["hit"]}
    assert json.loads(seconds.stdout)["not_paired"] == []


def test_custom_partitioning_is_named_from_the_dump():
    result = runner.invoke(app, ["cache-misses", str(RUNS / "2_repeat"), str(RUNS / "4_constant"), "--format", "json"])
    details = {f["name"]: f["detail"] for f in json.loads(result.stdout)["functions"]}
    # jit_scaled's before_optimizations HLO has custom_call_target="CustomSPMDPartitioning"; jit_predict's not
    assert details["jit_scaled"].startswith("computation changed: it calls custom_partitioning")
    assert "jax #21159" in details["jit_scaled"]
    assert details["jit_predict"] == "2 compiles: 2 miss; computation changed"
    lone_log = runner.invoke(
        app,
        [
            "cache-misses",
            str(RUNS / "2_repeat" / "jax.log.gz"),
            str(RUNS / "4_constant" / "jax.log.gz"),
            "--format",
            "json",
        ],
    )
    assert "jax #21159" not in lone_log.stdout  # no dump beside a lone log: nothing to look into


def test_an_unreadable_hlo_file_of_b_is_named_not_read_as_no_custom_partitioning(tmp_path):
    """B's dump holds jit_scaled's program, damaged: its detail cannot say custom_partitioning, and the
    file is named on stderr with its reason (it was read as "no custom_partitioning" silently)."""
    b = tmp_path / "4_constant"
    shutil.copytree(RUNS / "4_constant", b)
    damaged = b / "module_0012.jit_scaled.before_optimizations.txt.gz"
    damaged.write_bytes(damaged.read_bytes()[:40])
    result = runner.invoke(app, ["cache-misses", str(RUNS / "2_repeat"), str(b), "--format", "json"])
    assert result.exit_code == 0
    details = {f["name"]: f["detail"] for f in json.loads(result.stdout)["functions"]}
    assert details["jit_scaled"] == "computation changed"
    assert f"skipped {damaged}: " in result.stderr
    assert [s.path for s in cache_misses_report(RUNS / "2_repeat", b).skipped] == [damaged]
