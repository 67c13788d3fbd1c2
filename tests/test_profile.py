"""`profile`: the jax.profiler trace of fixtures/profiles/profile_steps (6 steps of a jitted train_step,
recompiled in step 3; made by `python fixtures/generate.py profile_steps`) read, joined with its dump and
gated. Times vary between runs: the tests assert counts, names, steps and consistency, never durations."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import DUMPS, FIXTURES
from typer.testing import CliRunner

from xlainspect.analysis.chips import custom_chip
from xlainspect.analysis.commands.profile import profile_report
from xlainspect.analysis.profile import compile_seconds, compiles_after, profile
from xlainspect.cli.app import app
from xlainspect.dump.directory import load_dump
from xlainspect.dump.xplane import find_trace_files, read_trace
from xlainspect.errors import XlaInspectError
from xlainspect.report.views.profile import profile_document, step_source_text

TRACE = FIXTURES / "profiles" / "profile_steps"
DUMP = DUMPS / "profile_steps"
SCENARIO = json.loads((DUMPS / "profile_steps.compiles.json").read_text())
#: The ops of one execution of train_step on XLA:CPU (thunks), as the after-optimizations modules name them.
OPS = {
    "bitcast_bitcast_fusion.1",
    "ynn_fusion",
    "wrapped_tanh",
    "dot.4",
    "multiply_add_fusion",
    "reduce_multiply_fusion",
    "dot.5",
    "multiply_subtract_fusion",
    "dot.2",
    "bitcast_subtract_fusion",
}


@pytest.fixture(scope="module")
def trace():
    return read_trace(TRACE)


@pytest.fixture(scope="module")
def report(trace):
    return profile(trace, load_dump(DUMP), custom_chip(1e12, 1e11, None))


def _cli(*args):
    return CliRunner().invoke(app, ["profile", *map(str, args)])


def test_a_log_dir_finds_its_run_and_the_perfetto_trace_finds_its_xspace():
    [xspace] = find_trace_files(TRACE)
    assert xspace.name == "vm.xplane.pb" and xspace.parent.parent.name == "profile"
    assert find_trace_files(next(xspace.parent.glob("perfetto_trace.json.gz"))) == [xspace]


def test_steps_come_from_the_step_markers(report):
    assert report.step_source == "step markers"
    assert [s.number for s in report.steps] == list(range(6))
    assert all(s.wall_seconds > 0 for s in report.steps)
    assert all(a.start_seconds + a.wall_seconds <= b.start_seconds for a, b in zip(report.steps, report.steps[1:]))


def test_each_op_runs_once_per_step_in_the_module_compiled_for_its_batch(report):
    by_module = {}
    for op in report.ops:
        by_module.setdefault(op.module, {})[op.name] = op.kernels
    assert set(by_module) == {"module_0000.jit_train_step", "module_0002.jit_train_step"}
    for counts in by_module.values():
        assert set(counts) >= OPS - {"dot.2"} or set(counts) >= OPS - {"bitcast_subtract_fusion"}
        assert set(counts.values()) == {3}  # steps 0-2 batch 32 (module 0), steps 3-5 batch 16 (module 2)
    dot4 = [op for op in report.ops if op.name == "dot.4"]
    assert sum(op.kernels for op in dot4) == len(report.steps)


STEADY = (1, 2, 4, 5)
"""profile_steps' steps without a compile: each module runs in 3 of the 6 steps, and compiles in its first."""


def test_times_are_consistent(report):
    """A step is over the steps without a compile (2 of each module's 3): the compile's step, whose first
    runs are slower, is in `total_seconds` only."""
    busy = sum(report.steps[k].busy_seconds for k in STEADY)
    assert all(0 < s.busy_seconds < s.wall_seconds and s.kernels == 11 for s in report.steps)
    events = report.op_events
    for op in report.ops:
        assert 0 < op.min_kernel_seconds <= op.median_kernel_seconds <= op.max_kernel_seconds <= op.total_seconds
        mine = (events.label == events.code(op.module)) & (events.op == events.code(op.name))
        steady = float(events.duration_ns[mine & np.isin(events.step, STEADY)].sum()) / 1e9
        assert op.steps == 2 and op.seconds_per_step == pytest.approx(steady / 2)
        assert op.total_seconds > steady and op.step_share == pytest.approx(steady / busy)
        assert op.kernels_per_step == 1 and op.seconds_per_execution == pytest.approx(op.seconds_per_step)
    assert sum(op.step_share for op in report.ops) == pytest.approx(1)  # one thunk at a time on XLA:CPU


def test_the_dump_gives_each_op_its_cost_and_roofline(report):
    assert report.joined == ["module_0000.jit_train_step", "module_0002.jit_train_step"]
    dot = next(op for op in report.ops if op.module == "module_0000.jit_train_step" and op.name == "dot.4")
    assert (dot.kind, dot.flops) == ("dot", 2 * 32 * 64)  # f32[32,64] x f32[64,1]
    assert dot.roofline_seconds > 0 and dot.efficiency == pytest.approx(dot.roofline_seconds / dot.seconds_per_step)
    assert dot.lost_seconds == pytest.approx(dot.total_seconds - 3 * dot.roofline_seconds)
    tanh = next(op for op in report.ops if op.name == "wrapped_tanh")
    assert tanh.op_name == "jit(train_step)/jvp()/tanh" and tanh.kind == "kLoop"
    lost = [op.lost_seconds for op in report.ops]
    assert lost == sorted(lost, reverse=True)


def test_compiles_fall_in_steps_0_and_3(report):
    assert [(c.name, c.function, c.step, c.thread, c.module) for c in report.compiles] == [
        ("backend_compile_and_load", "jit_train_step", 0, "python", "module_0000.jit_train_step"),
        ("backend_compile_and_load", "jit_train_step", 3, "python", "module_0002.jit_train_step"),
    ]
    assert all(c.seconds > 0 for c in report.compiles)
    assert [c.step for c in compiles_after(report.compiles, 2)] == [3] and compiles_after(report.compiles, 3) == []
    assert len(compile_seconds(report.compiles)["jit_train_step"]) == SCENARIO["backend_compiles"]["jit_train_step"]


def test_every_event_equals_jaxlibs_reader(trace):
    """The declared schema reads what XLA's own C++ reader (jax.profiler.ProfileData) reads: every timed
    event (instant events, the thread pool's hand-off markers, are left out)."""
    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed")
    script = (
        "import sys, json\nfrom jax.profiler import ProfileData\n"
        "data = ProfileData.from_file(sys.argv[1])\n"
        "print(json.dumps(sorted([line.name, e.name, round(e.duration_ns), sorted(k for k, _ in e.stats)] "
        "for p in data.planes for line in p.lines for e in line.events if e.duration_ns > 0)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(trace.paths[0])], capture_output=True, text=True, check=True
    )
    theirs = json.loads(done.stdout)
    ours = sorted([e.line, e.name, round(e.duration_ns), sorted(e.stats)] for e in trace.events)
    assert len(ours) == len(theirs) > 1000
    assert [o[:3] for o in ours] == [t[:3] for t in theirs]


def test_cli_gate_exits_1_for_a_compile_after_step_2():
    failed = _cli(TRACE, "--max-compiles-after-step", "2", "--format", "json")
    assert failed.exit_code == 1, failed.output
    assert "compiled after step 2: jit_train_step at step 3" in failed.stderr
    document = json.loads(failed.stdout)
    assert document["violations"] and [c["step"] for c in document["compiles"]] == [0, 3]
    assert _cli(TRACE, "--max-compiles-after-step", "3").exit_code == 0


def test_cli_json_with_dump_and_chip():
    result = _cli(TRACE, "--dump", DUMP, "--peak-flops", "1e12", "--hbm-bandwidth", "1e11", "--top", "0", "-f", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert len(document["steps"]) == 6 and document["joined"] == [
        "module_0000.jit_train_step",
        "module_0002.jit_train_step",
    ]
    assert all(op["roofline_seconds"] is not None for op in document["ops"])


def test_a_custom_chip_s_figures_are_not_answered_from_another_s_cached_costs():
    """Every `--peak-flops`/`--hbm-bandwidth` chip is keyed `custom`: the per-module results cache must
    tell them apart (it once gave the first run's roofline to a second run with 5x the bandwidth)."""

    def roofline(bandwidth: str) -> dict:
        result = _cli(
            TRACE, "--dump", DUMP, "--peak-flops", "1e12", "--hbm-bandwidth", bandwidth, "--top", "0", "-f", "json"
        )
        assert result.exit_code == 0, result.output
        return {(op["module"], op["name"]): op["roofline_seconds"] for op in json.loads(result.stdout)["ops"]}

    slow, fast = roofline("2e10"), roofline("1e11")
    memory_bound = [key for key in slow if slow[key] and slow[key] == pytest.approx(5 * fast[key])]
    assert ("module_0000.jit_train_step", "bitcast_subtract_fusion") in memory_bound


def test_cli_table_without_dump_and_a_function_that_matches_nothing():
    table = _cli(TRACE)
    assert (
        table.exit_code == 0 and "6 steps (step markers)" in table.stdout and "backend_compile_and_load" in table.stdout
    )
    missing = _cli(TRACE, "--function", "jit_nothing")
    assert missing.exit_code == 2 and "--function jit_nothing: no op or compile of it" in missing.stderr


@pytest.mark.parametrize("content", [b"", b"\x00\x01\x02garbage\xff\xff", b"HloModule m\n", b"\x0a\x00"])
def test_damaged_or_foreign_files_are_input_errors(tmp_path, content):
    bad = tmp_path / "host.xplane.pb"
    bad.write_bytes(content)
    with pytest.raises(XlaInspectError, match="host.xplane.pb: not an XPlane profile"):
        read_trace(bad)
    result = _cli(bad)
    assert result.exit_code == 2 and "not an XPlane profile" in result.stderr and "Traceback" not in result.output


def test_a_truncated_trace_is_an_input_error(tmp_path):
    data = next(TRACE.rglob("*.xplane.pb")).read_bytes()
    cut = tmp_path / "cut.xplane.pb"
    cut.write_bytes(data[: len(data) // 2])
    result = _cli(cut)
    assert result.exit_code == 2 and "cut.xplane.pb: not an XPlane profile" in result.stderr


def test_paths_without_a_trace(tmp_path):
    assert "no *.xplane.pb file under it" in _cli(tmp_path).stderr
    other = tmp_path / "notes.txt"
    other.write_text("x")
    result = _cli(other)
    assert result.exit_code == 2 and "not a jax.profiler trace" in result.stderr


def test_without_protobuf_the_command_says_what_to_install():
    script = (
        "import sys; sys.modules['google.protobuf'] = None\n"
        "from xlainspect.cli import main; sys.argv = ['xlainspect', 'profile', sys.argv[1]]; main()"
    )
    done = subprocess.run([sys.executable, "-c", script, str(TRACE)], capture_output=True, text=True)
    assert done.returncode == 2 and "pip install 'xlainspect[profile]'" in done.stderr


def test_rows_are_dataclasses(report):
    assert dataclasses.is_dataclass(report.ops[0]) and dataclasses.is_dataclass(report.compiles[0])


def test_html_page_draws_the_timeline_compiles_and_measured_points(tmp_path):
    page = tmp_path / "profile.html"
    result = _cli(TRACE, "--dump", DUMP, "--peak-flops", "1e11", "--hbm-bandwidth", "2e10", "--html", page)
    assert result.exit_code == 0, result.output
    text = page.read_text()
    # 11 ops x 6 steps on the whole timeline, and the 11 of the median step again
    assert text.count("<rect class='bar'") == 66 + 11
    assert text.count("<rect class='compile'") == 2 and "in step 3" in text
    assert text.count("<circle class='measured'") == text.count("<circle class='op ") > 0
    assert "http://" not in text and "https://" not in text and "<script src" not in text


def test_html_without_a_chip_says_how_to_get_the_roofline(tmp_path):
    page = tmp_path / "profile.html"
    assert _cli(TRACE, "--html", page).exit_code == 0
    assert "pass --dump, and on CPU a chip" in page.read_text()


def test_count_recompiles_adds_the_measured_compile_seconds():
    result = CliRunner().invoke(app, ["count-recompiles", str(DUMP), "--profile", str(TRACE), "-f", "json"])
    assert result.exit_code == 0, result.output
    [function] = json.loads(result.stdout)["functions"]
    assert function["name"] == "jit_train_step" and function["modules"] == 2
    assert len(function["profile_compile_seconds"]) == 2 and all(s > 0 for s in function["profile_compile_seconds"])
    # another run's dump: its one module (id 0) pairs with the compile that made module 0, by its id; this
    # trace's second compile made module 2, which that dump does not have
    table = CliRunner().invoke(app, ["count-recompiles", str(DUMPS / "clean_run"), "--profile", str(TRACE)])
    unpaired = [line for line in table.stderr.splitlines() if line.startswith("not paired with the profile")]
    assert [line.partition("(made ")[2] for line in unpaired] == [
        "module_0002.jit_train_step): the dump has no such module of it",
    ]


def _without(trace, *stats):
    """The real trace with some stats removed, as an older jax or another framework would leave it."""
    events = trace.events
    own = {name: column for name, column in events.own.items() if name not in stats}
    metadata = [{k: v for k, v in found.items() if k not in stats} for found in events.metadata_stats]
    return dataclasses.replace(trace, events=dataclasses.replace(events, own=own, metadata_stats=metadata))


def test_without_step_markers_steps_are_the_step_functions_executions(trace):
    report = profile(_without(trace, "step_num"))
    assert step_source_text(report) == "executions of jit_train_step, the function with the most device time"
    assert len(report.steps) == 6 and [c.step for c in report.compiles] == [None, 2]  # compiles precede the run


def test_without_pass_events_the_compile_is_named_by_its_pjit_caller(trace):
    report = profile(_without(trace, "module"))
    assert [c.function for c in report.compiles] == ["jit_train_step", "jit_train_step"]


def test_without_a_dump_the_hlo_the_trace_embeds_gives_the_same_costs(trace, report):
    """The profiler embeds each module's optimized HloProto; printed by jaxlib, it costs what the dump does."""
    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed")
    assert sorted(trace.hlo_protos) == [0, 2]
    embedded = profile(trace, None, report.chip)
    assert (embedded.hlo_source, report.hlo_source) == ("trace", "dump")
    assert profile_document(embedded).data["hlo_source"] == "embedded in the trace"  # as JSON names it
    fields = ("kind", "flops", "bytes_accessed", "roofline_seconds", "op_name", "source")
    by_key = {(op.module, op.name): [getattr(op, f) for f in fields] for op in report.ops}
    assert {(op.module, op.name): [getattr(op, f) for f in fields] for op in embedded.ops} == by_key
    assert all(values[1] is not None for values in by_key.values())


def test_without_jax_the_embedded_hlo_is_named_not_used():
    script = (
        "import sys; sys.modules['jax'] = None\n"
        "from xlainspect.cli import main; sys.argv = ['xlainspect', 'profile', sys.argv[1], '-f', 'json']; main()"
    )
    done = subprocess.run([sys.executable, "-c", script, str(TRACE)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "printing the HLO the profile embeds needs jax" in done.stderr
    assert json.loads(done.stdout)["hlo_source"] is None


XSPACE = next(TRACE.rglob("*.xplane.pb")).read_bytes()


@pytest.mark.parametrize(
    "damage",
    [f"cut:{n}" for n in (1, 7, 100, 5000, len(XSPACE) // 3, len(XSPACE) - 1)]
    + [f"flip:{n}" for n in (0, 3, 999, len(XSPACE) // 2, len(XSPACE) - 5)],
)
def test_damage_anywhere_is_an_error_message_or_a_partial_trace_never_a_traceback(tmp_path, damage):
    """Protobuf has no end marker: a cut at a field boundary decodes; anything else is `path: message`."""
    kind, at = damage.split(":")
    data = (
        XSPACE[: int(at)]
        if kind == "cut"
        else XSPACE[: int(at)] + bytes([XSPACE[int(at)] ^ 0xFF]) + XSPACE[int(at) + 1 :]
    )
    bad = tmp_path / "host.xplane.pb"
    bad.write_bytes(data)
    result = _cli(bad, "-f", "json")
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 2), result.output
    if result.exit_code == 2:
        assert result.stderr.startswith(f"{bad}: ")


def test_cpu_compiles_have_their_phases(report):
    """XLA:CPU runs the pass pipelines on tf_PjRtCompilerThreadPool, not on jax's thread: found there."""
    for event in report.compiles:
        phases = event.phases
        assert 0 < phases.lowering_seconds < phases.jax_seconds
        assert phases.passes_seconds > 0 and phases.autotuning_seconds == 0 and not phases.tuned
        assert phases.passes_seconds + phases.codegen_seconds == pytest.approx(event.seconds)
        assert "layout-assignment" in {p.name for p in phases.passes}


def test_a_dump_whose_traced_modules_do_not_read_says_so_not_that_they_differ(tmp_path):
    """The traced modules are in the dump (same ids and names) but their HLO is cut: the note names the
    skipped files, where it said the modules' ids and names differ."""
    import shutil

    dump = tmp_path / "dump"
    shutil.copytree(DUMP, dump)
    for hlo in dump.glob("*after_optimizations.txt"):
        hlo.write_text(hlo.read_text()[:300])
    result = _cli(TRACE, "--dump", dump, "--top", "0")
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert notes == [
        f"note: {dump}: the traced modules are in this dump but their files could not be read (skipped: "
        "module_0000.jit_train_step.cpu_after_optimizations.txt, module_0002.jit_train_step.cpu_after_optimizations.txt);"
        " ops are shown without costs"
    ]


PROFILES = sorted(p for p in (FIXTURES / "profiles").iterdir() if p.is_dir()) + [
    FIXTURES / "gpu_corpus" / name / "trace" for name in ("cnn_profile", "mixer_profile")
]


@pytest.mark.parametrize(
    "folder",
    PROFILES,
    ids=lambda p: p.parts[-1] if p.name != "trace" else p.parts[-2],
)
def test_no_devices_op_takes_longer_a_step_than_the_step(folder):
    """On every committed trace, the slowest device's time a step in each op, function and kernel is within
    the step (the median step without a compile of the host shown): a step is over the steps without a
    compile, one device's. With the compile's step counted, multidevice_cpu's dot.3 took 6.6 ms a step
    beside a 2.2 ms step, profile_steps' dot.2 8.2 ms beside 0.3 ms."""
    report = profile_report(folder)
    summary = report.step_summary
    assert summary is not None and report.ops
    wall = summary.step_seconds
    assert all(op.seconds_per_step_max_device is not None for op in report.ops)
    assert max(op.seconds_per_step_max_device or 0.0 for op in report.ops) < wall
    assert max(f.seconds_per_step_max_device or 0.0 for f in report.functions) < wall
    assert all((k.seconds_per_step or 0.0) < wall for k in report.kernels)
    assert all(op.seconds_per_execution is None or op.seconds_per_execution < wall for op in report.ops)
