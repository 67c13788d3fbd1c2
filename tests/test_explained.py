"""Recompiles the HLO cannot tell apart, named from jax's log that `capture` keeps: the programs of jax's
own cache-miss tests (fixtures/explained, `python fixtures/generate.py explained`), on jax 0.10.2 and 0.11.2."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from xlainspect.analysis.commands.compiles import recompiles_report
from xlainspect.dump.jaxlog import parse_jax_log, read_jax_log
from xlainspect.report.causes import describe_cause, jax_said

EXPLAINED = Path(__file__).parent.parent / "fixtures" / "explained"
VERSIONS = ("jax0102", "jax0112")


def _rows(version: str):
    return {(r.name, r.eager): r for r in recompiles_report(EXPLAINED / version).functions}


@pytest.mark.parametrize("version", VERSIONS)
def test_each_recompile_names_the_cause_jax_knows(version):
    rows = _rows(version)

    def said(name: str) -> list[str]:
        return [describe_cause(c) for c in rows[name, False].causes]

    assert said("jit_shaped") == ["shape y['hi'] dim 0: 3 -> 4"]
    assert said("jit_weak_type") == ["weak type x: a Python float where a float32 array was"]
    assert said("jit_keyword_call") == ["pytree y: passed as a keyword argument where it was positional"]
    assert said("jit_tracing_context") == [
        "context jax_numpy_rank_promotion: allow -> warn (a config option or context manager)"
    ]
    (lambda_,) = said("jit__lambda")
    assert lambda_.startswith("new function defined at fixtures/generate.py:")
    assert lambda_.endswith(": a new function object on every call (jax.jit(lambda ...) or a def in a loop)")
    assert said("jit_unused") == ["pytree args[1]: key 'lo' added (jit drops an unused one: the program is the same)"]
    assert rows["jit_nested", False].modules == 1  # a nested jit compiles inside its caller: no recompile
    assert rows["jit_add", True].modules == 1  # jax.jit(operator.add): a built-in, no source; no crash


def test_a_static_argument_that_changes_nothing():
    assert [describe_cause(c) for c in _rows("jax0102")["jit_static_value", False].causes] == [
        "static argument args[1]: 1 -> 2 (the program is the same: jax keys its cache on a static argument's value)"
    ]
    # jax 0.11.2 says "cache miss explanation unavailable" for it: the HLO's identical stays, jax quoted
    row = _rows("jax0112")["jit_static_value", False]
    assert [c.kind for c in row.causes] == ["identical"]
    assert jax_said(row) == ["jax, compile 2: cache miss explanation unavailable"]


@pytest.mark.parametrize("version", VERSIONS)
def test_jax_explanation_is_quoted_beside_ours(version):
    rows = _rows(version)
    assert jax_said(rows["jit_weak_type", False]) == [
        "jax, compile 2: different input types: * at x, now f32[]{weak_type=True} and before f32[]{weak_type=False}"
    ]
    assert jax_said(rows["jit_shaped", False]) == [
        "jax, compile 2: different input types: * at y['hi'], now f32[4] and before f32[3]"
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_jnp_functions_jax_jits_itself_are_eager(version):
    rows = _rows(version)
    assert rows["jit_real", True].modules == 2  # jnp.real of a real array: `val` returned, nothing computed
    assert rows["jit__mean", True].modules == 2
    assert ("jit_real", False) not in rows and ("jit__mean", False) not in rows


@pytest.mark.parametrize("version", VERSIONS)
def test_capture_kept_the_explanations_off_the_terminal(version):
    truth = json.loads((EXPLAINED / version / "truth.json").read_text())
    assert truth["terminal"] == []
    log = gzip.decompress((EXPLAINED / version / "jax.log.gz").read_bytes()).decode()
    assert "TRACING CACHE MISS" in log and "with global shapes and types" in log


def test_without_the_log_identical_says_what_it_cannot_tell_apart(tmp_path):
    for path in (EXPLAINED / "jax0102").glob("module_*jit_weak_type*"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    (row,) = recompiles_report(tmp_path).functions
    (text,) = [describe_cause(c) for c in row.causes]
    assert "a weak type, a pytree jax prunes to the same program (an unused key, a keyword call)" in text
    assert text.endswith("jax's log says which: xlainspect capture -- python train.py")


def test_a_damaged_line_is_left_out_with_why(tmp_path):
    text = gzip.decompress((EXPLAINED / "jax0102" / "jax.log.gz").read_bytes()).decode()
    cut = text.replace("(ShapedArray(float32[]), ShapedArray(float32[4]))", "(ShapedArray(float32[]), ShapedArr", 1)
    cut = cut.replace("\n  for shaped defined at", "\n", 1)
    damaged: list[str] = []
    compiles = parse_jax_log(cut, damaged)
    assert len(compiles) == len(parse_jax_log(text))
    assert [d.split(": ", 1)[1][:40] for d in damaged] == [
        "a cache-miss explanation naming no funct",
        "argument types not read: '(ShapedArray(f",
    ]
    (tmp_path / "jax.log").write_text(cut)
    assert read_jax_log(tmp_path).damaged == damaged
