"""The pytest plugin (`pytest --xla-dump`, the `xla_compiles` fixture, the `max_compiles` marker), run by
`pytester` in fresh pytest processes that compile real jax functions on CPU: XLA reads XLA_FLAGS once
per process, so each run needs its own interpreter."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from xlainspect.cli.app import app

pytest.importorskip("jax")

STEP = """
import numpy as np
import jax
import pytest

@jax.jit
def train_step(x):
    return (x * 2.0).sum()

def batch(n):
    return np.ones((n, 4), np.float32)  # numpy inputs: no eager jax op is compiled besides train_step
"""


@pytest.fixture(autouse=True)
def _not_an_xdist_worker(monkeypatch: pytest.MonkeyPatch):
    """The inner pytest runs alone: under `pytest -n`, the worker's PYTEST_XDIST_WORKER would make the
    plugin put the inner run's dump in a per-worker subfolder."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


def test_fixture_counts_this_tests_compiles_and_says_why(pytester: pytest.Pytester):
    pytester.makepyfile(
        STEP
        + """
def test_ragged(xla_compiles):
    train_step(batch(8)); train_step(batch(8)); train_step(batch(5))
    assert xla_compiles.functions() == {"jit_train_step": 2}
    assert xla_compiles.count("jit_train_step") == 2 and xla_compiles.count("train_step") == 2
    (row,) = xla_compiles.recompiles()
    assert row.modules == 2 and [c.kind for c in row.causes] == ["shape"]
    assert row.causes[0].parameter == "x" and row.causes[0].dims == (0,)
    assert "shape x dim 0: 8 -> 5" in xla_compiles.explain()

def test_cached_function_is_not_compiled_again(xla_compiles):
    train_step(batch(8))
    assert xla_compiles.count("jit_train_step") == 0 and xla_compiles.functions() == {}
"""
    )
    result = _run(pytester, "--xla-dump")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["xla dump: *xla-dump-*"])


def test_marker_fails_with_the_count_recompiles_explanation(pytester: pytest.Pytester, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # the inner session is no xdist worker of ours
    pytester.makepyfile(
        STEP
        + """
@pytest.mark.max_compiles(jit_train_step=1)
def test_over_budget():
    train_step(batch(8)); train_step(batch(16))

@pytest.mark.max_compiles(jit_train_step=2, total=2)
def test_within_budget():
    train_step(batch(3)); train_step(batch(4))

@pytest.mark.max_compiles(total=1)
def test_total_over_budget():
    train_step(batch(30)); jax.jit(lambda x: x + 1)(batch(1))
"""
    )
    result = _run(pytester, f"--xla-dump={pytester.path / 'dump'}")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*max_compiles(jit_train_step=1) exceeded:",
            "*jit_train_step compiled 2 times, budget 1 (max_compiles jit_train_step)",
            "*why (count-recompiles):",
            "*jit_train_step: 2 compiles*",
            "*why: shape x dim 0: 8 -> 16",
        ]
    )
    result.stdout.fnmatch_lines(["*max_compiles(total=1) exceeded:", "*2 compiles in total, budget 1*"])
    assert any((pytester.path / "dump").glob("module_*.jit_train_step.*after_optimizations.txt"))


def test_a_budget_naming_no_function_fails_as_count_recompiles_max_does(pytester: pytest.Pytester):
    """A misspelt name (`trainstep`) and jax's Python name (`train_step`: the HloModule is jit_train_step)
    fail the test with count-recompiles' `--max` error; a name compiled by an earlier test (jax's cache:
    this test compiles nothing) is a budget met."""
    pytester.makepyfile(
        STEP
        + """
@pytest.mark.max_compiles(trainstep=1)
def test_misspelt():
    train_step(batch(8)); train_step(batch(16))

@pytest.mark.max_compiles(train_step=1)
def test_python_name():
    train_step(batch(8))

@pytest.mark.max_compiles(jit_train_step=1)
def test_compiled_by_an_earlier_test():
    train_step(batch(8))
"""
    )
    dump = pytester.path / "dump"
    result = _run(pytester, f"--xla-dump={dump}")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_misspelt*",
            "max_compiles trainstep: no function of that name; did you mean jit_train_step?",
            "*test_python_name*",
            "max_compiles train_step: no function of that name; did you mean jit_train_step?",
        ]
    )
    cli = CliRunner().invoke(app, ["--no-cache", "count-recompiles", str(dump), "--max", "trainstep=1"])
    assert (cli.exit_code, cli.stderr) == (
        2,
        "--max trainstep: no function of that name; did you mean jit_train_step?\n",
    )


def test_without_the_option_the_fixture_and_marker_say_what_is_missing(pytester: pytest.Pytester):
    pytester.makepyfile("""
import pytest

def test_fixture(xla_compiles):
    pass

@pytest.mark.max_compiles(total=1)
def test_marker():
    pass

def test_plain():
    pass
""")
    result = _run(pytester)
    result.assert_outcomes(passed=1, errors=1, failed=1)
    output = result.stdout.str()
    assert "the xla_compiles fixture needs `pytest --xla-dump` or `--xla-dump-dir=DIR`" in output
    assert "@pytest.mark.max_compiles needs `pytest --xla-dump` or `--xla-dump-dir=DIR`" in output


def test_the_flag_before_test_paths_runs_those_tests(pytester: pytest.Pytester):
    """`pytest --xla-dump tests/` (as people type `--cov`): a temporary dump folder, and tests/ is where
    the tests are, not the folder; `pytest --xla-dump test_file.py` gates that file's tests."""
    tests = pytester.mkdir("tests")
    (tests / "test_in_tests.py").write_text(STEP + "\ndef test_x(xla_compiles):\n    train_step(batch(2))\n")
    pytester.makepyfile(test_elsewhere="def test_never_collected():\n    raise AssertionError\n")
    result = _run(pytester, "--xla-dump", "tests/")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["xla dump: *xla-dump-*", "tests/test_in_tests.py .*"])
    assert not (pytester.path / "tests" / "module_0000.jit_train_step.before_optimizations.txt").exists()
    (tests / "test_gate.py").write_text(
        STEP
        + "\n@pytest.mark.max_compiles(jit_train_step=1)\ndef test_two():\n    train_step(batch(3)); train_step(batch(4))\n"
    )
    gated = _run(pytester, "--xla-dump", "tests/test_gate.py")
    gated.assert_outcomes(failed=1)
    gated.stdout.fnmatch_lines(["*jit_train_step compiled 2 times, budget 1 (max_compiles jit_train_step)"])


def test_dump_dir_option_and_its_usage_error(pytester: pytest.Pytester):
    pytester.makepyfile(
        STEP
        + "\ndef test_x(xla_compiles):\n    train_step(batch(3))\n    assert xla_compiles.count('train_step') == 1\n"
    )
    dump = pytester.path / "kept"
    _run(pytester, f"--xla-dump-dir={dump}").assert_outcomes(passed=1)
    assert any(dump.glob("module_*.jit_train_step.*after_optimizations.txt"))
    spaced = pytester.path / "spaced"
    _run(pytester, "--xla-dump-dir", str(spaced)).assert_outcomes(passed=1)
    assert any(spaced.glob("module_*.jit_train_step.*"))
    pytester.makefile(".txt", blocker="a file")
    result = _run(pytester, "--xla-dump-dir=blocker.txt/dump")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--xla-dump-dir: cannot use 'blocker.txt/dump' as the dump folder" in result.stderr.str()


def test_jax_started_before_the_option_is_named(pytester: pytest.Pytester):
    pytester.makepyfile(early_jax="import jax\njax.devices()\n")
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    result = _run(pytester, "-p", "early_jax", "--xla-dump")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*--xla-dump has no effect: jax was imported and started its backend*"])


def test_each_xdist_worker_dumps_into_its_own_folder(pytester: pytest.Pytester):
    pytest.importorskip("xdist")
    pytester.makepyfile(
        STEP
        + "".join(
            f"""
def test_{n}(xla_compiles):
    train_step(batch({n}))
    assert xla_compiles.functions() == {{"jit_train_step": 1}}
"""
            for n in (2, 3, 4, 5)
        )
    )
    dump = pytester.path / "dump"
    result = _run(pytester, f"--xla-dump={dump}", "-n", "2")
    result.assert_outcomes(passed=4)
    assert sorted(p.name for p in dump.iterdir()) == ["gw0", "gw1"]
    assert all(any(w.glob("module_*.jit_train_step.*")) for w in dump.iterdir())
