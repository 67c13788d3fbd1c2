"""`report`'s time sections: step time per function (measured with --profile, else the roofline estimate),
ops by time lost, compile time (profile, jax log or the dump's order), each number equal to what
`profile`, `cost` and the jax log say. Real inputs: the committed profile_steps (CPU) and gpu_profile
(H200) dumps and traces, and the cache runs' jax log."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import DUMPS, FIXTURES
from typer.testing import CliRunner

from xlainspect.analysis.commands.cost import cost_report
from xlainspect.analysis.commands.profile import profile_report
from xlainspect.analysis.commands.report import dump_facts, report_of
from xlainspect.analysis.timing import OpTiming, log_compiles
from xlainspect.cli.app import app
from xlainspect.dump.directory import load_dump
from xlainspect.dump.jaxlog import JaxLog, parse_jax_log, read_jax_log
from xlainspect.report import dump_report as reports
from xlainspect.report.page import render_html, render_markdown
from xlainspect.report.sections import A_RUN, A_STEP, StepBars, StepBreakdown
from xlainspect.report.views import compiles as compiles_view
from xlainspect.report.views import time as time_view
from xlainspect.report.views.cost import duration
from xlainspect.report.views.profile import step_headline

TRACE = FIXTURES / "profiles" / "profile_steps"
CACHE_RUN = FIXTURES / "cache" / "runs" / "1_cold"
GPU_DUMP, GPU_TRACE = DUMPS / "gpu_profile", FIXTURES / "profiles" / "gpu_profile"


def _report(path, **options):
    """The report the `report` command writes of the dump at `path`."""
    return reports.dump_report(report_of(path, **options))


def _section(report, key: str):
    return next(s for s in report.sections if s.key == key)


def test_measured_step_time_is_the_profiles_time_per_step():
    report = _report(DUMPS / "profile_steps", profile=TRACE)
    time = _section(report, "time")
    (row,) = time.tables[0].rows
    profiled = profile_report(TRACE, DUMPS / "profile_steps")
    (function,) = profiled.functions
    steady = [s for step, s in zip(profiled.steps, function.seconds_by_step, strict=True) if not step.compiles]
    per_step = sum(steady) / len(steady)  # steps 0 and 3 compiled: the first runs, 26 ms, are left out
    assert function.seconds_per_step == pytest.approx(per_step)
    assert row[:3] == ("jit_train_step", pytest.approx(per_step * 1e6), "measured")
    assert row[0:1] + (round(row[1], 2),) == ("jit_train_step", 67.11)  # 4 of the trace's 6 steps
    assert "module" not in time.tables[0].columns  # measured over every module of the function
    assert row[5:] == (2, pytest.approx(0.427045317), pytest.approx(0.202601404), 57860)
    assert time.intro.startswith("Measured in the profile (6 steps): the step is its wall, the device's time in it")
    assert "0.43 s compiling (profile). Memory peaks at 57,860 bytes in module_0000.jit_train_step." in time.intro
    # the recompile folds to one line on the first screen; its values are in the recompiles section
    assert time.brief == [
        ("jit_train_step: 2 compiles (0.20 s again): shape of 2 parameters", "function-jit_train_step")
    ]
    (recompiled,) = [row for row in _section(report, "recompiles").tables[0].rows if row[0] == "jit_train_step"]
    assert recompiled[5] == "shape x dim 0: 32 -> 16; shape y dim 0: 32 -> 16"


def test_a_compile_in_the_profile_is_on_the_timeline_with_its_seconds():
    report = _report(DUMPS / "profile_steps", profile=TRACE)
    (timeline,) = _section(report, "compiles").charts
    assert timeline.source == "profile"
    profiled = profile_report(TRACE, DUMPS / "profile_steps")
    assert [(m.start_seconds, m.seconds, m.recompile) for m in timeline.marks] == [
        (c.start_seconds, c.seconds, i > 0) for i, c in enumerate(profiled.compiles)
    ]
    finding = next(f for f in report.findings() if f.section == "recompiles")
    assert (finding.unit, finding.cost) == (A_RUN, pytest.approx(0.202601404))
    assert finding.source == "fixtures/generate.py:347"


def test_the_jax_log_in_the_dump_puts_compiles_on_its_clock():
    report = _report(CACHE_RUN)
    compiles = _section(report, "compiles")
    (timeline,) = compiles.charts
    logged = read_jax_log(CACHE_RUN).compiles
    assert timeline.source == "log_clock"
    assert [(m.function, m.seconds) for m in timeline.marks] == [(c.module, c.seconds) for c in logged]
    assert [m.recompile for m in timeline.marks] == [False, False, True, False, False]
    # jit_predict's recompile ended at 03:04:26,462 after 0.091049433 s; the first compile began at
    # 03:04:26,266 - 0.146325111 s
    assert timeline.marks[2].start_seconds == pytest.approx(0.462 - 0.091049433 - 0.266 + 0.146325111)
    assert compiles.intro == "5 compiles (4.12 s in all, from the jax log); red bars are recompiles."
    assert report.findings()[0].text == "jit_predict compiled 2 times: shape #1 dim 0: 8 -> 16"
    assert report.findings()[0].cost == pytest.approx(0.091049433)


def test_a_log_without_times_lays_compiles_back_to_back():
    """JAX_LOG_COMPILES lines as another handler may format them: the message alone (from jax's
    dispatch.py: "Finished XLA compilation of {fun_name} in {elapsed_time} sec")."""
    text = "Finished XLA compilation of jit(f) in 0.5 sec\nFinished XLA compilation of jit(f) in 0.25 sec\n"
    marks, source = log_compiles(JaxLog(Path("jax.log"), parse_jax_log(text)))
    assert source == "log_order"
    assert [(m.function, m.start_seconds, m.seconds, m.recompile) for m in marks] == [
        ("jit_f", 0.0, 0.5, False),
        ("jit_f", 0.5, 0.25, True),
    ]


def test_the_dump_alone_orders_compiles_without_seconds():
    report = _report(DUMPS / "ragged_batch")
    (timeline,) = _section(report, "compiles").charts
    assert timeline.source == "dump"
    assert [(m.function, m.start_seconds, m.seconds, m.recompile) for m in timeline.marks] == [
        ("jit_train_step", 0.0, None, False),  # module_0000
        ("jit_train_step", 1.0, None, True),  # module_0002
        ("jit_eval_step", 2.0, None, False),
        ("jit_eval_step", 3.0, None, True),
    ]
    assert "No step time: the dump does not name a GPU" in _section(report, "time").intro
    svg = render_html(report)
    assert "compile order (module ids; the dump holds no times: pass --log or --profile)" in svg
    assert report.findings()[0].unit == "compiles"  # no seconds known: counted


def test_page_speaks_words_not_python_literals():
    page = render_html(_report(DUMPS / "eager_flood"))
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", page)
    assert "yes" in cells and "True" not in cells and "False" not in cells
    assert "True" not in render_markdown(_report(DUMPS / "eager_flood"))


def test_what_to_do_follows_the_ops_kind():
    def op(kind: str, **kw) -> OpTiming:
        fields = {"flops": 0.0, "bytes": 100, "logical_bytes": 100, "roofline_seconds": 1e-6}
        fields |= {"memory_seconds": 1e-6, "collective_seconds": None, "bound": "memory"} | kw
        return OpTiming("m", "f", "c", "x", kind, **fields)

    assert op("all-reduce", bound="collective", collective_seconds=2e-6).category == "collective"
    assert op("collective-permute-done", bytes=400).category == "collective"  # the pair's second half
    assert op("copy").category == "layout copy" and op("copy").roofline_loss() == 1e-6
    assert op("add").category == "fusion missed" and op("add").roofline_loss() == 1e-6
    assert op("dot").category is None  # a library call of its own, fused or not
    assert op("kLoop").category is None and op("kLoop").roofline_loss() == 0.0
    padded = op("kLoop", bytes=400, logical_bytes=100)
    assert padded.category == "padding" and padded.roofline_loss() == pytest.approx(0.75e-6)


def test_report_takes_profile_and_log_on_the_command_line(tmp_path):
    page = tmp_path / "r.html"
    args = ["report", str(DUMPS / "profile_steps"), "--profile", str(TRACE), "--html", str(page)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert text.index("<section id='time'>") < text.index("<section id='summary'>")  # the first screen
    assert "data-chart='step-breakdown'" in text and "data-chart='compile-timeline'" in text
    peak = "<a href='#memory-module_0000.jit_train_step'>memory curve of module_0000.jit_train_step, the peak</a>"
    assert peak in text and "<section id='memory-module_0000.jit_train_step'>" in text
    bad = CliRunner().invoke(app, ["report", str(DUMPS / "profile_steps"), "--log", "/nonexistent.log", "--html", "-"])
    assert bad.exit_code == 2 and "/nonexistent.log: no jax log" in bad.output
    args = ["report", str(DUMPS / "profile_steps"), "--profile", str(DUMPS / "profile_steps"), "--html", "-"]
    bad = CliRunner().invoke(app, args)
    assert bad.exit_code == 2 and "no *.xplane.pb file under it" in bad.output and "Traceback" not in bad.output


def _module_id(cost) -> int:
    return int(cost.module.partition(".")[0].removeprefix("module_"))


def test_gpu_roofline_estimate_is_costs_roofline_of_the_last_module():
    report = _report(GPU_DUMP)
    rows = {r[0]: r for r in _section(report, "time").tables[0].rows}
    costed = cost_report(GPU_DUMP, top=None)
    last = max((m for m in costed.modules if m.function == "jit_train_step"), key=_module_id)
    assert rows["jit_train_step"][1:4] == (pytest.approx(last.roofline_seconds * 1e6), "roofline estimate", last.module)
    assert f"Roofline estimate on {last.chip}, not measured" in _section(report, "time").intro
    (roofline,) = _section(report, "roofline").charts
    ops = {(op.module, op.name): op for m in costed.modules for op in m.ops}
    for point in roofline.ops:
        cost = ops[(point.module, point.name)]
        assert point.intensity == pytest.approx(cost.arithmetic_intensity)
        assert point.flops_per_second == pytest.approx(cost.flops / cost.roofline_seconds)


def test_gpu_findings_link_each_op_to_its_hlo_lines_and_source():
    report = _report(GPU_DUMP, profile=GPU_TRACE)
    time = _section(report, "time")
    timed = [f for f in report.findings() if f.op]  # the ops'; the idle host's has no op
    assert timed == [f for f in time.findings if f.op] and len(timed) == 10
    assert all(f.unit == A_STEP and f.run_seconds for f in timed)
    assert [f.run_seconds for f in timed] == sorted((f.run_seconds for f in timed), reverse=True)
    details = {d.anchor: d for d in time.details}
    for finding in timed:
        detail = details[finding.op]
        path = Path(detail.path)
        text = path.read_text().splitlines()
        (centre,) = [(n, line) for n, line, is_op in detail.lines if is_op]
        assert text[centre[0] - 1].strip() == centre[1] and f"%{detail.name} = " in centre[1]
        assert all(text[n - 1].strip() == line for n, line, _ in detail.lines)
        assert finding.text.startswith(f"{detail.module} {detail.name} (")
        assert finding.source == detail.source
    page = render_html(report)
    first = timed[0]
    assert f"<a href='#{first.op}'>" in page and f"<details class='op' id='{first.op}' open>" in page
    markdown = render_markdown(report)
    assert (
        "## Where the time goes" in markdown and f"**{details[first.op].module} {details[first.op].name}**" in markdown
    )


def test_every_link_on_the_page_has_its_target():
    page = render_html(_report(GPU_DUMP, profile=GPU_TRACE))
    targets = set(re.findall(r"id='([^']+)'", page))
    links = set(re.findall(r"href='#([^']+)'", page))
    assert links and links <= targets, sorted(links - targets)[:5]


def test_a_copy_says_what_it_moves():
    """tpu_v5e's jit_dots moves values between HBM and VMEM (the copies analysis reads the memory spaces)."""
    texts = [f.text for f in _report(DUMPS / "tpu_v5e").findings() if f.unit == A_STEP]
    assert (
        "module_0219.jit_dots copy.4 (copy): copy between memory spaces (S(1)->S(0) (HBM (default))): "
        "a prefetch or offload, lost where it does not overlap compute"
    ) in texts


def test_a_profile_of_another_run_is_said_so():
    report = _report(DUMPS / "eager_flood", profile=TRACE)
    assert "none of the traced modules is in this dump (module ids and names differ)" in _section(report, "time").intro


def test_a_trace_that_starts_after_the_first_compile_marks_the_next_a_recompile():
    """gpu_profile compiled jit_train_step before the trace and again inside step 3: the dump holds both,
    the trace the second, which is the recompile."""
    report = _report(GPU_DUMP, profile=GPU_TRACE)
    (timeline,) = _section(report, "compiles").charts
    (train,) = [m for m in timeline.marks if m.function == "jit_train_step"]
    assert train.recompile and train.seconds == pytest.approx(2.759099201)
    finding = next(f for f in report.findings() if f.text.startswith("jit_train_step compiled 2 times"))
    assert (finding.unit, finding.cost) == (A_RUN, pytest.approx(2.759099201))


def test_the_timeline_draws_the_functions_with_the_most_compile_time(monkeypatch):
    monkeypatch.setattr(compiles_view, "TIMELINE_LANES", 2)
    report = reports.dump_report(dump_facts(load_dump(CACHE_RUN), log=read_jax_log(CACHE_RUN)))  # not the cached one
    compiles = _section(report, "compiles")
    (timeline,) = compiles.charts
    assert [m.function for m in timeline.marks] == ["jit_predict", "jit_predict", "jit_deep"]  # 3.70 s, 0.17 s
    assert compiles.intro.endswith("The timeline draws the 2 functions with the most compile time of 4.")


def test_the_step_chart_says_how_many_functions_it_leaves_out(monkeypatch):
    monkeypatch.setattr(time_view, "CHART_FUNCTIONS", 1)
    report = reports.dump_report(dump_facts(load_dump(GPU_DUMP), trace=GPU_TRACE))  # not the cached one
    (chart,) = [c for c in _section(report, "time").charts if isinstance(c, StepBreakdown)]
    assert [f.function for f in chart.functions] == ["jit_train_step"] and chart.of == 4
    assert "<h3>Device time a step per function, by op kind (the 1 slowest of 4)</h3>" in render_html(report)


def test_the_first_line_is_the_step_the_user_waits_for_as_profile_says_it():
    """The report's headline is `profile`'s first line, of the same median step (issue 39 item 2)."""
    report = _report(GPU_DUMP, profile=GPU_TRACE)
    time = _section(report, "time")
    profiled = profile_report(GPU_TRACE, GPU_DUMP)
    assert time.headline == step_headline(profiled).replace("; device busy ", "; GPU busy ", 1)
    summary = profiled.step_summary
    assert summary is not None and time.headline.startswith(f"{summary.function}: ")
    (bars,) = [c for c in time.charts if isinstance(c, StepBars)]
    assert bars.median_step == summary.median_step and bars.device == "GPU"
    assert [(s.number, s.wall_seconds, s.breakdown) for s in bars.steps] == [
        (s.number, s.wall_seconds, s.breakdown) for s in profiled.steps
    ]
    assert list(bars.categories) == [
        "compute",
        "collectives",
        "copies",
        "compile",
        "autotune",
        "input",
        "launch",
        "host",
    ]


def test_nx_its_roofline_is_the_profiles_efficiency_inverted():
    """CuDNN calls launch several kernels: the report divides by executions, as `profile`'s efficiency
    does, so "N x its roofline" x efficiency = 1 (issue 39 item 3)."""
    report = _report(GPU_DUMP, profile=GPU_TRACE)
    profiled = {(op.module, op.name): op for op in profile_report(GPU_TRACE, GPU_DUMP).ops}
    said = 0
    for finding in report.findings():
        found = re.search(r"^(\S+) (\S+) \(.*takes ([\d,.]+)x its roofline time", finding.text)
        if found is None:
            continue
        efficiency = profiled[(found[1], found[2])].efficiency
        assert efficiency is not None
        times = float(found[3].replace(",", ""))
        assert times * efficiency == pytest.approx(1, rel=0.05 if times < 10 else 0.5 / times)
        said += 1
    assert said >= 3
    (table,) = _section(report, "roofline").tables
    assert {"lost_us_per_step", "measured_us_per_step", "roofline_us_per_execution", "efficiency"} <= set(table.columns)
    at = table.columns.index("efficiency")
    for row in table.rows:
        assert row[at] == profiled[(row[0], row[1])].efficiency


def test_findings_rank_in_seconds_a_run_compiles_idle_host_and_ops_together():
    """Every time finding is seconds a step or a run, said which, ranked by what the traced run paid:
    the recompile's 2.76 s, the host's idle time over the steps, an op's loss over the trace (item 5)."""
    report = _report(GPU_DUMP, profile=GPU_TRACE)
    findings = report.findings()
    timed = [f for f in findings if f.unit in (A_STEP, A_RUN)]
    assert findings[: len(timed)] == timed and all(f.run_seconds is not None for f in timed)
    assert [f.run_seconds for f in timed] == sorted((f.run_seconds for f in timed), reverse=True)
    profiled = profile_report(GPU_TRACE, GPU_DUMP)
    (host,) = [f for f in timed if f.text.startswith("idle, host: ")]
    assert host.unit == A_STEP
    assert host.cost == profiled.step_summary.typical.breakdown["host"]
    assert host.run_seconds == pytest.approx(sum(s.breakdown["host"] for s in profiled.steps))
    recompile = next(f for f in timed if f.section == "recompiles")
    assert (recompile.unit, recompile.run_seconds) == (A_RUN, pytest.approx(2.759099201))
    ops = {(op.module, op.name): op for op in profiled.ops}
    for finding in (f for f in timed if f.op):
        module, name = finding.text.split(" ")[:2]
        assert finding.run_seconds == pytest.approx(ops[(module, name)].lost_seconds)
    page = render_html(report)
    assert f"<td>{duration(recompile.cost)} a run</td>" in page
    assert f"<b>{duration(host.cost)} a step ({duration(host.run_seconds)} a run)</b>" in page
