"""`profile` on real jax 0.11.2 GPU traces (NVIDIA H200), where parts of each step run as CUDA graphs:

* fixtures/gpu_corpus/cnn_profile, mixer_profile: pruned from ../shared/gpu-corpus (fixtures/README.md);
  their `truth.json` holds jax.monitoring's compiles per function and per step.
* fixtures/dumps/gpu_profile + fixtures/profiles/gpu_profile: `python fixtures/generate.py gpu_profile`
  on a lent H200 (a transformer LM step in StepTraceAnnotation, 3 scanned blocks in a 2-micro-batch
  fori_loop, train_step recompiled inside step 3).

The expected figures are computed here from the trace's own events (a plain sum per module), from the
dump's HLO, and from the programs' known loop trip counts; never a duration written down."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from collections import Counter, defaultdict

import pytest
from conftest import DUMPS, FIXTURES
from typer.testing import CliRunner

from xlainspect.analysis.chips import get_chip
from xlainspect.analysis.cost import module_cost
from xlainspect.analysis.profile import profile
from xlainspect.analysis.profile.placement import place_launch
from xlainspect.analysis.timing import measured
from xlainspect.cli.app import app
from xlainspect.dump.directory import load_dump
from xlainspect.dump.thunks import read_thunk_sequence, thunk_files
from xlainspect.dump.xplane import read_trace
from xlainspect.errors import XlaInspectError
from xlainspect.report.views.profile import not_placed_text, step_source_text

CORPUS = FIXTURES / "gpu_corpus"
RUNS = {
    "cnn_profile": (CORPUS / "cnn_profile" / "trace", CORPUS / "cnn_profile" / "dump"),
    "mixer_profile": (CORPUS / "mixer_profile" / "trace", CORPUS / "mixer_profile" / "dump"),
    "gpu_profile": (FIXTURES / "profiles" / "gpu_profile", DUMPS / "gpu_profile"),
}


@pytest.fixture(scope="module")
def traces():
    return {name: read_trace(trace) for name, (trace, _) in RUNS.items()}


@pytest.fixture(scope="module")
def reports(traces):
    return {name: profile(traces[name], load_dump(RUNS[name][1])) for name in RUNS}


def _truth(name: str) -> dict:
    return json.loads((CORPUS / name / "truth.json").read_text())


def _jit_name(fun_name: str) -> str:
    """jax.monitoring's `jit(train_step)` as the HloModule name `jit_train_step`."""
    return "jit_" + fun_name.removeprefix("jit(").removesuffix(")")


@pytest.mark.parametrize("name", sorted(RUNS))
def test_device_time_per_function_is_the_traces_own_busy_time(name, traces, reports):
    """Every event of a module the program compiled (it has a program_id), command buffers included, as
    the time its device was busy with them: the union of their spans on each device. On the H200 a
    stream's next kernel starts before the one before it ends (programmatic dependent launch), so the sum
    of the kernels' times is more than that: the op rows add up to the sum."""
    spans: defaultdict = defaultdict(list)
    summed: Counter = Counter()
    for event in traces[name].events:
        if event.plane.startswith("/device") and "program_id" in event.stats and "hlo_module" in event.stats:
            spans[event.stats["hlo_module"], event.plane].append((event.start_ns, event.end_ns))
            summed[event.stats["hlo_module"]] += event.duration_ns / 1e9
    own: Counter = Counter()
    for (module, _), found in spans.items():
        reach = -1.0
        for start, end in sorted(found):
            own[module] += max(end - max(start, reach), 0.0) / 1e9
            reach = max(reach, end)
    functions = {f.function: f for f in reports[name].functions}
    assert set(functions) == set(own)
    for function, seconds in own.items():
        assert functions[function].seconds == pytest.approx(seconds, rel=1e-9)
    assert own["jit_train_step"] < summed["jit_train_step"]
    if name == "gpu_profile":  # README's figures: 0.41 ms of 5.84 ms counted twice by a sum
        assert (summed["jit_train_step"], summed["jit_train_step"] - own["jit_train_step"]) == pytest.approx(
            (5.839137e-3, 4.11592e-4), rel=1e-6
        )
    ops = Counter()
    for op in reports[name].ops:
        ops[op.function] += op.total_seconds
    assert ops["jit_train_step"] == pytest.approx(summed["jit_train_step"], rel=1e-9)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_kernel_executions_are_placed_on_an_op_of_the_dump(name, reports):
    report = reports[name]
    placed, kernels = report.placed
    assert kernels > 700 and placed / kernels >= 0.99 and not report.unplaced
    modules = {m.label.rpartition("/")[2]: m for m in load_dump(RUNS[name][1]).modules}
    train_ops = [op for op in report.ops if op.function == "jit_train_step"]
    assert {op.module for op in train_ops} <= set(modules)
    for op in train_ops:
        names = {i.name for i in modules[op.module].module("after").instructions()}
        assert op.name in names, (op.module, op.name)
    assert not any(op.name.startswith("command_buffer_") for op in report.ops)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_autotuning_is_apart(name, traces, reports):
    """Kernels run while compiling carry the tuned fusion as their module and no program_id: never an op."""
    report = reports[name]
    fusions = {e.stats["hlo_module"] for e in traces[name].events if "hlo_module" in e.stats} - {
        f.function for f in report.functions
    }
    tuned = {fusion for fusion, _, _ in report.autotuning.per_fusion}
    assert fusions and fusions <= tuned and report.autotuning.kernels > 1000
    assert all(op.module.startswith("module_") for op in report.ops)  # every op of a module the dump names
    busy = sum(s.busy_seconds for s in report.steps)
    assert sum(op.step_share for op in report.ops) >= 0.999  # more than 1 where streams overlap: busy counts once
    assert busy < report.autotuning.seconds  # the compile's autotuning is not the steps' device time


def test_cnn_profile_recompiles_jit_train_step_inside_step_4(reports):
    report, truth = reports["cnn_profile"], _truth("cnn_profile")
    assert report.step_source == "step markers" and [s.number for s in report.steps] == list(range(6))
    in_step = {s["step"]: sorted(_jit_name(f) for f in s["compiled"]) for s in truth["steps"]}
    assert sorted(c.function for c in report.compiles if c.step == 4) == in_step[4]
    assert [(c.step, c.module) for c in report.compiles if c.function == "jit_train_step"] == [
        (4, "module_146159.jit_train_step")  # the module that ran at batch 48, in step 4
    ]
    assert all(c.step == 4 for c in report.compiles)  # the trace starts after the first compiles


def test_cnn_profile_fori_loop_body_runs_4_times_a_step(reports):
    """`lax.fori_loop` over 4 micro-batches (truth.json's while trip count): its body's kernels, in and
    out of the command buffer, run 4 times per step; the update after it once."""
    trips = _truth("cnn_profile")["while_trip_count"]
    ops = {(op.module, op.name): op for op in reports["cnn_profile"].ops}
    module = "module_9285.jit_train_step"
    for body in ("loop_pad_fusion", "input_scatter_fusion", "fusion.24", "loop_select_fusion", "gemm_fusion_dot.4"):
        assert ops[(module, body)].kernels_per_step == trips == 4
        assert ops[(module, body)].kernels == 5 * trips  # steps 0-3 and 5; step 4 ran module 146159
    for after in ("loop_subtract_fusion", "input_transpose_fusion"):
        assert ops[(module, after)].kernels_per_step == 1


def test_mixer_profile_steps_are_jit_train_step_and_its_scan_runs_6_times(reports):
    report = reports["mixer_profile"]
    assert step_source_text(report) == "executions of jit_train_step, the function with the most device time"
    assert report.functions[0].function == "jit_train_step"
    ops = {(op.module, op.name): op for op in report.ops}
    module = "module_20551.jit_train_step"
    for block in ("gemm_fusion_dot.27", "gemm_fusion_dot.28", "loop_multiply_fusion.1", "wrapped_transpose"):
        assert ops[(module, block)].kernels_per_step == 6  # lax.scan over 6 blocks
    for outside in ("loop_select_subtract_fusion", "input_concatenate_fusion"):
        assert ops[(module, outside)].kernels_per_step == 1


def test_mixer_profile_every_compile_is_named_by_its_function(reports):
    truth = _truth("mixer_profile")
    named = Counter(c.function for c in reports["mixer_profile"].compiles)
    assert named == Counter({_jit_name(f): n for f, n in truth["per_function"].items()})
    assert len(reports["mixer_profile"].compiles) == truth["total_backend_compiles"]
    # each compile of jit_train_step made the next module of the dump, in module-id order
    dumped = sorted(load_dump(RUNS["mixer_profile"][1]).modules, key=lambda m: m.module_id)
    made = [c.module for c in reports["mixer_profile"].compiles if c.function == "jit_train_step"]
    assert made == [m.label.rpartition("/")[2] for m in dumped] and len(made) == 6


def test_gpu_profile_steps_compile_and_loops(reports):
    report = reports["gpu_profile"]
    expected = json.loads((DUMPS / "gpu_profile.compiles.json").read_text())["expected"]["jit_train_step"]
    assert report.step_source == "step markers" and len(report.steps) == expected["steps"]
    assert [(c.step, c.module) for c in report.compiles if c.function == "jit_train_step"] == [
        (expected["compile_step"], "module_240243.jit_train_step")  # batch 8's module, run from step 3 on
    ]
    assert all(c.function and c.function.startswith("jit_") for c in report.compiles)
    ops = {(op.module, op.name): op for op in report.ops}
    module = "module_13922.jit_train_step"
    scan, fori = expected["scan_trip_count"], expected["fori_trip_count"]
    for block in ("gemm_fusion_dot.4", "gemm_fusion_dot.49", "fusion.156", "input_reduce_fusion.5"):
        assert ops[(module, block)].kernels_per_step == scan * fori  # a scanned block in the micro-batch loop
    assert ops[(module, "loop_gather_fusion")].kernels_per_step == fori
    assert ops[(module, "loop_subtract_fusion")].kernels_per_step == 1
    for step in report.steps:
        assert 0 < step.busy_seconds and step.busy_seconds + step.idle_seconds == pytest.approx(step.wall_seconds)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_compile_phases_add_up(name, reports):
    """XLA passes + autotuning + codegen is the compile; autotuning only where fusions were tuned."""
    for event in reports[name].compiles:
        phases = event.phases
        total = phases.passes_seconds + phases.autotuning_seconds + phases.codegen_seconds
        assert total == pytest.approx(event.seconds)
        assert phases.jax_seconds is not None and 0 < phases.lowering_seconds < phases.jax_seconds
        assert [p.seconds for p in phases.passes] == sorted((p.seconds for p in phases.passes), reverse=True)
        assert len(phases.passes) <= 10
        assert phases.autotuning_seconds == 0 or phases.tuned
    [train] = (
        [c for c in reports["cnn_profile"].compiles if c.function == "jit_train_step"]
        if name == "cnn_profile"
        else [None]
    )
    if train is not None:
        assert {"cudnn-conv.3", "gemm_fusion_dot.4"} <= {t.fusion for t in train.phases.tuned}
        assert train.phases.autotuning_seconds > train.phases.passes_seconds


def test_the_thunk_sequence_gives_each_command_its_op():
    """cnn_profile's first module: the fori_loop's command buffers and a dynamic-slice fusion's copy."""
    [module] = [m for m in load_dump(RUNS["cnn_profile"][1]).modules if m.module_id == 9285]
    sequence = read_thunk_sequence(*thunk_files(module))
    assert list(sequence.command_buffers) == ["command_buffer_1", "command_buffer_17"]
    assert [(c.kernel, c.op) for c in sequence.command_buffers["command_buffer_1"]] == [
        (None, "copy.18"),
        ("loop_broadcast_fusion_3", "loop_broadcast_fusion.3"),
        ("wrapped_transpose", "wrapped_transpose"),
        ("loop_broadcast_fusion_2", "loop_broadcast_fusion.2"),
        ("wrapped_transpose_1", "wrapped_transpose.1"),
        ("loop_broadcast_fusion_1", "loop_broadcast_fusion.1"),
    ]
    copy = next(t for t in sequence.thunks if t.id == 10)
    assert (copy.kind, copy.op) == ("kCopy", "loop_dynamic_slice_fusion.1")  # nested in thunk 11


def test_without_the_dump_command_buffer_kernels_are_unplaced_with_the_reason(traces):
    report = profile(traces["cnn_profile"])
    placed, kernels = report.placed
    assert 0 < placed < kernels
    assert {not_placed_text(u) for u in report.unplaced} == {
        "no --dump: the dump's thunk sequence places a command buffer's kernels"
    }
    assert sum(u.count for u in report.unplaced) == kernels - placed
    assert {u.hlo_op for u in report.unplaced} == {"command_buffer_1", "command_buffer_17"}


def test_a_dump_without_a_modules_thunk_files_says_so(traces, tmp_path):
    dump = tmp_path / "dump"
    shutil.copytree(RUNS["cnn_profile"][1], dump)
    for path in dump.glob("module_9285.*thunk*"):
        path.unlink()
    report = profile(traces["cnn_profile"], load_dump(dump))
    assert {not_placed_text(u) for u in report.unplaced} == {
        "the dump has no thunk sequence of module_9285.jit_train_step"
    }
    assert {u.module for u in report.unplaced} == {"module_9285.jit_train_step"}


def test_step_function_overrides_the_step_markers(traces):
    report = profile(traces["cnn_profile"], step_function="jit_dynamic_slice")
    assert step_source_text(report) == "executions of jit_dynamic_slice, named by --step-function"
    assert len(report.steps) == 2
    with pytest.raises(XlaInspectError, match="step_function jit_nothing: no kernel of it in the trace"):
        profile(traces["cnn_profile"], step_function="jit_nothing")


def test_cli_compile_phases_and_json():
    trace, dump = RUNS["cnn_profile"]
    result = CliRunner().invoke(app, ["profile", str(trace), "--dump", str(dump), "--compile-phases"])
    assert result.exit_code == 0, result.output
    assert "compile 3: module_146159.jit_train_step" in result.stdout and "fusion tuned" in result.stdout
    assert "XLA passes" in result.stdout and "priority-fusion" in result.stdout
    shown = CliRunner().invoke(app, ["profile", str(trace), "--dump", str(dump), "-f", "json", "--top", "0"])
    document = json.loads(shown.stdout)
    assert document["placed"]["on_an_op"] == document["placed"]["kernels"] > 700
    assert document["autotuning"]["kernels"] > 1000 and document["functions"][0]["function"] == "jit_train_step"
    assert [c["phases"]["autotuning_seconds"] > 0 for c in document["compiles"]] == [False, False, True]
    table = CliRunner().invoke(app, ["profile", str(trace), "--dump", str(dump)])
    assert "kernel executions of compiled functions on an HLO op: 728 of 728 (100.0%)" in table.stdout
    assert "autotuning: " in table.stdout and "per fusion tuned: " in table.stdout


def test_a_copy_among_two_copy_commands_goes_to_the_one_between_its_neighbours(traces):
    """One real launch of cnn_profile's command_buffer_1 (the driver's memcpy32_post, then five fusion
    kernels), placed against its commands plus a second copy command after them (the dynamic-slice
    copy of the same module): two copy commands for one copy, so the count does not decide; the copy
    ran before loop_broadcast_fusion_3, where only copy.18 is."""
    [module] = [m for m in load_dump(RUNS["cnn_profile"][1]).modules if m.module_id == 9285]
    sequence = read_thunk_sequence(*thunk_files(module))
    commands = [*sequence.command_buffers["command_buffer_1"], next(t for t in sequence.thunks if t.id == 10)]
    launches = {}
    for event in traces["cnn_profile"].events:
        if event.stats.get("hlo_op") == "command_buffer_1" and event.stats.get("program_id") == 9285:
            launches.setdefault(event.stats["correlation_id"], []).append(event)
    launch = next(events for events in launches.values() if events[0].name == "memcpy32_post")
    launch.sort(key=lambda e: e.stats["cuda_graph_node_id"])
    placed = [(event.name, op, reason) for event, op, reason in place_launch(launch, commands, "command_buffer_1")]
    assert ("memcpy32_post", "copy.18", None) in placed
    assert sorted(op for _, op, _ in placed) == sorted(c.op for c in sequence.command_buffers["command_buffer_1"])


def test_device_events_equal_jaxlibs_reader(traces):
    """gpu_profile's device planes as XLA's own C++ reader (jax.profiler.ProfileData) reads them: every
    kernel, copy and memset with the annotations attribution rests on."""
    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed")
    keys = ("hlo_op", "hlo_module", "program_id", "correlation_id", "cuda_graph_node_id")
    script = (
        "import sys, json\nfrom jax.profiler import ProfileData\n"
        "data = ProfileData.from_file(sys.argv[1])\n"
        f"keys = {keys!r}\n"
        "print(json.dumps(sorted(([line.name, e.name, round(e.duration_ns), sorted((k, str(v)) for k, v in e.stats if k in keys)]"
        " for p in data.planes if p.name.startswith('/device') for line in p.lines for e in line.events"
        " if e.duration_ns > 0), key=str)))"
    )
    [xspace] = traces["gpu_profile"].paths
    done = subprocess.run([sys.executable, "-c", script, str(xspace)], capture_output=True, text=True, check=True)
    theirs = json.loads(done.stdout)
    ours = sorted(
        (
            [e.line, e.name, round(e.duration_ns), sorted([k, str(v)] for k, v in e.stats.items() if k in keys)]
            for e in traces["gpu_profile"].events
            if e.plane.startswith("/device")
        ),
        key=str,
    )
    assert len(ours) == len(theirs) > 10000
    assert ours == theirs


def test_html_page_of_a_gpu_trace(tmp_path):
    page = tmp_path / "profile.html"
    trace, dump = RUNS["gpu_profile"]
    result = CliRunner().invoke(app, ["profile", str(trace), "--dump", str(dump), "--html", str(page)])
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert "3,894 op events (3,894 on an HLO op), 4 compiles; autotuning apart: 6,562 kernels" in text
    assert text.count("<rect class='compile'") == 4  # on the whole trace; the median step holds none
    assert "backend_compile_and_load module_240243.jit_train_step: " in text and "autotuning 1." in text


def test_loop_body_kernels_per_step_equal_cost_executions(traces):
    """Issue 31: the kernel executions `profile` counts per step of an op in a loop body equal the
    `executions` cost finds from the dump's trip counts (cnn: fori_loop 4; mixer: scan 6; gpu_profile:
    scan 3 inside fori_loop 2), and its roofline is one execution's (cost's per-call figure / executions),
    never below the H200's kernel launch cost (1 us, chips.json)."""
    cases = {
        "cnn_profile": ("module_9285.jit_train_step", ("loop_pad_fusion", "loop_select_fusion"), 4),
        "mixer_profile": ("module_20551.jit_train_step", ("gemm_fusion_dot.27", "loop_multiply_fusion.1"), 6),
        "gpu_profile": ("module_13922.jit_train_step", ("gemm_fusion_dot.4", "fusion.156"), 6),
    }
    h200 = get_chip("h200")
    for run, (module, names, runs) in cases.items():
        ops = {(op.module, op.name): op for op in profile(traces[run], load_dump(RUNS[run][1]), h200).ops}
        for name in names:
            op = ops[(module, name)]
            assert op.executions_per_call == op.kernels_per_step == runs, (run, name)
            assert op.roofline_seconds is not None and op.flops is not None
            cost = next(
                c
                for c in module_cost(
                    next(m for m in load_dump(RUNS[run][1]).modules if m.label.endswith(module)).module("after"), h200
                ).ops
                if c.name == name
            )
            assert op.roofline_seconds == pytest.approx(max(cost.roofline_seconds / runs, 1e-6))
            assert op.flops == cost.flops_per_execution == cost.flops / runs


def test_a_library_call_of_several_kernels_is_one_execution(traces):
    """The backward-filter convolution (cuDNN) launches 7 kernels per execution in cnn_profile: its efficiency
    and time lost are over its executions (module_9285 ran in 5 steps, 4 micro-batches each), not its
    140 kernels."""
    report = profile(traces["cnn_profile"], load_dump(RUNS["cnn_profile"][1]), get_chip("h200"))
    ops = {(op.module, op.name): op for op in report.ops}
    conv = ops[("module_9285.jit_train_step", "cudnn-conv-bw-filter.3")]
    assert (conv.kernels, conv.executions_per_call, conv.kernels_per_step) == (140, 4, 28)
    assert conv.efficiency == pytest.approx(conv.roofline_seconds * 5 * 4 / conv.total_seconds)
    assert conv.lost_seconds == pytest.approx(conv.total_seconds - conv.roofline_seconds * 5 * 4)
    assert (conv.executions_in_trace, conv.seconds_per_execution) == (20, pytest.approx(conv.total_seconds / 20))
    # issue 39 item 3: the report's "N x its roofline" (its measured seconds an execution over the roofline)
    # is the inverse of profile's efficiency, the one figure
    [row] = [t for t in measured(report, {})[1] if (t.module, t.name) == (conv.module, conv.name)]
    assert row.measured_seconds / row.roofline_seconds * conv.efficiency == pytest.approx(1)
    assert row.efficiency == conv.efficiency


def test_count_recompiles_puts_a_traced_compile_on_the_module_it_made():
    """Issue 35 item 5: cnn_profile compiled jit_train_step before the trace (module 9285) and again inside
    step 4 (module 146159, the one that ran next): the trace's compile seconds go on 146159, and the
    modules compiled before the trace pair with nothing, which is no fault. (The pruned dump keeps only
    jit_train_step's modules: the trace's jit_dynamic_slice compiles pair with none, and say so.)"""
    trace, dump = RUNS["cnn_profile"]
    result = CliRunner().invoke(app, ["count-recompiles", str(dump), "--profile", str(trace), "-f", "json"])
    assert result.exit_code == 0, result.output
    [function] = json.loads(result.stdout)["functions"]
    assert function["module_ids"] == [9285, 146159]
    [compiled] = [c for c in profile(read_trace(trace)).compiles if c.function == "jit_train_step"]
    assert function["profile_compile_seconds"] == [None, compiled.seconds]
    unpaired = [line for line in result.stderr.splitlines() if line.startswith("not paired")]
    assert len(unpaired) == 2 and all("jit_dynamic_slice compiled" in line for line in unpaired)
