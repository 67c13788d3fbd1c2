"""The library behind the commands: one exported function per command returning typed rows, the CLI a
few lines over it, and one output pipeline whose formats agree (integers stay integers in CSV, a
command's JSON has one shape whatever its input holds)."""

from __future__ import annotations

import ast
import csv
import importlib
import io
import json
import pickle
import subprocess
import sys

import pytest
from conftest import DUMPS, REPO
from typer.testing import CliRunner

import xlainspect
from xlainspect.analysis.recompiles import Budget
from xlainspect.cli import app
from xlainspect.cli.app import COMMANDS, command_name
from xlainspect.cli.options import option
from xlainspect.errors import UsageError, literal
from xlainspect.report.causes import violation_text

runner = CliRunner()


def test_every_export_resolves_and_dir_and_help_list_it():
    """`recompiles_report` was missing from dir() and help(): the API loads lazily (PEP 562 `__getattr__`),
    so `__dir__` and the docstring name it."""
    assert xlainspect.__all__ == sorted(xlainspect._EXPORTS)
    assert len(xlainspect.__all__) == 51
    listed = dir(xlainspect)
    documented = (xlainspect.__doc__ or "").split()
    for name in xlainspect.__all__:
        assert getattr(xlainspect, name).__name__ == name
        assert name in listed and name in documented, name
    assert {"recompiles_report", "fusions_report", "Budget", "UsageError", "__version__"} <= set(listed)
    assert not {"importlib", "TYPE_CHECKING", "annotations"} & set(listed)
    code = (
        "import sys, xlainspect; print(len(dir(xlainspect)), *[m for m in sys.modules if m.startswith('xlainspect.')])"
    )
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert fresh.stdout.split() == [str(len(listed))]  # dir() lists the API without importing any of it


def test_recompiles_report_counts_the_ragged_batch():
    report = xlainspect.recompiles_report(DUMPS / "ragged_batch")
    assert [(f.name, f.modules) for f in report.functions] == [("jit_train_step", 2), ("jit_eval_step", 2)]
    assert report.violations == [] and report.skipped == []
    gated = xlainspect.recompiles_report(DUMPS / "ragged_batch", xlainspect.Budget(max_per_function=1))
    assert [violation_text(v) for v in gated.violations] == [
        "jit_train_step compiled 2 times, budget 1 (--max-per-function)",
        "jit_eval_step compiled 2 times, budget 1 (--max-per-function)",
    ]


def test_fusions_report_matches_the_command():
    report = xlainspect.fusions_report(DUMPS / "clean_run")
    assert len(report.fusions) == 5
    assert [(t.kind, t.count, t.output_bytes) for t in report.totals] == [("kLoop", 5, 200)]
    document = json.loads(runner.invoke(app, ["fusions", str(DUMPS / "clean_run"), "-f", "json"]).stdout)
    assert [f["name"] for f in document["fusions"]] == [f.name for f in report.fusions]


def test_selection_narrows_to_one_function():
    selection = xlainspect.Selection(function="jit_eval_step")
    report = xlainspect.ops_report(DUMPS / "ragged_batch", selection)
    assert {row.module.split(".", 1)[1] for row in report.opcodes} == {"jit_eval_step"}


def test_csv_keeps_integers_integers():
    result = runner.invoke(app, ["layouts", str(DUMPS / "tpu_v5e"), "--top", "5", "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert rows[0]["xla_bytes"] == "32768"  # pandas wrote 32768.0 (a float column with gaps)
    assert [r["xla_bytes"] for r in rows if not r["xla_bytes"]]  # a value XLA gives no size for stays empty


@pytest.mark.parametrize("shape", ["bf16[3,5]{1,0}", "(bf16[3,5]{1,0}, f32[2]{0})"])
def test_layout_json_is_a_list_whatever_the_shape_holds(shape):
    document = json.loads(runner.invoke(app, ["layout", shape, "--format", "json"]).stdout)
    assert isinstance(document, list) and len(document) == shape.count("[")


def _command_bodies():
    """(command, body lines after the docstring) of every @app.command function of the CLI."""
    for path in sorted((REPO / "xlainspect" / "cli").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Call) and getattr(d.func, "attr", "") == "command" for d in node.decorator_list
            ):
                body = node.body[1:] if isinstance(node.body[0], ast.Expr) else node.body
                yield node.name, body[-1].end_lineno - body[0].lineno + 1


def test_cli_commands_are_thin():
    bodies = dict(_command_bodies())
    assert len(bodies) >= 19
    assert {name: lines for name, lines in bodies.items() if lines > 15} == {}


def test_help_lists_every_command_and_imports_none():
    """`COMMANDS` names each command's module; `--help` lists them all from it, importing no command module."""
    code = (
        "import sys\nfrom xlainspect.cli import main\nsys.argv = ['xlainspect', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.endswith(('_cmd', '_cmds')) or m.startswith('xlainspect.analysis')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert all(f"  {name} " in result.stdout for name in COMMANDS)
    assert result.stdout.rstrip().endswith("[]")


def test_a_run_imports_its_own_command_module_only():
    code = (
        "import sys\nfrom xlainspect.cli import main\n"
        f"sys.argv = ['xlainspect', '--no-cache', 'modules', {str(DUMPS / 'ragged_batch')!r}, '-f', 'json']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.endswith(('_cmd', '_cmds'))))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert len(json.loads(result.stdout[: result.stdout.rindex("[")])) == 4
    assert result.stdout.rstrip().endswith("['dump_cmds']")


def test_the_command_table_is_the_commands_registered():
    """Each module `COMMANDS` names registers exactly the commands the table gives it."""
    for module in {module for module, _ in COMMANDS.values()}:
        registered = importlib.import_module(f"xlainspect.cli.{module}").commands.registered_commands
        assert sorted(command_name(info) for info in registered) == sorted(
            name for name, (owner, _) in COMMANDS.items() if owner == module
        )


def test_a_misspelt_command_gets_a_suggestion():
    result = runner.invoke(app, ["count-recompile", "x"])
    assert result.exit_code == 2
    assert "No such command 'count-recompile'. Did you mean 'count-recompiles'?" in result.output


def test_a_usage_error_names_the_argument_from_python_and_the_option_on_the_command_line():
    """The analyses name no CLI option: a `UsageError` says `$argument`, which `str()` writes as the
    argument and the CLI as its option (typer's rule, `per_name` is `--max`)."""
    budget = Budget(per_name=(("train_step", 1),))
    with pytest.raises(UsageError) as raised:
        xlainspect.recompiles_report(DUMPS / "ragged_batch", budget)
    assert str(raised.value) == "per_name train_step: no function of that name; did you mean jit_train_step?"
    assert raised.value.worded(option).startswith("--max train_step: no function of that name")
    found = UsageError("$step_function " + literal("jit_$x: no kernel") + " ($chip)")
    assert (str(found), found.worded(option)) == (
        "step_function jit_$x: no kernel (chip)",
        "--step-function jit_$x: no kernel (--chip)",
    )
    assert pickle.loads(pickle.dumps(found)).worded(option) == found.worded(option)  # as a worker sends it back
