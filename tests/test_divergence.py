"""Hosts of one job that compiled another program for the same function: `doctor` names them (an
error), `count-recompiles` says the hosts disagree. The fixture `fleet_divergence` is four real host
processes' dumps (fixtures/generate.py), host_2's training step clipping its gradients."""

from __future__ import annotations

import json
import shutil

from conftest import DUMPS
from typer.testing import CliRunner

from xlainspect.analysis.divergence import HostDisagreement, host_disagreements
from xlainspect.analysis.doctor import diagnose
from xlainspect.cli.app import app
from xlainspect.dump.directory import load_dump
from xlainspect.hlo.fastpath import program_lines
from xlainspect.report.views.doctor import examples

FLEET = DUMPS / "fleet_divergence"


def test_the_host_with_another_program_is_named_per_compile():
    found = host_disagreements(load_dump(FLEET))
    assert [(d.function, d.compile, d.usual_hosts, d.odd_hosts, d.line) for d in found] == [
        ("jit_train_step", 1, ("host_0", "host_1", "host_3"), ("host_2",), 14),
        ("jit_train_step", 2, ("host_0", "host_1", "host_3"), ("host_2",), 14),
    ]
    assert found[0].usual_line.startswith("ENTRY %main.2 (w.1: f32[8,1], x.1: f32[16,8], y.1: f32[16,1])")
    assert found[0].odd_line.startswith("%clip.2 (Arg_0.1: f32[8,1]")
    assert found[1].usual_line.startswith("ENTRY %main.2 (w.1: f32[8,1], x.1: f32[8,8]")  # the batch-8 compile


def test_doctor_reports_the_diverging_host_as_an_error():
    finding = next(f for f in diagnose(FLEET).findings if f.check == "host-programs")
    assert (finding.severity, finding.count) == ("error", 2)
    assert examples(finding)[0].startswith(
        "host_2: jit_train_step compile 1 differs from host_0, host_1, host_3 at line 14: 'ENTRY %main.2"
    )
    assert "'%clip.2 (Arg_0.1: f32[8,1], Arg_1.1: f32[], Arg_2.1: f32[]) -> f32[8,1] {'" in examples(finding)[0]


def test_hosts_that_differ_in_metadata_only_agree(tmp_path):
    """The same program with its source places moved (a host whose code sits on other lines): the
    stack-frame tables and `metadata={...}` differ, the program does not."""
    for host in ("host_0", "host_1"):
        shutil.copytree(FLEET / host, tmp_path / host)
    for path in (tmp_path / "host_1").glob("*before_optimizations.txt"):
        text = path.read_text()
        moved = text.replace("line=", "line=1").replace("source_line=", "source_line=1")
        assert moved != text
        path.write_text(moved)
    assert host_disagreements(load_dump(tmp_path)) == []
    assert [f.check for f in diagnose(tmp_path).findings if f.check.startswith("host-")] == []


def test_hosts_with_another_number_of_compiles_disagree_too(tmp_path):
    for host in ("host_0", "host_1", "host_3"):
        shutil.copytree(FLEET / host, tmp_path / host)
    for path in (tmp_path / "host_3").glob("module_0004.*"):  # host_3 lost its second jit_train_step
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert host_disagreements(load_dump(tmp_path)) == [
        HostDisagreement("jit_train_step", None, ("host_0", "host_1"), ("host_3",), usual_count=2, odd_count=1)
    ]


def test_one_host_and_runs_to_compare_have_no_disagreement():
    assert host_disagreements(load_dump(FLEET / "host_2")) == []
    assert host_disagreements(load_dump([FLEET / "host_0", FLEET / "host_2"])) == []  # runs, not hosts


def test_count_recompiles_says_the_hosts_disagree():
    result = CliRunner().invoke(app, ["count-recompiles", str(FLEET)])
    assert result.exit_code == 0, result.output
    assert "on 4 hosts that DISAGREE on jit_train_step" in result.output
    assert "hosts disagree: jit_train_step compile 1: host_2 compiled another program than host_0, host_1, host_3" in (
        result.output
    )
    data = json.loads(CliRunner().invoke(app, ["count-recompiles", str(FLEET), "-f", "json"]).stdout)
    assert [(d["function"], d["compile"], d["odd_hosts"]) for d in data["host_disagreements"]] == [
        ("jit_train_step", 1, ["host_2"]),
        ("jit_train_step", 2, ["host_2"]),
    ]


def test_metadata_is_set_aside_up_to_its_closing_brace():
    """Instruction lines as XLA's HloInstruction::ToString prints them (hlo_instruction.cc: `, metadata={`
    with OpMetadata's fields, quoted strings escaped), and a stack-frame table (hlo_module.cc)."""
    lines = [
        b"FileNames",
        b'1 "a.py"',
        b"",
        b'  %add.1 = f32[] add(%a, %b), metadata={op_name="jit(f)/add{x}" source_file="a \\"b\\".py" source_line=3}',
        b'  %mul.2 = f32[] multiply(%a, %b), metadata={op_name="m"}, backend_config={}',
    ]
    assert program_lines(b"\n".join(lines)) == [
        b"",
        b"  %add.1 = f32[] add(%a, %b)",
        b"  %mul.2 = f32[] multiply(%a, %b), backend_config={}",
    ]


def test_a_renumbered_name_is_no_difference(tmp_path):
    """The same jit_scan_layers (fixtures/generate.py's loop_twins), lowered for an H200 (gpu_loop_twins)
    and for the CPU, laid out as two hosts: XLA numbers names per module, so line 11 reads
    `%constant.10 = s32[] constant(0)` on one and `%constant.9 = s32[] constant(0)` on the other, which
    is no difference; the first real one is the computation each prints at line 16."""
    for host, scenario in (("host_0", "gpu_loop_twins"), ("host_1", "loop_twins")):
        (tmp_path / host).mkdir()
        for path in (DUMPS / scenario).glob("module_0000.jit_scan_layers.*"):
            shutil.copy(path, tmp_path / host / path.name)
    (found,) = host_disagreements(load_dump(tmp_path))
    assert (found.function, found.compile, found.usual_hosts, found.odd_hosts, found.line) == (
        "jit_scan_layers",
        1,
        ("host_0",),
        ("host_1",),
        16,
    )
    assert found.usual_line.startswith("%dynamic_update_index_in_dim.2 (Arg_0.3: f32[4,32,128],")
    assert found.odd_line.startswith("%closed_call.2 (Arg_0.3: f32[32,128], Arg_1.3: f32[128,128])")


def test_a_host_program_that_cannot_be_read_is_named_not_compared_silently(tmp_path):
    """host_3's first program is gone (a link to a file a copy did not bring): it is compared with no host
    and count-recompiles names it as skipped (it was left out silently); the hosts that read still agree
    or differ as before."""
    dump = tmp_path / "fleet"
    shutil.copytree(FLEET, dump)
    damaged = dump / "host_3" / "module_0000.jit_train_step.before_optimizations.txt"
    damaged.unlink()
    damaged.symlink_to(tmp_path / "not copied")
    from xlainspect.analysis.commands.compiles import recompiles_report

    report = recompiles_report(dump)
    assert [s.path for s in report.skipped] == [damaged]
    skipped = []
    assert host_disagreements(load_dump(dump), skipped) == report.disagreements
    assert [s.path for s in skipped] == [damaged]


def test_a_host_that_hit_the_persistent_cache_is_compared_at_the_stage_both_dumped(tmp_path):
    """A host that loaded the executable from jax's persistent cache dumps its compiled module only (no
    before_optimizations) and prints it without the stack-frame tables: the hosts agree, where run2's
    compiled module was compared with run1's input (`is_scheduled=true` at line 1)."""
    hit, compiled = tmp_path / "run2", "module_0000.jit_train_step.cpu_after_optimizations.txt"
    shutil.copytree(DUMPS / "clean_run", tmp_path / "run1")
    hit.mkdir()
    lines = (DUMPS / "clean_run" / compiled).read_text().splitlines(keepends=True)
    tables = next(n for n, line in enumerate(lines) if line.startswith(("ENTRY", "%", "fused")))
    (hit / compiled).write_text("".join(lines[:2] + lines[tables:]))
    assert host_disagreements(load_dump(tmp_path)) == []
    assert [f.check for f in diagnose(tmp_path).findings if f.check == "host-programs"] == []


def test_hosts_without_a_stage_in_common_are_not_compared(tmp_path):
    """One host dumped only its input, the other only its compiled module: no stage to compare at."""
    for host, stage in (("a", "before_optimizations"), ("b", "cpu_after_optimizations")):
        (tmp_path / host).mkdir()
        name = f"module_0000.jit_train_step.{stage}.txt"
        shutil.copy(DUMPS / "clean_run" / name, tmp_path / host / name)
    assert host_disagreements(load_dump(tmp_path)) == []
    found = [(f.check, f.count, f.examples) for f in diagnose(tmp_path).findings if f.check.startswith("host-")]
    assert found == [
        (
            "host-programs-uncompared",
            2,
            (
                "a/module_0000.jit_train_step.before_optimizations.txt",
                "b/module_0000.jit_train_step.cpu_after_optimizations.txt",
            ),
        )
    ]
