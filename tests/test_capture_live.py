"""A fresh dump made by the installed jax at test time: module counts must equal jax's own compile counts
(`/jax/core/compile/backend_compile_duration` events), so a jax that changes the dump format is caught."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from xlainspect.dump import load_dump

pytest.importorskip("jax")

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
    print(json.dumps(counts))
""")


def test_live_dump_counts_equal_jax_compile_events(tmp_path):
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=f"--xla_dump_to={tmp_path}",
               JAX_ENABLE_COMPILATION_CACHE="false")
    done = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    reported = json.loads(done.stdout.strip().splitlines()[-1])
    dump = load_dump(tmp_path)
    counts = {name: len(modules) for name, modules in dump.functions().items()}
    assert sum(counts.values()) == sum(reported.values())
    assert counts["jit__lambda"] == 2  # n=4 and n=8; the second n=4 call hits the cache
