"""Filters and budgets that name nothing in the dump are usage errors (exit 2) naming the near
matches, never an empty table and exit 0; --module-re matches the labels the tables print."""

from __future__ import annotations

import pytest
from conftest import DUMPS
from typer.testing import CliRunner

from xlainspect.cli.app import app
from xlainspect.dump.directory import load_dump
from xlainspect.dump.selection import select_dump_modules
from xlainspect.errors import NoMatchError

RAGGED = DUMPS / "ragged_batch"


def _run(*args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


@pytest.mark.parametrize("command", ["fusions", "copies", "collectives", "ops", "layouts", "memory", "cost"])
def test_function_matching_nothing_names_the_near_match(command):
    result = _run(command, RAGGED, "--function", "train_step")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "--function train_step: no function of that name; did you mean jit_train_step?" in result.stderr


def test_function_far_from_every_name_lists_the_dump_functions():
    with pytest.raises(NoMatchError, match=r"the dump has jit_eval_step, jit_train_step$"):
        select_dump_modules(load_dump(RAGGED), function="zzz")


def test_module_re_matches_the_label_tables_print():
    dump = load_dump(RAGGED)
    (module,) = select_dump_modules(dump, module_re="module_0002")
    assert (module.module_id, module.name) == (2, "jit_train_step")
    assert [m.module_id for m in select_dump_modules(dump, module_re=r"^module_000[02]\.jit_train_step$")] == [0, 2]
    result = _run("ops", RAGGED, "--module-re", "module_0004", "--format", "csv")
    assert result.exit_code == 0
    assert {line.split(",")[0] for line in result.stdout.splitlines()[1:]} == {"module_0004.jit_eval_step"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--module-re", "module_0001"], "--module-re module_0001: matches no module (modules are labelled like "),
        (["--module-re", "("], "--module-re (: not a regular expression"),
        (
            ["--function", "jit_eval_step", "--module-re", "train"],
            "--module-re train: matches no module of function jit_eval_step",
        ),
    ],
)
def test_module_re_matching_nothing_exits_2(args, message):
    result = _run("fusions", RAGGED, *args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_max_naming_an_unknown_function_is_a_usage_error():
    result = _run("count-recompiles", RAGGED, "--max", "train_step=2")
    assert result.exit_code == 2
    assert "--max train_step: no function of that name; did you mean jit_train_step?" in result.stderr
    assert _run("count-recompiles", RAGGED, "--max", "jit_train_step=2", "--max", "jit_eval_step=2").exit_code == 0


@pytest.mark.parametrize(
    ("extra", "exit_code", "message"),
    [
        ([], 1, "over budget: jit_eval_step compiled 2 times, budget 1 (new: not in the baseline)"),
        (["--max-per-function", "2"], 0, ""),
        (["--max", "jit_eval_step=2"], 0, ""),
    ],
)
def test_baseline_gates_functions_it_does_not_hold(tmp_path, extra, exit_code, message):
    baseline = tmp_path / "baseline.json"
    baseline.write_text('{"functions": {"jit_train_step": 2}}')
    result = _run("count-recompiles", RAGGED, "--baseline", baseline, *extra)
    assert result.exit_code == exit_code
    assert message in result.stderr
    assert ("jit_train_step compiled" in result.stderr) is False  # within its baseline count


def test_unreadable_compiles_are_counted_not_dropped(tmp_path):
    """A real dump whose HLO files but the first were cut short (as a killed compile leaves them): every
    compile still counts against the gate, and the table says which are unexplained. (With every file
    cut nothing could be read: an input error, tests/test_cli_errors.py.)"""
    import shutil

    from xlainspect import Budget, recompiles_report

    dump = tmp_path / "dump"
    shutil.copytree(DUMPS / "ragged_batch", dump)
    for path in dump.glob("*_optimizations.txt"):
        if not path.name.startswith("module_0000."):
            path.write_text(path.read_text()[:200])
    report = recompiles_report(dump, Budget(max_per_function=1))
    assert [(f.name, f.modules, f.unreadable) for f in report.functions] == [
        ("jit_train_step", 2, 1),
        ("jit_eval_step", 2, 2),
    ]
    assert len(report.violations) == 2 and len(report.skipped) == 3
