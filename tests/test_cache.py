"""The parsed-model cache: hits give the same model, edits invalidate, bad entries are misses."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import DUMPS, model_summary

from xlainspect import HloParseError, settings
from xlainspect.dump import model_cache
from xlainspect.dump.model_cache import parse_file
from xlainspect.settings import cache_dir

AFTER = DUMPS / "clean_run" / "module_0000.jit_train_step.cpu_after_optimizations.txt"


@pytest.fixture
def hlo(tmp_path, monkeypatch):
    """A private cache directory and a copy of a real after-optimizations module."""
    monkeypatch.setenv("XLAINSPECT_CACHE_DIR", str(tmp_path / "cache"))
    copy = tmp_path / "module.txt"
    shutil.copy(AFTER, copy)
    return copy


def _summary(modules):
    return [m.path for m in modules], model_summary(modules)


def _forbid_parsing(monkeypatch):
    def fail(*_args, **_kwargs):
        raise AssertionError("parsed although the cache holds this file")

    monkeypatch.setattr(model_cache, "parse_hlo", fail)


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("XLAINSPECT_CACHE_DIR", str(tmp_path / "x"))
    assert cache_dir() == tmp_path / "x"
    monkeypatch.delenv("XLAINSPECT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "xlainspect"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "xlainspect"


def test_a_hit_returns_the_same_model_without_parsing(hlo, monkeypatch):
    first = parse_file(hlo)
    assert first[0].name == "jit_train_step" and first[0].instruction_count > 20
    assert len(list((cache_dir() / "models").glob("*.model"))) == 1
    assert len(list((cache_dir() / "files").glob("*.json"))) == 1
    _forbid_parsing(monkeypatch)
    second = parse_file(hlo)
    assert _summary(second) == _summary(first)
    assert second[0].entry_computation_layout == first[0].entry_computation_layout
    assert second[0].path == str(hlo)


def test_a_changed_file_is_parsed_again(hlo):
    (module,) = parse_file(hlo)
    text = hlo.read_text().replace(f"HloModule {module.name}", "HloModule renamed", 1)
    hlo.write_text(text)
    (changed,) = parse_file(hlo)
    assert changed.name == "renamed"
    assert len(list((cache_dir() / "models").glob("*.model"))) == 2


def test_same_content_at_a_new_mtime_is_a_hit(hlo, monkeypatch):
    parse_file(hlo)
    stat = hlo.stat()
    os.utime(hlo, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    _forbid_parsing(monkeypatch)
    (module,) = parse_file(hlo)  # re-hashed (mtime moved), same digest: still a hit
    assert module.name == "jit_train_step"


def test_a_corrupt_entry_is_a_miss(hlo):
    parse_file(hlo)
    (entry,) = (cache_dir() / "models").glob("*.model")
    entry.write_bytes(b"not a model")
    (module,) = parse_file(hlo)
    assert module.name == "jit_train_step"
    assert entry.read_bytes() != b"not a model"  # rewritten


def test_no_cache_neither_reads_nor_writes(hlo, monkeypatch):
    (module,) = parse_file(hlo, use_cache=False)
    assert module.name == "jit_train_step"
    assert not cache_dir().exists()
    monkeypatch.setattr(settings, "_cache_enabled", False)
    parse_file(hlo)
    assert not cache_dir().exists()


def test_a_bad_file_raises_and_is_not_cached(hlo):
    hlo.write_text(hlo.read_text()[:300])
    with pytest.raises(HloParseError) as info:
        parse_file(hlo)
    assert info.value.path == str(hlo)
    assert not list((cache_dir() / "models").glob("*.model"))


def test_cli_no_cache_option(hlo, monkeypatch):
    from typer.testing import CliRunner

    from xlainspect.cli import app

    monkeypatch.setattr(settings, "_cache_enabled", True)
    monkeypatch.setattr(settings, "_parse_workers", 1)
    monkeypatch.setattr(settings, "_pause_gc", False)
    result = CliRunner().invoke(app, ["--no-cache", "parse", str(hlo), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert '"module": "jit_train_step"' in result.output
    assert settings.cache_enabled() is False


def test_cli_no_cache_writes_nothing(hlo, tmp_path):
    """Not the parsed model, and not the grammar's LALR tables either (a fresh process builds them)."""
    import subprocess
    import sys

    where = tmp_path / "cache-dir"
    env = {**os.environ, "XLAINSPECT_CACHE_DIR": str(where)}
    env.pop("XLAINSPECT_NO_CACHE", None)
    done = subprocess.run(
        [sys.executable, "-m", "xlainspect", "--no-cache", "parse", str(hlo), "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert not where.exists()
    done = subprocess.run(
        [sys.executable, "-m", "xlainspect", "parse", str(hlo), "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert list(where.glob("grammar-*.lark"))  # `parse` keeps no model, but the tables
    assert not list(where.glob(".tmp-*"))  # each built in a file of its own, then renamed into place


def test_cached_result_is_served_until_the_file_changes(hlo):
    from xlainspect.analysis.collectives import collectives
    from xlainspect.dump.model_cache import cached_result

    calls = []

    def analyse():
        calls.append(1)
        return collectives(parse_file(hlo)[0])

    first = cached_result(hlo, "collectives", analyse)
    assert cached_result(hlo, "collectives", analyse) == first and len(calls) == 1
    assert cached_result(hlo, "collectives:other-arguments", analyse) == first and len(calls) == 2
    assert cached_result(hlo, "collectives", analyse, use_cache=False) == first and len(calls) == 3
    hlo.write_text(hlo.read_text().replace("jit_train_step", "jit_train_stop"))
    cached_result(hlo, "collectives", analyse)
    assert len(calls) == 4
    assert len(list((cache_dir() / "results").iterdir())) == 3


def test_cached_result_of_several_files_is_served_until_any_changes(hlo, tmp_path):
    from xlainspect.dump.model_cache import cached_result

    side = tmp_path / "side.txt"
    side.write_text("one")
    calls = []

    def analyse():
        calls.append(1)
        return side.read_text()

    assert cached_result([hlo, side], "memory", analyse) == "one"
    assert cached_result([hlo, side], "memory", analyse) == "one" and len(calls) == 1
    side.write_text("two")
    assert cached_result([hlo, side], "memory", analyse) == "two" and len(calls) == 2


def test_warm_cli_rerun_reads_no_module(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from xlainspect.cli import app
    from xlainspect.dump.module import DumpModule

    monkeypatch.setenv("XLAINSPECT_CACHE_DIR", str(tmp_path / "cache"))
    dump = DUMPS / "collectives_cpu"
    cold = CliRunner().invoke(app, ["collectives", str(dump), "--format", "json"])
    monkeypatch.setattr(DumpModule, "module", lambda *_: pytest.fail("loaded a module on a warm run"))
    warm = CliRunner().invoke(app, ["collectives", str(dump), "--format", "json"])
    assert cold.exit_code == warm.exit_code == 0
    assert warm.stdout == cold.stdout and '"payload_bytes": 1024' in warm.stdout


@pytest.fixture
def dump_copy(tmp_path, monkeypatch):
    """A private cache directory and a copy of a real dump."""
    monkeypatch.setenv("XLAINSPECT_CACHE_DIR", str(tmp_path / "cache"))
    return Path(shutil.copytree(DUMPS / "ragged_batch", tmp_path / "dump"))


def test_a_command_on_an_unchanged_dump_is_answered_without_reading_it(dump_copy, monkeypatch):
    import xlainspect
    from xlainspect.dump.module import DumpModule

    cold = xlainspect.fusions_report(dump_copy)
    assert len(list((cache_dir() / "commands").iterdir())) == 1
    monkeypatch.setattr(DumpModule, "module", lambda *_: pytest.fail("read a module on a warm run"))
    assert xlainspect.fusions_report(dump_copy) == cold
    assert len(xlainspect.fusions_report(dump_copy, top=1).fusions) == 1  # other arguments: another answer
    assert len(list((cache_dir() / "commands").iterdir())) == 2


@pytest.mark.parametrize("change", ["edit", "add", "remove"])
def test_a_changed_dump_is_read_again(dump_copy, change):
    import xlainspect

    cold = xlainspect.modules_report(dump_copy)
    first = sorted(dump_copy.glob("module_0000.*after_optimizations.txt"))[0]
    if change == "edit":
        first.write_text(first.read_text().replace("HloModule jit_train_step", "HloModule jit_renamed", 1))
    elif change == "add":
        shutil.copy(first, dump_copy / first.name.replace("module_0000.", "module_0009."))
    else:
        for path in dump_copy.glob("module_0000.*"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    warm = xlainspect.modules_report(dump_copy)
    assert warm != cold
    assert len(warm.modules) == len(cold.modules) + {"edit": 0, "add": 1, "remove": -1}[change]


def test_the_command_cache_sees_into_linked_folders_and_writes_nothing_when_off(dump_copy, tmp_path, monkeypatch):
    import xlainspect

    host = tmp_path / "elsewhere" / "host_0"
    shutil.move(dump_copy, host)
    dump_copy.mkdir()
    (dump_copy / "host_0").symlink_to(host)  # a host's folder linked into the fleet's
    cold = xlainspect.modules_report(dump_copy)
    for path in host.glob("module_0004.*"):
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert len(xlainspect.modules_report(dump_copy).modules) == len(cold.modules) - 1
    monkeypatch.setattr(settings, "_cache_enabled", False)
    shutil.rmtree(cache_dir())
    xlainspect.modules_report(dump_copy)
    assert not cache_dir().exists()


def test_inputs_of_too_many_files_are_analysed_without_a_remembered_answer(dump_copy, monkeypatch):
    import xlainspect
    from xlainspect import cache

    monkeypatch.setattr(cache, "REMEMBERED_FILES", len(list(dump_copy.iterdir())) - 1)
    first = xlainspect.modules_report(dump_copy)
    assert xlainspect.modules_report(dump_copy) == first
    assert not (cache_dir() / "commands").exists()


def test_one_key_policy_code_inputs_and_arguments(tmp_path):
    """An answer is found by the code that computed it, its inputs' content and its arguments: a change
    to any of them is a miss, and nothing else is (`xlainspect.cache.Key`)."""
    from xlainspect.cache import Cache, Key

    cache = Cache(tmp_path / "cache")
    source = tmp_path / "input.txt"
    source.write_text("one")
    calls = []

    def answer(code: str, arguments: str):
        key = Key(code, (cache.digest(source),), arguments)
        return cache.answer("results", key, lambda: calls.append(1) or f"{source.read_text()}:{arguments}")

    assert answer("code-1", "top=3") == "one:top=3" and len(calls) == 1
    assert answer("code-1", "top=3") == "one:top=3" and len(calls) == 1  # a hit
    assert answer("code-1", "top=4") == "one:top=4" and len(calls) == 2  # another argument
    assert answer("code-2", "top=3") == "one:top=3" and len(calls) == 3  # other code
    source.write_text("two")
    assert answer("code-1", "top=3") == "two:top=3" and len(calls) == 4  # a changed input
    assert len(list((tmp_path / "cache" / "results").glob("*.pickle"))) == 4


def test_a_disabled_cache_computes_and_writes_nothing_but_reads_saved_tables(tmp_path):
    from xlainspect.cache import Cache, Key

    Cache(tmp_path).write_table("grammar-x.lark", b"tables")
    off = Cache(tmp_path, enabled=False)
    calls = []
    for _ in range(2):
        assert off.answer("results", Key("code", (), ""), lambda: calls.append(1) or 7) == 7
    assert len(calls) == 2 and not (tmp_path / "results").exists()
    assert off.table_file("grammar-x.lark") == tmp_path / "grammar-x.lark"  # saved: read
    assert off.table_file("grammar-y.lark") is None  # not saved: never written
    off.write_table("grammar-y.lark", b"tables")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grammar-x.lark"]


def test_a_changed_parser_misses_the_parsed_models(hlo, monkeypatch):
    """The models are keyed by the parser's code: another fingerprint parses again (a change to an
    analysis, outside xlainspect/hlo, keeps them)."""
    parse_file(hlo)
    monkeypatch.setattr(model_cache, "_parser_fingerprint", lambda: "another parser")
    (module,) = parse_file(hlo)
    assert module.name == "jit_train_step"
    assert len(list((cache_dir() / "models").glob("*.model"))) == 2


def test_records_hold_the_whole_model():
    """`Module.from_record(module.to_record())` is the module, shapes and stack frames as objects
    equal to the parsed ones (the record is what the cache keeps and the tests compare)."""
    from conftest import hlo_fixture_files

    from xlainspect.hlo.model import Module
    from xlainspect.hlo.parser import parse_hlo

    paths = hlo_fixture_files()[::7]
    assert len(paths) > 30
    for path in paths:
        for module in parse_hlo(path.read_text(), str(path)):
            again = Module.from_record(module.to_record(), module.path)
            assert again.to_record() == module.to_record()
            assert (again.path, again.entry_computation_layout) == (module.path, module.entry_computation_layout)
            assert repr(again.stack_frames) == repr(module.stack_frames)
            shapes = [(i.shape, c.parameter_shapes, c.result_shape) for c in module.computations for i in c]
            assert [(i.shape, c.parameter_shapes, c.result_shape) for c in again.computations for i in c] == shapes


def test_an_answer_pickle_cannot_write_is_returned_and_not_kept(tmp_path):
    import threading

    from xlainspect.cache import Cache, Codec, Key

    cache = Cache(tmp_path)
    lock = threading.Lock()
    assert cache.answer("results", Key("code", (), "lock"), lambda: lock) is lock
    assert not (tmp_path / "results").exists()

    def broken(_value) -> bytes:
        raise KeyError("a bug in an encoder")

    with pytest.raises(KeyError):  # a bug is no unwritable value: it surfaces
        cache.answer("results", Key("code", (), "bug"), lambda: 1, Codec("x", broken, bytes, (ValueError,)))


def test_modules_counts_are_not_kept_per_module(dump_copy, monkeypatch):
    """Past REMEMBERED_FILES (no whole answer), `modules` counts every module again and writes no
    results entry: a count costs less than hashing its file and writing one (`runner._answer`); an
    edited module's count is then its new one."""
    import xlainspect
    from xlainspect import cache

    monkeypatch.setattr(cache, "REMEMBERED_FILES", 0)
    cold = xlainspect.modules_report(dump_copy)
    assert [r.instructions for r in cold.modules] == [94, 74, 37, 27]
    assert not (cache_dir() / "results").exists() and not (cache_dir() / "files").exists()
    eval_step = dump_copy / "module_0004.jit_eval_step.cpu_after_optimizations.txt"
    line = "  %constant.4 = f32[] constant(0)\n"  # its own line, copied under another name: one instruction more
    eval_step.write_text(eval_step.read_text().replace(line, line + line.replace("constant.4", "constant.9"), 1))
    assert [r.instructions for r in xlainspect.modules_report(dump_copy).modules] == [94, 74, 38, 27]
