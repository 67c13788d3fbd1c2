"""A fresh dump made by the installed jax at test time, through `xlainspect capture`: module counts must
equal jax's own compile counts (`/jax/core/compile/backend_compile_duration` events), so a jax that
changes the dump format or file names is caught."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import REPO

from xlainspect.capture import xla_flags_with_dump
from xlainspect.dump.directory import load_dump

PROGRAM = textwrap.dedent("""
    import collections, json, sys
    import jax, jax.numpy as jnp
    counts = collections.Counter()
    def listen(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            counts[kwargs.get("fun_name", "?")] += 1
    jax.monitoring.register_event_duration_secs_listener(listen)
    step = jax.jit(lambda x: jnp.tanh(x) * 2)
    for n in (4, 8, 4):
        step(jnp.ones((n, 3))).block_until_ready()
    open(sys.argv[1], "w").write(json.dumps(counts))
""")


def _xlainspect(*args: str, **kwargs) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        JAX_PLATFORMS="cpu",
        JAX_ENABLE_COMPILATION_CACHE="false",
        PYTHONPATH=str(REPO),
        XLA_FLAGS="--xla_cpu_enable_fast_min_max=false",
    )
    return subprocess.run(
        [sys.executable, "-m", "xlainspect", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        **kwargs,
    )


def test_xla_flags_keep_the_users_flags(tmp_path):
    assert xla_flags_with_dump("--xla_foo=1 --xla_dump_to=/old", tmp_path) == f"--xla_foo=1 --xla_dump_to={tmp_path}"


def test_capture_counts_equal_jax_compile_events(tmp_path):
    pytest.importorskip("jax")
    reported_file = tmp_path / "reported.json"
    done = _xlainspect(
        "capture",
        "--dump-dir",
        str(tmp_path / "dump"),
        "--format",
        "json",
        "--",
        sys.executable,
        "-c",
        PROGRAM,
        str(reported_file),
    )
    assert done.returncode == 0, done.stderr
    reported = json.loads(reported_file.read_text())
    report = json.loads(done.stdout)
    assert report["total_modules"] == sum(reported.values())
    counts = {name: len(modules) for name, modules in load_dump(tmp_path / "dump").functions().items()}
    assert counts["jit__lambda"] == 2  # n=4 and n=8; the second n=4 call hits jax's cache
    (step,) = [f for f in report["functions"] if f["name"] == "jit__lambda"]
    assert [(c["kind"], c["values"]) for c in step["causes"]] == [("shape", [4, 8])]
    assert "xla_cpu_enable_fast_min_max" in next((tmp_path / "dump").glob("*.debug_options")).read_text()


def test_capture_passes_the_exit_status_on(tmp_path):
    done = _xlainspect("capture", "--dump-dir", str(tmp_path), "--", sys.executable, "-c", "import sys; sys.exit(3)")
    assert done.returncode == 3
    assert "no XLA dump files" in done.stderr


def test_capture_without_dump_dir_keeps_the_dump_and_gates_like_count_recompiles(tmp_path, monkeypatch):
    pytest.importorskip("jax")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    done = _xlainspect(
        "capture", "--max", "jit__lambda=1", "--ignore-eager", "--", sys.executable, "-c", PROGRAM, os.devnull
    )
    assert done.returncode == 1
    (kept,) = tmp_path.glob("xlainspect-dump-*")
    assert f"dump kept in {kept} (--dump-dir chooses where)" in done.stderr
    assert "over budget: jit__lambda compiled 2 times, budget 1 (--max jit__lambda)" in done.stderr
    assert len(load_dump(kept).functions()["jit__lambda"]) == 2


def test_capture_rejects_a_malformed_budget_before_running(tmp_path):
    done = _xlainspect("capture", "--dump-dir", str(tmp_path / "d"), "--max", "jit_f", "--", sys.executable, "-c", "")
    assert done.returncode == 2 and "--max jit_f: expected NAME=N" in done.stderr
    assert not (tmp_path / "d").exists()
