"""The whole step (issue 39): each step's wall, busy time, breakdown and bound, on real traces.

* fixtures/profiles/profile_host_bound, profile_eager_ops (CPU, `python fixtures/generate.py <name>`): a
  numpy input pipeline before a small jitted step, and a step of 100 eager ops; their `truth.json` holds
  each step's wall measured in Python (time.perf_counter around the marked block);
* fixtures/profiles/profile_steps (CPU), gpu_profile (H200) and fixtures/gpu_corpus cnn_profile and
  mixer_profile (H200, pruned from ../shared/gpu-corpus; their truth.json says which steps compiled).

Expected figures come from the trace's own events (marker spans, the union of device activity computed
here) and from Python's clock; never a duration written down."""

from __future__ import annotations

import json
from statistics import median

import pytest
from conftest import DUMPS, FIXTURES
from typer.testing import CliRunner

from xlainspect.analysis.chips import get_chip
from xlainspect.analysis.profile import profile
from xlainspect.cli.app import app
from xlainspect.dump.directory import load_dump
from xlainspect.dump.xplane import read_trace
from xlainspect.report.views.profile import step_source_text

PROFILES = FIXTURES / "profiles"
CORPUS = FIXTURES / "gpu_corpus"
RUNS = {
    "profile_host_bound": (PROFILES / "profile_host_bound", None),
    "profile_eager_ops": (PROFILES / "profile_eager_ops", None),
    "profile_steps": (PROFILES / "profile_steps", DUMPS / "profile_steps"),
    "gpu_profile": (PROFILES / "gpu_profile", DUMPS / "gpu_profile"),
    "cnn_profile": (CORPUS / "cnn_profile" / "trace", CORPUS / "cnn_profile" / "dump"),
    "mixer_profile": (CORPUS / "mixer_profile" / "trace", CORPUS / "mixer_profile" / "dump"),
}
MARKED = [name for name in RUNS if name != "mixer_profile"]
COMPILES = ("backend_compile_and_load", "backend_compile")


@pytest.fixture(scope="module")
def traces():
    return {name: read_trace(trace) for name, (trace, _) in RUNS.items()}


@pytest.fixture(scope="module")
def reports(traces):
    chip = get_chip("h200")
    return {
        name: profile(traces[name], load_dump(dump) if dump else None, chip if dump else None)
        for name, (_, dump) in RUNS.items()
    }


def _python_walls(name: str) -> list[float]:
    return json.loads((RUNS[name][0] / "truth.json").read_text())["wall_seconds"]


def _union(spans: list[tuple[float, float]]) -> float:
    total, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        total += max(0.0, end - max(start, reach))
        reach = max(reach, end)
    return total


def _device_activity(trace, report, start: float, end: float) -> float:
    """Seconds of [start, end) (ns) with some device activity of the program: a compiled function's op
    event, or device-plane work of no function outside every compile (autotuning runs inside them)."""
    compiles = [(e.start_ns, e.start_ns + e.duration_ns) for e in trace.events if e.name in COMPILES]
    ops = report.op_events
    spans = list(zip(ops.start_ns.tolist(), ops.end_ns.tolist()))
    spans += [
        (e.start_ns, e.start_ns + e.duration_ns)
        for e in trace.events
        if e.plane.startswith("/device")
        and "hlo_module" not in e.stats
        and not any(a <= e.start_ns <= b for a, b in compiles)
    ]
    return _union([(max(a, start), min(b, end)) for a, b in spans if b > start and a < end]) / 1e9


@pytest.mark.parametrize("name", MARKED)
def test_each_step_runs_from_its_marker_to_the_next(name, traces, reports):
    """A step is the loop's time from one marker's start to the next's (the last: its marker's span), so
    the annotation's own entry and exit and the loop's bookkeeping count, as they do in Python's clock."""
    markers = {int(e.stats["step_num"]): e for e in traces[name].events if "step_num" in e.stats}
    steps = reports[name].steps
    assert [s.number for s in steps] == sorted(markers)
    for step, following in zip(steps, steps[1:]):
        assert step.start_seconds + step.wall_seconds == pytest.approx(following.start_seconds, abs=1e-9)
        assert step.wall_seconds >= markers[step.number].duration_ns / 1e9
    assert steps[-1].wall_seconds == pytest.approx(markers[steps[-1].number].duration_ns / 1e9)


@pytest.mark.parametrize("name", ["profile_host_bound", "profile_eager_ops"])
def test_each_steps_wall_is_pythons_and_step_seconds_the_median(name, reports):
    """Python's clock around each marked block; no step of these compiles, so step_seconds is the median."""
    walls = _python_walls(name)
    report = reports[name]
    assert [s.wall_seconds for s in report.steps] == pytest.approx(walls, rel=0.02)
    assert report.step_summary.step_seconds == pytest.approx(median(walls), rel=0.05)
    assert (report.step_summary.steps, report.step_summary.compiled) == (len(walls), 0)


@pytest.mark.parametrize("name", list(RUNS))
def test_busy_is_the_device_activity_and_the_breakdown_adds_up_to_the_wall(name, traces, reports):
    for step in reports[name].steps:
        start = step.start_seconds * 1e9
        expected = _device_activity(traces[name], reports[name], start, start + step.wall_seconds * 1e9)
        assert step.busy_seconds == pytest.approx(expected, rel=0.05)
        assert sum(step.breakdown.values()) == pytest.approx(step.wall_seconds, rel=0.01)
        assert 0 <= step.idle_seconds <= step.wall_seconds
        assert step.idle_seconds == pytest.approx(step.wall_seconds - step.busy_seconds)
        device = sum(step.breakdown[k] for k in ("compute", "collectives", "copies"))
        assert device == pytest.approx(step.busy_seconds)
        assert sum(step.host.values()) == pytest.approx(step.breakdown["host"])


def test_the_numpy_pipeline_step_is_host_bound_on_its_python_function(reports):
    report = reports["profile_host_bound"]
    step = next(s for s in report.steps if s.number == report.step_summary.median_step)
    assert step.bound == "host" and report.step_summary.function == "jit_train_step"
    assert next(iter(step.host)).endswith(" make_batch")  # the Python tracer names the pipeline's function
    assert step.breakdown["host"] > 10 * step.busy_seconds


def test_a_step_of_eager_ops_is_host_bound_on_the_eager_functions_it_dispatched(reports):
    report = reports["profile_eager_ops"]
    assert report.step_summary.function is None and report.step_summary.marker == "train"  # no jitted step
    for step in report.steps:
        assert step.bound == "host"
        assert {"jit_tanh", "jit_multiply", "jit_add"} <= set(step.host)


def test_steps_with_a_compile_are_left_out_of_step_seconds(reports):
    """cnn_profile compiled jit_train_step (and two eager slices) inside step 4, as jax.monitoring says."""
    truth = json.loads((CORPUS / "cnn_profile" / "truth.json").read_text())["steps"]
    report = reports["cnn_profile"]
    assert [s.compiles > 0 for s in report.steps] == [bool(t["compiled"]) for t in truth]
    assert report.steps[4].bound == "compile"
    clean = [s.wall_seconds for s in report.steps if s.number != 4]
    assert report.step_summary.step_seconds == median(clean) and report.step_summary.compiled == 1


def test_launch_is_the_gaps_inside_one_execution(traces, reports):
    """cnn_profile's train_step launches 121 kernels a step (CUDA graphs, cuDNN): between the first and the
    last kernel of one execution the device idles. Outside compiles (none in step 3), the launch share is
    that execution's span less the device activity in it."""
    report = reports["cnn_profile"]
    step = report.steps[3]
    start, end = step.start_seconds * 1e9, (step.start_seconds + step.wall_seconds) * 1e9
    ops = report.op_events
    mine = (ops.start_ns >= start) & (ops.start_ns < end)
    first, last = ops.start_ns[mine].min(), ops.end_ns[mine].max()
    gaps = (last - first) / 1e9 - _device_activity(traces["cnn_profile"], report, first, last)
    assert step.breakdown["launch"] == pytest.approx(gaps, rel=0.05)
    assert step.bound == "launch"  # its largest share: 0.8 ms of gaps, 0.69 ms on the host, 0.53 ms busy


def test_without_markers_a_step_runs_from_one_execution_to_the_next(reports):
    """mixer_profile has no step markers: each step starts where an execution of jit_train_step starts,
    and ends where the next starts (issue 39: step 1 showed 1.29 s idle in an 807 us step)."""
    report = reports["mixer_profile"]
    assert step_source_text(report).startswith("executions of jit_train_step")
    steps = report.steps
    for a, b in zip(steps, steps[1:]):
        assert a.start_seconds + a.wall_seconds == pytest.approx(b.start_seconds)
    assert all(s.idle_seconds <= s.wall_seconds for s in steps)
    assert report.step_summary.compiled == sum(s.compiles > 0 for s in steps) > 0


def test_profile_json_and_first_line():
    trace = RUNS["profile_host_bound"][0]
    result = CliRunner().invoke(app, ["profile", str(trace), "-f", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["step_seconds"] == pytest.approx(median(_python_walls("profile_host_bound")), rel=0.05)
    step = data["steps"][0]
    assert set(step["breakdown"]) == {
        "compute",
        "collectives",
        "copies",
        "compile",
        "autotune",
        "input",
        "launch",
        "host",
    }
    table = CliRunner().invoke(app, ["profile", str(trace)])
    first = table.stdout.splitlines()[0]
    assert first.startswith("jit_train_step: ") and " a step (median of 6); device busy " in first
    assert "host-bound: the device waits " in first and "make_batch" in first


def test_a_launch_floor_under_each_roofline(traces):
    """No op's roofline time is below the chip's kernel launch cost (1 us on an H200, chips.json), and
    --launch-seconds overrides it."""
    trace, dump = RUNS["cnn_profile"]
    report = profile(traces["cnn_profile"], load_dump(dump), get_chip("h200"))
    rooflines = [op.roofline_seconds for op in report.ops if op.roofline_seconds is not None]
    assert min(rooflines) == pytest.approx(1e-6)
    floored = profile(traces["cnn_profile"], load_dump(dump), get_chip("h200", launch_seconds=5e-6))
    assert min(op.roofline_seconds for op in floored.ops if op.roofline_seconds is not None) == pytest.approx(5e-6)
    result = CliRunner().invoke(
        app, ["profile", str(trace), "--dump", str(dump), "--launch-seconds", "5e-6", "--top", "0", "-f", "json"]
    )
    assert result.exit_code == 0, result.output
    assert min(op["roofline_seconds"] for op in json.loads(result.stdout)["ops"] if op["roofline_seconds"]) == (
        pytest.approx(5e-6)
    )
