"""CLI error paths end to end: every bad input is one message naming the place, exit 2, no traceback;
a bad file inside a dump is skipped with a note while the good modules are analysed (exit 0).

Damaged inputs are real fixture files, truncated, gzip-compressed or overwritten with bytes in tmp_path.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import DUMPS, REPO
from typer.testing import CliRunner

from xlainspect.cli.app import app

RAGGED = DUMPS / "ragged_batch"
AFTER = "module_0000.jit_train_step.cpu_after_optimizations.txt"
TRUNCATED_AT = 3000  # bytes: mid-attribute on line 58 of the ragged_batch step (`metadata={op_na`)


def _run(*args: str):
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


@pytest.fixture
def truncated(tmp_path):
    path = tmp_path / AFTER
    path.write_bytes((RAGGED / AFTER).read_bytes()[:TRUNCATED_AT])
    return path


def _mixed_dump(tmp_path, damage: str):
    """ragged_batch's train step (2 good modules) plus one eval-step file damaged in one way."""
    dump = tmp_path / "dump"
    dump.mkdir()
    for path in RAGGED.glob("module_000[02].jit_train_step.*"):
        shutil.copy(path, dump / path.name)
    source = RAGGED / "module_0004.jit_eval_step.cpu_after_optimizations.txt"
    bad = dump / source.name
    if damage == "truncated":
        bad.write_bytes(source.read_bytes()[:TRUNCATED_AT])
    elif damage == "binary":
        bad.write_bytes(b"\x08\x01\x12\x00" + os.urandom(64))
    elif damage == "not-utf8":
        bad.write_bytes(source.read_bytes()[:500] + b"\xff\xfe" + source.read_bytes()[500:])
    elif damage == "empty":
        bad.write_bytes(b"")
    return dump, bad


def test_missing_path_is_one_line(tmp_path):
    for command in ("parse", "doctor", "ops"):
        result = _run(command, tmp_path / "no_such_dump")
        assert result.exit_code == 2
        (line,) = result.output.strip().splitlines()
        assert "no_such_dump" in line and "no such file" in line or "not a directory" in line


def test_directory_without_dump_files(tmp_path):
    (tmp_path / "notes.txt").write_text("not a dump\n")
    for command in ("doctor", "ops"):
        result = _run(command, tmp_path)
        assert result.exit_code == 2
        (line,) = result.output.strip().splitlines()
        assert (
            f"no XLA dump files (module_*.txt: *before_optimizations.txt, *after_optimizations.txt) under {tmp_path}"
            in line
        )


def test_truncated_file_given_directly_points_at_line_and_column(truncated):
    result = _run("parse", truncated)
    assert result.exit_code == 2
    where, source, caret = result.output.splitlines()[:3]
    assert where == f"{truncated}:58:59: unbalanced '{{': no matching '}}' (truncated?)"
    assert source == "  %bitcast.11 = f32[100]{0} bitcast(%param_2.4), metadata={op_na"
    assert caret == " " * 58 + "^"


def test_binary_and_gzip_files_given_directly(tmp_path):
    binary = tmp_path / "module_0000.jit_f.cpu_after_optimizations.txt"
    binary.write_bytes(b"\x08\x01\x12\x00" + os.urandom(64))
    result = _run("parse", binary)
    assert result.exit_code == 2
    assert result.output.strip() == f"{binary}: binary file, not HLO text (a .pb proto dump?)"
    compressed = tmp_path / (AFTER + ".gz")
    compressed.write_bytes(gzip.compress((RAGGED / AFTER).read_bytes()))
    result = _run("parse", compressed, "--format", "csv")
    assert result.exit_code == 0
    assert f"{compressed},jit_train_step," in result.output


@pytest.mark.parametrize("damage", ["truncated", "binary", "not-utf8", "empty"])
def test_bad_file_in_a_dump_is_skipped_and_the_rest_analysed(tmp_path, damage):
    dump, bad = _mixed_dump(tmp_path, damage)
    result = _run("ops", dump, "--format", "csv")
    assert result.exit_code == 0
    assert "module_0000.jit_train_step,parameter," in result.stdout
    assert "module_0002.jit_train_step,parameter," in result.stdout
    assert "jit_eval_step" not in result.stdout
    assert f"skipped {bad}" in result.stderr


@pytest.mark.parametrize("damage", ["truncated", "binary"])
def test_count_recompiles_skips_bad_files_and_strict_fails(tmp_path, damage):
    dump, bad = _mixed_dump(tmp_path, damage)
    result = _run("count-recompiles", dump, "--format", "csv")
    assert result.exit_code == 0
    assert "jit_train_step" in result.stdout
    assert re.search(r"skipped 1 file", result.stderr), result.stderr
    assert bad.name in result.stderr
    strict = _run("count-recompiles", dump, "--strict")
    assert strict.exit_code == 2
    assert bad.name in strict.output


def test_symlink_loop_is_one_line(tmp_path):
    dump, _ = _mixed_dump(tmp_path, "none")
    (dump / "loop").symlink_to(dump)
    result = _run("ops", dump)
    assert result.exit_code == 2
    assert result.output.strip() == f"{dump / 'loop'}: symbolic link loop"


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any folder")
def test_unreadable_directory_is_one_line(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        result = _run("doctor", locked)
    finally:
        locked.chmod(0o755)
    assert result.exit_code == 2
    assert "permission denied" in result.output


def test_real_interpreter_prints_no_traceback(truncated, tmp_path):
    """One run outside the in-process runner: the installed entry point with a real stderr."""
    result = subprocess.run(
        [sys.executable, "-m", "xlainspect", "parse", str(truncated)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"{truncated}:58:59: ") and "Traceback" not in result.stderr
    assert result.stdout == ""


PER_MODULE = ("cost", "fusions", "copies", "collectives", "ops", "layouts", "modules", "count-recompiles")
NOT_HLO = RAGGED / "module_0000.jit_train_step.debug_options"  # real XLA output (its DebugOptions), not HLO text


@pytest.mark.parametrize("command", PER_MODULE)
def test_a_file_that_is_not_hlo_is_an_error_not_an_empty_table(tmp_path, command):
    path = tmp_path / "random.txt"
    shutil.copy(NOT_HLO, path)
    result = _run(command, path)
    assert (result.exit_code, result.stdout) == (2, "")
    where, source, caret, *_ = result.stderr.splitlines()
    assert re.fullmatch(rf"{re.escape(str(path))}:1:\d+: unexpected (name|text) .*", where), where
    assert source == "xla_cpu_enable_fast_min_max: false" and caret.endswith("^")
    assert "skipped" not in result.stderr


@pytest.mark.parametrize("command", [*PER_MODULE, "memory", "diff", "report"])
def test_a_dump_whose_every_file_is_damaged_is_an_error(tmp_path, command):
    dump = tmp_path / "dump"
    shutil.copytree(RAGGED, dump)
    for path in dump.glob("*.txt"):
        path.write_bytes(b"\x08\x01\x12\x00" + bytes(range(64)))
    arguments = {"diff": [dump, dump], "report": [dump, "--markdown", "-"]}.get(command, [dump])
    result = _run(command, *arguments)
    assert (result.exit_code, result.stdout) == (2, "")
    first, rest = result.stderr.splitlines()
    side = "-buffer-assignment" if command == "memory" else ""
    assert (
        first
        == f"{dump}/module_0000.jit_train_step.cpu_after_optimizations{side}.txt: binary file, not HLO text (a .pb proto dump?)"
    )
    more = 7 if command == "diff" else 3  # diff reads each dump's 4 modules
    assert rest == f"{more} more file(s) could not be read either: nothing was analysed"


def test_a_partly_damaged_dump_is_analysed_and_names_the_damaged_file(tmp_path):
    dump, bad = _mixed_dump(tmp_path, "truncated")
    result = _run("cost", dump, "--format", "csv")
    assert result.exit_code == 0
    assert "module_0002.jit_train_step," in result.stdout and "jit_eval_step" not in result.stdout
    assert f"skipped {bad}: {bad}:" in result.stderr


def test_modules_lists_a_damaged_module_uncounted_and_names_it(tmp_path):
    """`modules` counts instructions through the per-module runner: the truncated eval step is listed
    with no count (null, never 0) and named on stderr, the train steps are counted."""
    dump, bad = _mixed_dump(tmp_path, "truncated")
    result = _run("modules", dump, "--format", "json")
    assert result.exit_code == 0
    rows = [(r["module_id"], r["function"], r["instructions"]) for r in json.loads(result.stdout)]
    assert rows == [(0, "jit_train_step", 94), (2, "jit_train_step", 74), (4, "jit_eval_step", None)]
    assert "skipped 1 file(s)" in result.stderr and f"skipped {bad}: {bad}:" in result.stderr
    strict = _run("modules", dump, "--format", "json", "--strict")
    assert (strict.exit_code, strict.stdout) == (2, "")
    assert (
        strict.stderr == f"{bad}:57:8: HLO text ends too early (truncated?)\n  %para\n       ^\nexpected one of: '='\n"
    )


@pytest.mark.parametrize(
    "header",
    [
        "HloModule jit_f, is_scheduled=true",  # no entry_computation_layout: once an IndexError
        "HloModule jit_f, entry_computation_layout={(f32[2]{0})->f32[2]{0}}",
    ],
)
def test_header_only_files_of_one_function_are_named_and_skipped(tmp_path, header):
    """Test strings, not dumps: damaged or foreign files holding a header and a closing brace, no computation,
    beside one real module of another function (read: the run is a partial failure, exit 0)."""
    for module_id in (0, 1):
        (tmp_path / f"module_000{module_id}.jit_f.cpu_after_optimizations.txt").write_text(f"{header}\n}}\n")
    shutil.copy(RAGGED / AFTER, tmp_path / "module_0002.jit_train_step.cpu_after_optimizations.txt")
    result = _run("count-recompiles", tmp_path, "--format", "json")
    assert result.exit_code == 0
    assert '"total_modules": 3' in result.stdout and '"unreadable": 2' in result.stdout  # counted, not explained
    assert "skipped 2 file(s)" in result.stderr
    assert "module_0001.jit_f.cpu_after_optimizations.txt: no computation after the HloModule line" in result.stderr


def test_a_header_without_entry_computation_layout_is_read_with_its_body(tmp_path):
    """Test strings, not dumps: text as older XLA or a hand-written file prints it, with no layout in the header."""
    for module_id, size in ((0, 2), (1, 3)):
        text = f"HloModule jit_f\n\nENTRY main {{\n  ROOT x = f32[{size}]{{0}} parameter(0)\n}}\n"
        (tmp_path / f"module_000{module_id}.jit_f.cpu_after_optimizations.txt").write_text(text)
    result = _run("count-recompiles", tmp_path, "--format", "json")
    assert (result.exit_code, result.stderr) == (0, "")
    assert '"kind": "shape"' in result.stdout


def test_a_file_starting_with_a_blank_line_is_read(tmp_path):
    (tmp_path / AFTER).write_bytes(b"\n" + (RAGGED / AFTER).read_bytes())
    result = _run("count-recompiles", tmp_path, "--format", "json")
    assert (result.exit_code, result.stderr) == (0, "")
    assert '"name": "jit_train_step"' in result.stdout


def test_a_file_of_blank_lines_is_empty(tmp_path):
    (tmp_path / AFTER).write_text("\n\n  \n")
    result = _run("count-recompiles", tmp_path)
    assert f"{AFTER}: empty file" in result.stderr


def test_a_skipped_files_path_is_said_once(tmp_path):
    """A file left out is named once on its line, then why: the reader's own message starts with the path
    too (`X: binary file, ...`), which the line does not repeat."""
    dump = tmp_path / "dump"
    shutil.copytree(DUMPS / "ragged_batch", dump)
    bad = sorted(dump.glob("*.cpu_after_optimizations.txt"))[0]
    bad.write_bytes(b"\x00\x01 not text")
    result = _run("count-recompiles", dump)
    assert result.exit_code == 0
    assert f"  skipped {bad}: binary file, not HLO text (a .pb proto dump?)" in result.stderr.splitlines()
