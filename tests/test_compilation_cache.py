"""`xlainspect cache` on the real cache directory of fixtures/cache/runs (six runs of one program, made by
fixtures/generate.py cache_runs): exact entries per function, stored compile seconds, damaged files."""

from __future__ import annotations

import json
import shutil
import sys

import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from xlainspect.analysis.cache_inventory import cache_inventory, dump_entries
from xlainspect.cli.app import app
from xlainspect.dump.compilation_cache import read_cache_dir
from xlainspect.dump.directory import load_dump
from xlainspect.dump.jaxlog import read_jax_log
from xlainspect.errors import DumpError

RUNS = FIXTURES / "cache" / "runs"
CACHE = RUNS / "cache"
runner = CliRunner()


def _copy(tmp_path):
    target = tmp_path / "cache"
    shutil.copytree(CACHE, target)
    return target


def _entry(cache_dir, function):
    return next(cache_dir.glob(f"{function}-*-cache"))


def test_entries_per_function_are_exact():
    # 1_cold writes 5 (predict twice); 2_repeat jit_scaled (custom_partitioning pointer); 3_flag 5;
    # 4_constant predict x2 + scaled; 5_zlib 5 (zlib); 6_threshold none (min compile time 1 s)
    rows = {r.name: r for r in cache_inventory(read_cache_dir(CACHE))}
    assert {n: r.entries for n, r in rows.items()} == {
        "jit_predict": 8,
        "jit_scaled": 5,
        "jit_deep": 3,
        "jit_train_step": 3,
    }
    # the programs the entries hold: predict at batch 8 and 16, with 0.5 and with 0.25 (4_constant); the
    # others one program each. Each holds one program under several keys: runs 3 (a flag that leaves the
    # HLO as it was), 5 (zlib) and jit_scaled's every run (jax #21159) wrote a program the cache had
    assert {n: (r.programs, r.same_program) for n, r in rows.items()} == {
        "jit_predict": (4, True),
        "jit_scaled": (1, True),
        "jit_deep": (1, True),
        "jit_train_step": (1, True),
    }
    recorded = json.loads((FIXTURES / "cache" / "runs.json").read_text())["cache_entries"]
    assert sorted(f"{e.key}-cache" for e in read_cache_dir(CACHE).entries) == recorded


def test_entries_of_different_programs_are_not_a_key_that_changes():
    """fixtures/gpu_corpus/cache_runs (jax 0.11.2, H200): jit_convert_element_type's 11 entries, all
    written by one cold run (run2 hit every one), 11 programs: one per shape, nothing to flag. Each
    entry's program is XLA's fingerprint before scheduling, the one the cache-hit run's dump prints."""
    folder = FIXTURES / "gpu_corpus" / "cache_runs"
    cached = read_cache_dir(folder / "cache")
    (row,) = cache_inventory(cached)
    assert (row.name, row.entries, row.programs, row.same_program) == ("jit_convert_element_type", 11, 11, False)
    dump = load_dump(folder / "run2" / "dump")
    printed = {
        m.header().attributes["frontend_attributes"].split('"')[1] for m in dump.functions()["jit_convert_element_type"]
    }
    assert {e.program for e in cached.entries} == {f"fp:{fingerprint}" for fingerprint in printed}
    result = runner.invoke(app, ["cache", str(folder / "cache")])
    assert result.exit_code == 0
    assert "one program, several keys" not in result.stdout


def test_stored_compile_seconds_and_compression():
    entries = read_cache_dir(CACHE).entries
    # jax stores int(seconds): jit_deep's 40 matmuls took 2 to 3.7 s to compile, the rest under a second
    assert {e.compile_seconds for e in entries if e.function != "jit_deep"} == {0}
    assert sorted((e.compile_seconds, e.compression) for e in entries if e.function == "jit_deep") == [
        (2, "zlib"),
        (2, "zstandard"),
        (3, "zstandard"),
    ]
    by_compression = {c: sum(e.compression == c for e in entries) for c in ("zstandard", "zlib")}
    assert by_compression == {"zstandard": 14, "zlib": 5}  # 5_zlib ran without zstandard
    rows = {r.name: r for r in cache_inventory(read_cache_dir(CACHE))}
    assert (rows["jit_deep"].compile_seconds, rows["jit_deep"].bytes) == (
        7,
        sum(p.stat().st_size for p in CACHE.glob("jit_deep-*-cache")),
    )


def test_cli_json_schema():
    result = runner.invoke(app, ["cache", str(CACHE), "--format", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert {f["name"]: (f["entries"], f["compile_seconds"]) for f in document["functions"]} == {
        "jit_predict": (8, 0),
        "jit_scaled": (5, 0),
        "jit_deep": (3, 7),
        "jit_train_step": (3, 0),
    }
    assert len(document["entries"]) == 19
    assert set(document["entries"][0]) >= {"function", "key", "bytes", "compile_seconds", "modified"}


def test_damaged_truncated_and_foreign_files_are_named_and_skipped(tmp_path):
    cache_dir = _copy(tmp_path)
    truncated = _entry(cache_dir, "jit_deep")
    truncated.write_bytes(truncated.read_bytes()[:1000])
    zlib_entry = next(p for p in cache_dir.glob("jit_predict-*-cache") if p.read_bytes()[:1] == b"\x78")
    zlib_entry.write_bytes(zlib_entry.read_bytes()[:-20])
    empty = _entry(cache_dir, "jit_scaled")
    empty.write_bytes(b"")
    (cache_dir / "notes.txt").write_text("mine")
    # jax's own files beside the entries (lru_cache.py: .lockfile and <key>-atime with eviction on)
    (cache_dir / ".lockfile").write_bytes(b"")
    (cache_dir / f"{_entry(cache_dir, 'jit_train_step').name.removesuffix('-cache')}-atime").write_bytes(bytes(8))
    cached = read_cache_dir(cache_dir)
    reasons = {s.path.name: s.reason for s in cached.skipped}
    assert len(cached.entries) == 16
    assert reasons[truncated.name].startswith("damaged or truncated zstandard data")
    assert reasons[zlib_entry.name].startswith("damaged or truncated zlib data")
    assert reasons[empty.name] == "empty file: not a jax cache entry"
    assert reasons["notes.txt"] == "not a jax cache file (<module>-<sha256>-cache)"
    assert len(reasons) == 4
    result = runner.invoke(app, ["cache", str(cache_dir)])
    assert result.exit_code == 0
    assert "Traceback" not in result.output and f"skipped {truncated}" in result.output


def test_zstandard_missing_skips_its_entries(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "zstandard", None)
    monkeypatch.setitem(sys.modules, "compression", None)
    cached = read_cache_dir(CACHE)
    assert {e.compression for e in cached.entries} == {"zlib"} and len(cached.entries) == 5
    assert {s.reason for s in cached.skipped} == {"zstandard-compressed; install the zstandard package to read it"}


@pytest.mark.parametrize("make", [lambda p: p / "missing", lambda p: p])
def test_no_cache_is_exit_2(tmp_path, make):
    result = runner.invoke(app, ["cache", str(make(tmp_path))])
    assert result.exit_code == 2 and "Traceback" not in result.output
    with pytest.raises(DumpError):
        read_cache_dir(make(tmp_path))


def test_dump_join_by_key_with_the_runs_log():
    rows = dump_entries(read_cache_dir(CACHE), load_dump(RUNS / "4_constant"), read_jax_log(RUNS / "4_constant"))
    # hits leave the loaded executable's HLO in the dump too (train_step, deep): they are compiles here
    assert [(r.function, r.compile, r.module_id, r.cached, r.matched_by) for r in rows] == [
        ("jit_train_step", 1, 2, True, "key"),
        ("jit_predict", 1, 3, True, "key"),
        ("jit_predict", 2, 6, True, "key"),
        ("jit_deep", 1, 11, True, "key"),
        ("jit_scaled", 1, 12, True, "key"),
    ]
    assert all(r.key in {e.key for e in read_cache_dir(CACHE).entries} for r in rows)


def test_dump_join_by_order_without_a_log(tmp_path):
    dump = tmp_path / "dump"
    shutil.copytree(RUNS / "6_threshold", dump)
    (dump / "jax.log.gz").unlink()
    result = runner.invoke(app, ["cache", str(CACHE), "--dump", str(dump), "--format", "json"])
    assert result.exit_code == 0, result.output
    joined = json.loads(result.stdout)["dump"]
    # jit_evaluate was never written (6_threshold's 1 s minimum); by order, jit_scaled's first entry is taken
    assert [(r["function"], r["cached"], r["matched_by"]) for r in joined] == [
        ("jit_train_step", True, "order"),
        ("jit_predict", True, "order"),
        ("jit_predict", True, "order"),
        ("jit_deep", True, "order"),
        ("jit_scaled", True, "order"),
        ("jit_evaluate", False, "order"),
    ]
    with_log = runner.invoke(app, ["cache", str(CACHE), "--dump", str(RUNS / "6_threshold"), "--format", "json"])
    # with the log the keys are known: 6_threshold's jit_scaled key was not written either
    assert [(r["function"], r["cached"]) for r in json.loads(with_log.stdout)["dump"]][-2:] == [
        ("jit_scaled", False),
        ("jit_evaluate", False),
    ]


def test_log_without_dump_is_a_usage_error():
    result = runner.invoke(app, ["cache", str(CACHE), "--log", str(RUNS / "1_cold" / "jax.log.gz")])
    assert result.exit_code == 2 and "--log is the log of the run of --dump: give both" in result.output
