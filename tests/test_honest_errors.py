"""Errors are honest: only input errors (XlaInspectError, HloParseError) become a skipped file, returned
in the result without changing the `Dump` an analysis was given; any other exception is a bug, raised
as AnalysisBug naming the file it was reading, and the CLI says so in one line and exits 3 (`--debug`:
the traceback)."""

from __future__ import annotations

import shutil
import sys

import pytest
from conftest import DUMPS

from xlainspect import settings
from xlainspect.analysis import recompiles
from xlainspect.analysis.recompiles import count_recompiles
from xlainspect.analysis.runner import analyse_modules
from xlainspect.cli.app import EXIT_BUG, main
from xlainspect.dump.directory import load_dump
from xlainspect.errors import AnalysisBug

RAGGED = DUMPS / "ragged_batch"


def _bug(compiles, causes):
    raise KeyError("a detector's bug")


@pytest.fixture
def cli(monkeypatch):
    """`main()` in this process, the settings its root options set restored afterwards."""
    for name in ("_cache_enabled", "_parse_workers", "_pause_gc"):
        monkeypatch.setattr(settings, name, getattr(settings, name))
    return main


def test_a_damaged_file_is_returned_skipped_and_the_dump_is_not_changed(tmp_path):
    dump_dir = tmp_path / "dump"
    shutil.copytree(RAGGED, dump_dir)
    damaged = sorted(dump_dir.glob("*jit_eval_step*after_optimizations.txt"))[0]
    damaged.write_text(damaged.read_text()[:200])
    dump = load_dump(dump_dir)
    found = count_recompiles(dump)
    assert dump.skipped == []
    assert [s.path for s in found.skipped] == [damaged]
    assert "truncated" in found.skipped[0].reason
    assert {f.name: (f.modules, f.unreadable) for f in found.functions} == {
        "jit_train_step": (2, 0),
        "jit_eval_step": (2, 1),
    }


def test_a_damaged_program_is_skipped_once_and_the_compiles_still_counted(tmp_path):
    """The compiled module reads, the program jax gave XLA (before_optimizations) does not: every detector
    that reads the program meets it, and it is named once, with the first reason (not silently dropped)."""
    dump_dir = tmp_path / "dump"
    shutil.copytree(RAGGED, dump_dir)
    damaged = dump_dir / "module_0002.jit_train_step.before_optimizations.txt"
    damaged.write_text(damaged.read_text()[:200])
    found = count_recompiles(load_dump(dump_dir))
    assert [s.path for s in found.skipped] == [damaged]
    assert found.skipped[0].reason.startswith(f"{damaged}: truncated: the file ends inside a computation")
    assert {f.name: (f.modules, f.unreadable) for f in found.functions} == {
        "jit_train_step": (2, 0),
        "jit_eval_step": (2, 0),
    }


def test_count_recompiles_leaves_the_dump_as_given():
    """What the caller read stays read (nothing evicted), and nothing count-recompiles read or parsed is
    left in the modules (memory stays that of one function's compiles)."""
    dump = load_dump(RAGGED)
    first = dump.modules[0]
    text, header = first.read(first.hlo_file()), first.header()
    held = [(set(m._read), set(m._parsed)) for m in dump.modules]
    assert count_recompiles(dump).functions
    assert [(set(m._read), set(m._parsed)) for m in dump.modules] == held
    assert first.read(first.hlo_file()) is text and first.header() is header


def test_a_bug_in_a_detector_is_raised_naming_the_file(monkeypatch):
    monkeypatch.setattr(recompiles, "DETECTORS", (_bug,))
    dump = load_dump(RAGGED)
    with pytest.raises(AnalysisBug) as raised:
        count_recompiles(dump)
    first = dump.functions()["jit_train_step"][0].hlo_file().path
    assert raised.value.path == str(first) and isinstance(raised.value.__cause__, KeyError)
    assert dump.skipped == []


def test_a_bug_in_a_per_module_analysis_is_no_skipped_file():
    dump = load_dump(RAGGED)
    with pytest.raises(AnalysisBug) as raised:
        analyse_modules(dump, "bug", lambda module: module.no_such_attribute)
    assert raised.value.path == str(dump.modules[0].hlo_file().path)
    assert isinstance(raised.value.error, AttributeError) and dump.skipped == []


def test_the_cli_names_the_file_asks_for_a_report_and_exits_3(cli, monkeypatch, capsys):
    monkeypatch.setattr(recompiles, "DETECTORS", (_bug,))
    monkeypatch.setattr(sys, "argv", ["xlainspect", "--no-cache", "count-recompiles", str(RAGGED)])
    with pytest.raises(SystemExit) as leaving:
        cli()
    assert leaving.value.code == EXIT_BUG == 3
    (line,) = capsys.readouterr().err.splitlines()
    first = load_dump(RAGGED).functions()["jit_train_step"][0].hlo_file().path
    assert line.startswith(f'xlainspect: internal error while reading {first}: KeyError: "a detector\'s bug".')
    assert "This is a bug in xlainspect" in line and "--debug" in line


def test_debug_shows_the_traceback(cli, monkeypatch):
    monkeypatch.setattr(recompiles, "DETECTORS", (_bug,))
    monkeypatch.setattr(sys, "argv", ["xlainspect", "--no-cache", "--debug", "count-recompiles", str(RAGGED)])
    with pytest.raises(AnalysisBug):
        cli()


def test_bad_input_stays_exit_2(cli, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(sys, "argv", ["xlainspect", "count-recompiles", str(tmp_path / "missing")])
    with pytest.raises(SystemExit) as leaving:
        cli()
    assert leaving.value.code == 2 and "internal error" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ("channel_id=x, replica_groups={}", "expected an integer channel id, got 'x'"),
        ("channel_id=1, replica_groups={{0,a}}", "expected replica groups"),
    ],
)
def test_an_attribute_xla_would_reject_is_an_input_error_at_its_line(
    tmp_path, monkeypatch, capsys, cli, attributes, message
):
    # HLO text in XLA's printed syntax (an all-reduce as hlo_instruction.cc prints it), one attribute damaged
    path = tmp_path / "bad.txt"
    path.write_text(
        "HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}\n\n"
        "%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
        "  ROOT %s = f32[] add(%a, %b)\n}\n\n"
        "ENTRY %main (p: f32[4]) -> f32[4] {\n  %p = f32[4]{0} parameter(0)\n"
        f"  ROOT %r = f32[4]{{0}} all-reduce(%p), {attributes}, to_apply=%add\n}}\n"
    )
    monkeypatch.setattr(sys, "argv", ["xlainspect", "--no-cache", "collectives", str(path)])
    with pytest.raises(SystemExit) as exited:
        cli()
    assert exited.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{path}:11:3: cannot read r (all-reduce): {message}")
    assert err[1] == f"  ROOT %r = f32[4]{{0}} all-reduce(%p), {attributes}, to_apply=%add"
    assert err[2] == "  ^"
