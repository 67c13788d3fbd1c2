"""`xlainspect report`: one report of a whole dump, from the same analyses as the other commands."""

from __future__ import annotations

import pytest
from conftest import DUMPS
from typer.testing import CliRunner

from xlainspect.analysis import runner
from xlainspect.analysis.commands import report as report_command
from xlainspect.analysis.commands.report import dump_facts
from xlainspect.cli.app import app
from xlainspect.dump.directory import load_dump
from xlainspect.report import dump_report as reports
from xlainspect.report import sections
from xlainspect.report.page import render_html, render_markdown
from xlainspect.report.sections import A_STEP
from xlainspect.report.views import memory as memory_view

SECTIONS = ["time", "compiles", "recompiles", "memory", "padding", "fusions", "copies", "collectives"]


def _report(name: str):
    return reports.dump_report(dump_facts(load_dump(DUMPS / name)))


def test_findings_are_ranked_extra_compiles_first_then_bytes():
    report = _report("tpu_v5e")
    # the roofline section needs a chip: a TPU dump's, where `cost` reads it from the dump
    assert [s.key for s in report.sections if s.key != "roofline"] == SECTIONS
    findings = report.findings()
    timed = [f for f in findings if f.unit == A_STEP]  # no profile: seconds a step, ranked apart from a run's
    assert findings[: len(timed)] == timed
    findings = findings[len(timed) :]
    assert findings[0].section == "recompiles" and findings[0].cost == 11 and findings[0].unit == "compiles"
    assert findings[0].text.startswith("jit_layouts compiled 12 times: compiles 2-12: dtype (all parameters): bf16")
    assert "; compile 5: shape (parameter count): 15 -> " in findings[0].text
    byte_costs = [f.cost for f in findings[1:]]
    assert byte_costs == sorted(byte_costs, reverse=True)
    assert findings[1].text == "jit_layouts loses 1,329,275 bytes to tile padding (2.58x)"


def test_recompiles_link_each_function_to_its_modules():
    report = _report("ragged_batch")
    (table,) = next(s for s in report.sections if s.key == "recompiles").tables
    assert table.rows[0][:3] == ("jit_train_step", 2, ("module_0000.jit_train_step", "module_0002.jit_train_step"))
    page = render_html(report)
    assert "<tr id='function-jit_train_step'>" in page
    assert "<a href='#module-module_0002.jit_train_step'>module_0002.jit_train_step</a>" in page
    assert "<tr id='module-module_0002.jit_train_step'>" in page  # the modules table is the link's target
    assert "http://" not in page and "https://" not in page and "src=" not in page  # self-contained


def test_collectives_and_eager_flood_findings():
    collectives = {f.text for f in _report("collectives_cpu").findings()}
    assert "module_0002.jit_ring_body: all-reduce x1 sends 1,120 bytes a step" in collectives
    flood = _report("eager_flood").findings()
    assert flood[0].cost == 17  # every eager compile: jitting the surrounding code removes them all
    assert flood[0].text.startswith("17 compiles of eager jax ops (jit_stage x2, jit_multiply x2,")
    assert "called at fixtures/generate.py:296, :297" in flood[0].text


def test_a_builder_appended_to_the_hook_becomes_a_section(monkeypatch):
    def cost_section(source):
        return sections.Section(
            "cost",
            "Cost",
            f"{len(source.readable)} modules",
            [sections.table("flops", ("module", "flops"), [("module_0000.jit_train_step", 7)])],
            [sections.Finding("cost", "slow", 10**9, "bytes")],
        )

    monkeypatch.setattr(reports, "SECTION_BUILDERS", [*reports.SECTION_BUILDERS, cost_section])
    report = _report("ragged_batch")
    assert [s.key for s in report.sections] == [*SECTIONS, "cost"]
    assert report.findings()[2].section == "cost"  # after the two recompiles, the largest bytes
    assert "<section id='cost'><h2>Cost</h2><p class='intro'>4 modules</p>" in render_html(report)


def test_large_tables_are_sampled_with_a_note(monkeypatch):
    monkeypatch.setattr(sections, "MAX_ROWS", 5)
    monkeypatch.setattr(memory_view, "MAX_CURVES", 2)
    report = _report("tpu_v5e")
    copies = next(s for s in report.sections if s.key == "copies")
    assert len(copies.tables[1].rows) == 5
    assert copies.tables[1].note == "showing 5 of 214 rows; xlainspect copies lists every copy"
    memory = next(s for s in report.sections if s.key == "memory")
    assert len(memory.memory) == 2 and "curves of the 2 highest peaks of 7 with live ranges" in memory.intro
    assert "showing 5 of 214 rows" in render_markdown(report)


def test_cli_writes_html_and_markdown(tmp_path):
    page, text = tmp_path / "r.html", tmp_path / "r.md"
    result = CliRunner().invoke(
        app, ["report", str(DUMPS / "ragged_batch"), "--html", str(page), "--markdown", str(text)]
    )
    assert result.exit_code == 0, result.output
    assert all(f"<section id='{key}'>" in page.read_text() for key in SECTIONS)
    markdown = text.read_text()
    assert markdown.splitlines()[4] == (
        "1. **1 extra compile** (recompiles): jit_train_step compiled 2 times: "
        "shape x dim 0: 100 -> 5; shape y dim 0: 100 -> 5 (`fixtures/generate.py:153`)"
    )
    assert "| jit_train_step | 2 | module_0000.jit_train_step, module_0002.jit_train_step |" in markdown


def test_cli_markdown_to_stdout():
    result = CliRunner().invoke(app, ["report", str(DUMPS / "clean_run"), "--markdown", "-"])
    assert result.exit_code == 0 and result.stdout.startswith("# xlainspect report: ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["report", str(DUMPS / "ragged_batch")], "--html FILE and/or --markdown FILE"),
        (["report", "/nonexistent/dump", "--html", "x.html"], "/nonexistent/dump: no such file or directory"),
        (["report", str(DUMPS / "ragged_batch"), "--html", "/nonexistent/dir/x.html"], "cannot write the report"),
    ],
)
def test_cli_bad_input_exits_2(args, message):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_a_page_over_the_limit_leaves_curves_out_with_a_note():
    report = _report("tpu_v5e")
    full = render_html(report)
    assert full.count("<polyline class='curve'") == 7
    smaller = render_html(report, limit=len(full.encode()) - 1)
    assert smaller.count("<polyline class='curve'") == 3  # 7 -> 3 curves
    assert "4 more memory curves left out to keep the page under 5 MB" in smaller


def test_workers_find_the_same_report_as_one_process(tmp_path, monkeypatch):
    """Where xlainspect owns the process, forked workers share the modules: the report, skipped files
    (a truncated module, an unreadable buffer assignment) in order included, is the one-process one."""
    import shutil

    from xlainspect import settings

    dump = tmp_path / "dump"
    shutil.copytree(DUMPS / "tpu_v5e", dump)
    hlo = next(dump.glob("module_0085.*.after_optimizations.txt"))
    hlo.write_text(hlo.read_text()[:200])
    next(dump.glob("module_0219.*.after_optimizations-buffer-assignment.txt")).write_text("garbage\n")
    monkeypatch.setattr(settings, "_cache_enabled", False)  # the workers analyse, not read the first run's facts
    monkeypatch.setattr(settings, "_parse_workers", 1)
    serial = reports.dump_report(dump_facts(load_dump(dump)))
    monkeypatch.setattr(settings, "_parse_workers", 2)
    monkeypatch.setattr(runner, "SHARE_MIN_MODULES", 2)
    monkeypatch.setattr(report_command, "SHARE_MIN_MODULES", 2)
    monkeypatch.setattr(report_command, "CHUNK_MODULES", 2)
    advanced = []
    parallel = reports.dump_report(dump_facts(load_dump(dump), lambda _stage, _total=None: advanced.append))
    skipped = [s.path.name.split(".")[0] for s in parallel.skipped]
    assert skipped == ["module_0085", "module_0219", "module_0085"]  # the last from the recompiles section
    assert parallel == serial and render_html(parallel) == render_html(serial)
    assert sum(advanced) == len(load_dump(dump).modules) == 18


def test_recompiles_fold_to_one_line_per_function_on_the_first_screen():
    """What changed, without the values (the recompiles section keeps them), each line linked to it."""
    (time,) = [s for s in _report("tpu_v5e").sections if s.key == "time"]
    assert time.brief == [("jit_layouts: 12 compiles: the number of parameters, dtype", "function-jit_layouts")]
    (time,) = [s for s in _report("same_signature").sections if s.key == "time"]
    assert time.brief[:2] == [
        ("jit_layer: 2 compiles: a Python branch on a static argument", "function-jit_layer"),
        ("jit_scale: 2 compiles: identical programs", "function-jit_scale"),
    ]
    assert time.brief[4:] == [
        ("and 3 more recompiled functions", "recompiles"),
        ("eager jax ops: 7 compiles of 5 functions", "recompiles"),
    ]
    page = render_html(_report("same_signature"))
    assert "<li><a href='#function-jit_scale'>jit_scale: 2 compiles: identical programs</a></li>" in page
