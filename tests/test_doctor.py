"""`doctor`: dump health findings on real fixture dumps and on copies damaged the way real jobs damage them.

Damaged dumps are built in tmp_path from real fixture files only: files deleted (a killed compile),
truncated (a killed writer), gzip-compressed, or copied from two scenarios into one folder (two
processes). The two synthetic inputs are labelled where they are made.
"""

from __future__ import annotations

import gzip
import json
import shutil

import pytest
from conftest import DUMPS, GPU_CORPUS, JAX011
from typer.testing import CliRunner

from xlainspect.analysis.doctor import diagnose
from xlainspect.cli.app import app
from xlainspect.errors import DumpError
from xlainspect.report.views.doctor import explanation


def _copy(scenario: str, target, pattern: str = "module_*"):
    target.mkdir(exist_ok=True)
    for path in (DUMPS / scenario).glob(pattern):
        if path.is_file():
            shutil.copy(path, target / path.name)
    return target


def _by_check(health):
    return {f.check: f for f in health.findings}


def test_clean_dump_has_no_findings(jax_version):
    health = diagnose(jax_version.dumps / "clean_run")
    assert (health.modules, health.files, health.findings) == (1, 7, ())


def test_every_file_of_a_jax011_gpu_dump_is_known():
    """The GPU fixture's 14 module files (7 of them kinds jax 0.10 never wrote) and every dump of
    ../shared/gpu-corpus (where present): no finding, no unknown file."""
    health = diagnose(JAX011 / "gpu_matmul_fusions")
    assert (health.modules, health.files, health.findings) == (1, 14, ())
    for dump in sorted(GPU_CORPUS.glob("**/dump")):
        assert "unknown-files" not in _by_check(diagnose(dump)), dump


def test_a_file_of_an_unknown_kind_is_named(tmp_path):
    """A real file under a suffix no XLA dumper writes (the name is made up here): named, counted in nothing."""
    dump = _copy("clean_run", tmp_path / "d")
    shutil.copy(dump / "module_0000.jit_train_step.debug_options", dump / "module_0000.jit_train_step.new_kind.bin")
    unknown = _by_check(diagnose(dump))["unknown-files"]
    assert (unknown.severity, unknown.count, unknown.examples) == (
        "info",
        1,
        ("module_0000.jit_train_step.new_kind.bin",),
    )


def test_per_pass_files_are_counted_per_module():
    health = diagnose(DUMPS / "per_pass_all")
    (finding,) = health.findings
    assert (finding.check, finding.severity, finding.count, health.modules) == ("per-pass-files", "info", 21, 1)
    assert (
        finding.examples[0]
        == "module_0000.jit_step.0000.async-collective.after_pipeline-start.before_async-collective-replacer.txt"
    )
    assert "21 between-pass HLO files for 1 module(s)" in explanation(finding)


def test_killed_compile_leaves_before_without_after(tmp_path):
    dump = _copy("ragged_batch", tmp_path / "dump")
    for path in dump.glob("module_0002.jit_train_step.cpu_after_optimizations*"):
        path.unlink()
    finding = _by_check(diagnose(dump))["missing-after-optimizations"]
    assert (finding.severity, finding.count) == ("warning", 1)
    assert finding.examples == ("module_0002.jit_train_step.before_optimizations.txt",)


def test_truncated_and_unreadable_files_are_reported_and_gzip_is_read(tmp_path):
    dump = _copy("ragged_batch", tmp_path / "dump")
    after = dump / "module_0000.jit_train_step.cpu_after_optimizations.txt"
    after.write_bytes(after.read_bytes()[:3000])  # killed mid-write
    before = dump / "module_0004.jit_eval_step.before_optimizations.txt"
    before.write_bytes(b"\x1f\x8bnot really gzip")  # a broken compressed copy
    gz = dump / "module_0006.jit_eval_step.cpu_after_optimizations.txt"
    (dump / (gz.name + ".gz")).write_bytes(gzip.compress(gz.read_bytes()))
    gz.unlink()
    findings = _by_check(diagnose(dump))
    assert findings["truncated-files"].examples == (after.name,)
    assert findings["unreadable-files"].examples == (before.name,)
    assert findings["truncated-files"].severity == findings["unreadable-files"].severity == "error"
    assert set(findings) == {"truncated-files", "unreadable-files"}  # the .txt.gz module is healthy


def test_a_debug_options_file_that_cannot_be_read_is_unreadable_not_read_as_no_cap(tmp_path):
    """A host's first debug_options, read for xla_dump_max_hlo_modules: binary, it names no cap
    and is an unreadable file (it was read as an empty file, silently)."""
    dump = _copy("ragged_batch", tmp_path / "dump")
    options = dump / "module_0000.jit_train_step.debug_options"
    options.write_bytes(b"\xff\xfe\x00xla_dump_max_hlo_modules: 2\n")
    findings = _by_check(diagnose(dump))
    assert findings["unreadable-files"].examples == (options.name,)
    assert set(findings) == {"unreadable-files"}  # no dump cap read from it


def test_examples_are_the_first_paths_in_any_listing_order(tmp_path):
    """`doctor` sorts files out in the order the folder lists them (a fleet's 900,000 are never sorted
    whole): a finding's examples are still its first three paths."""
    dump = _copy("ragged_batch", tmp_path / "dump")
    cut = sorted(dump.glob("module_*.cpu_after_optimizations.txt"))
    for path in cut:
        path.write_bytes(path.read_bytes()[:3000])  # killed mid-write
    finding = _by_check(diagnose(dump))["truncated-files"]
    assert finding.count == len(cut) == 4
    assert finding.examples == tuple(p.name for p in cut[:3])


def test_two_processes_in_one_folder_collide_on_module_ids(tmp_path):
    dump = _copy("clean_run", tmp_path / "dump")
    _copy("dtype_change", dump, "module_0000.*")  # a second process: its ids restart at 0000 too
    finding = _by_check(diagnose(dump))["module-id-collision"]
    assert (finding.severity, finding.count) == ("error", 1)
    assert finding.examples[0].startswith("module_0000.")


def test_platforms_mixed_in_one_folder(tmp_path):
    dump = _copy("clean_run", tmp_path / "dump")
    _copy("tpu_v5e", dump, "module_0219.*")
    health = diagnose(dump)
    finding = _by_check(health)["mixed-platforms"]
    assert (finding.count, health.modules) == (2, 2)
    assert "cpu, tpu" in explanation(finding)


def test_dump_cap_read_from_debug_options(tmp_path):
    dump = _copy("ragged_batch", tmp_path / "dump")
    options = dump / "module_0000.jit_train_step.debug_options"
    # Synthetic: the fixtures were made without a cap; XLA writes the flag as a `field: value` line.
    options.write_text(options.read_text() + "xla_dump_max_hlo_modules: 4\n")
    finding = _by_check(diagnose(dump))["dump-cap-reached"]
    assert (finding.severity, finding.count, finding.examples) == ("warning", 4, (options.name,))
    options.write_text(options.read_text().replace(": 4\n", ": 5\n"))
    assert "dump-cap-reached" not in _by_check(diagnose(dump))


def test_proto_only_dump_is_a_finding_not_an_error(tmp_path):
    dump = tmp_path / "dump"
    dump.mkdir()
    # Synthetic: only the file name matters to this check (no proto fixtures exist); content is opaque bytes.
    (dump / "module_0000.jit_f.cpu_after_optimizations.hlo.pb").write_bytes(b"\x0a\x05jit_f\x00")
    health = diagnose(dump)
    (finding,) = health.findings
    assert (finding.check, finding.count, health.modules) == ("text-dumps-off", 1, 0)


def test_no_dump_is_an_input_error(tmp_path):
    with pytest.raises(DumpError, match="no XLA dump files"):
        diagnose(tmp_path)
    with pytest.raises(DumpError, match="not a directory"):
        diagnose(tmp_path / "missing")


def test_cli_json_and_exit_codes(tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["doctor", str(DUMPS / "per_pass_all"), "--format", "json"])
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert (document["modules"], document["findings"][0]["check"], document["findings"][0]["count"]) == (
        1,
        "per-pass-files",
        21,
    )
    markdown = runner.invoke(app, ["doctor", str(DUMPS / "clean_run"), "--format", "markdown"])
    assert markdown.exit_code == 0
    assert markdown.stdout.splitlines() == [  # the table, for a pull request, even without a finding
        f"**{DUMPS / 'clean_run'}: 1 modules, 7 files, no findings: the dump looks healthy**",
        "",
        "| check | severity | count | examples | explanation | action |",
        "|---|---|---|---|---|---|",
    ]
    table = runner.invoke(app, ["doctor", str(DUMPS / "clean_run")])  # people: one sentence
    assert table.stdout == f"{DUMPS / 'clean_run'}: 1 modules, 7 files, no findings: the dump looks healthy\n"
    missing = runner.invoke(app, ["doctor", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "nope" in missing.output and "Traceback" not in missing.output


def test_dump_cap_cut_is_not_called_a_crash():
    """dump_cap is real XLA output with --xla_dump_max_hlo_modules=3 and 5 compiles of jit_step."""
    (finding,) = diagnose(DUMPS / "dump_cap").findings
    assert (finding.check, finding.count) == ("dump-cap-reached", 3)
    assert "module_0004.jit_step stopped at its before_optimizations file (the cap, not a crash)" in (
        explanation(finding)
    )
    assert "2 later compiles left only jax's per-module folder (module_0006.jit_step, ...)" in explanation(finding)


def test_a_crash_before_the_cap_is_still_a_missing_after(tmp_path):
    dump = tmp_path / "dump"
    shutil.copytree(DUMPS / "dump_cap", dump)
    for path in dump.glob("module_0000.jit_step.cpu_after_optimizations*"):
        path.unlink()
    findings = _by_check(diagnose(dump))
    assert findings["missing-after-optimizations"].examples == ("module_0000.jit_step.before_optimizations.txt",)
    assert "module_0004.jit_step stopped" in explanation(findings["dump-cap-reached"])


def test_complete_text_that_does_not_parse_is_a_finding(tmp_path):
    dump = _copy("ragged_batch", tmp_path / "dump")
    after = dump / "module_0002.jit_train_step.cpu_after_optimizations.txt"
    after.write_text(after.read_text().replace(" parameter(0)", " parameter(0", 1))  # damaged: a lost ')'
    (finding,) = diagnose(dump).findings
    assert (finding.check, finding.severity, finding.examples) == ("unparsable-modules", "error", (after.name,))
    assert f"First: {after.name}:" in explanation(finding)


def test_the_same_unparsable_text_on_two_hosts_names_both(tmp_path):
    """The hosts of one job write the same modules: parsed once per content, named on each host."""
    (tmp_path / "dump").mkdir()
    for host in ("host_0", "host_1"):
        after = (
            _copy("ragged_batch", tmp_path / "dump" / host) / "module_0002.jit_train_step.cpu_after_optimizations.txt"
        )
        after.write_text(after.read_text().replace(" parameter(0)", " parameter(0", 1))
    (finding,) = diagnose(tmp_path / "dump").findings
    name = "module_0002.jit_train_step.cpu_after_optimizations.txt"
    assert (finding.check, finding.examples) == ("unparsable-modules", (f"host_0/{name}", f"host_1/{name}"))
    assert finding.first_error is not None and finding.first_error.startswith(f"host_0/{name}:")


def test_files_read_by_forked_workers_give_the_same_findings(tmp_path, monkeypatch):
    """Where xlainspect owns the process, the HLO files are read by this process and a forked worker,
    chunk by chunk: the findings (truncated, unreadable, unparsable) are those of a one-process read."""
    from xlainspect import settings
    from xlainspect.analysis import doctor

    dump = _copy("ragged_batch", tmp_path / "dump")
    after = dump / "module_0000.jit_train_step.cpu_after_optimizations.txt"
    after.write_bytes(after.read_bytes()[:3000])
    (dump / "module_0004.jit_eval_step.before_optimizations.txt").write_bytes(b"\x1f\x8bnot really gzip")
    damaged = dump / "module_0002.jit_train_step.cpu_after_optimizations.txt"
    damaged.write_text(damaged.read_text().replace(" parameter(0)", " parameter(0", 1))
    monkeypatch.setattr(settings, "_cache_enabled", False)  # else the second call is the first's answer
    monkeypatch.setattr(settings, "_parse_workers", 1)
    serial = diagnose(dump)
    monkeypatch.setattr(settings, "_parse_workers", 2)
    monkeypatch.setattr(doctor, "_CHUNK_FILES", 2)
    parallel = diagnose(dump)
    assert parallel == serial
    assert [f.check for f in parallel.findings] == ["truncated-files", "unparsable-modules", "unreadable-files"]


def test_healthy_dump_prints_a_sentence_not_an_empty_table():
    result = CliRunner().invoke(app, ["doctor", str(DUMPS / "clean_run")])
    assert result.stdout == f"{DUMPS / 'clean_run'}: 1 modules, 7 files, no findings: the dump looks healthy\n"
