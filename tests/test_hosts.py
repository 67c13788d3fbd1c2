"""Every host's trace of a run at once: fixtures/profiles/multihost_straggler (a real 4-process jax job on
one machine, host_1's input pipeline 80 ms slower a step; `python fixtures/generate.py multihost_straggler`)
and multidevice_cpu (one process, 8 CPU devices), against what each host measured in Python (truth.json)."""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil
from pathlib import Path
from statistics import mean, median

import pytest
from conftest import FIXTURES, REPO
from typer.testing import CliRunner

from xlainspect.analysis.profile.hosts import collective_waits, job_of, job_profile, summarise_host, with_op_waits
from xlainspect.analysis.profile.job import HostSummary
from xlainspect.cli.app import app
from xlainspect.dump.directory import load_dump
from xlainspect.dump.xplane import host_traces
from xlainspect.report.views.cost import duration

JOB = FIXTURES / "profiles" / "multihost_straggler"
ONE = FIXTURES / "profiles" / "multidevice_cpu"
runner = CliRunner()


def _truth(folder: Path) -> dict:
    return json.loads((folder / "truth.json").read_text())


@pytest.fixture(scope="module")
def job():
    report = job_profile(host_traces(JOB))
    assert report.job is not None
    return report.job


def test_each_run_folder_file_is_a_host():
    assert list(host_traces(JOB)) == ["host_0", "host_1", "host_2", "host_3"]


def test_every_hosts_median_step_within_ten_percent_of_python(job):
    truth = {h["host"]: h for h in _truth(JOB)["hosts"]}
    assert [row.host for row in job.hosts] == list(truth)
    for row in job.hosts:
        expected = truth[row.host]["step_seconds"]
        assert row.step_seconds == pytest.approx(expected, rel=0.10), row.host
        walls = [s.wall_seconds for s in row.steps]  # each step's marker against its perf_counter wall
        assert walls == pytest.approx(truth[row.host]["step_walls_seconds"], rel=0.05), row.host  # 2.5% at most
        assert [s.compiled for s in row.steps] == [True] + [False] * (len(walls) - 1)


def test_every_device_has_a_row(job):
    truth = _truth(JOB)["hosts"]
    expected = [(h["host"], f"device {d.removeprefix('cpu:')}") for h in truth for d in h["devices"]]
    assert sorted((row.host, row.device) for row in job.devices) == sorted(expected)


def _extra_input(folder: Path) -> float:
    """The slow host's extra input work a step, as Python measured it: its load_batch less the others'
    (median over the steps without a compile)."""
    truth = _truth(folder)
    slow = next(h for h in truth["hosts"] if h["host"] == truth["slow_host"])
    others = [h for h in truth["hosts"] if h is not slow]
    extra = [
        s - median(o["load_batch_seconds"][k] for o in others)
        for k, s in enumerate(slow["load_batch_seconds"])
        if k not in slow["compile_steps"]
    ]
    return median(extra)


def test_the_straggler_is_named_and_the_others_wait_about_its_delay(job):
    truth = _truth(JOB)
    found = job.straggler
    assert found is not None and (found.level, found.name) == ("host", truth["slow_host"])
    assert found.last_in_steps == found.steps == 7
    extra = _extra_input(JOB)  # 81 ms when the fixture was made (delay_seconds 0.080)
    assert found.wait_seconds == pytest.approx(extra, rel=0.15)  # 89.5 ms: +10%
    assert found.margin_seconds == pytest.approx(extra, rel=0.15)  # 86.5 ms: +7%
    for row in job.hosts:  # each other host's all-reduce wait a step is the delay; the straggler's is ~0
        expected = 0.0 if row.host == truth["slow_host"] else extra
        assert row.wait_seconds == pytest.approx(expected, abs=0.15 * extra), row.host
        # its devices idle meanwhile, the host busy in Python (profile's step breakdown: `host`)
        assert row.idle["host"] == pytest.approx(extra - expected, abs=0.15 * extra), row.host
    what, name, seconds = found.meanwhile[0]  # its input pipeline, the TraceAnnotation it ran in
    assert (what, name) == ("host", "load_batch") and seconds == pytest.approx(extra, rel=0.15)


def test_collective_rows_split_wait_and_transfer(job):
    truth = _truth(JOB)
    rows = job.collectives
    assert {(r.kind, r.op) for r in rows} == {("all-reduce", "all-reduce.3")}
    assert len(rows) == 8 and all(r.count == 7 for r in rows)  # a device each, the 7 steps without a compile
    for row in rows:
        assert row.wait_seconds + row.transfer_seconds == pytest.approx(row.seconds)
        assert row.exposed_seconds + row.hidden_seconds == pytest.approx(row.seconds)
        assert row.hidden_seconds == 0.0  # XLA:CPU runs the all-reduce alone: no compute overlaps it
        # the gradients (128x128 and 128x1 f32) and the loss, all-reduced over 8 devices: 2 (n - 1) / n of them
        assert row.bytes_per_execution == round((128 * 128 + 128 + 1) * 4 * 2 * 7 / 8)
        assert row.transfer_bytes_per_second == pytest.approx(row.bytes_per_execution * 7 / row.transfer_seconds)
        assert row.link_bandwidth is None  # XLA:CPU: no chip, no link figure
        share = row.wait_seconds / row.seconds
        assert share < 0.1 if row.host == truth["slow_host"] else share > 0.5, row


def test_one_machine_one_clock_is_kept(job):
    """Every process ran on one machine: on their recorded clocks every all-reduce is causal."""
    assert job.clock.method == "recorded clocks" and job.clock.shared == 8
    assert set(job.clock.offsets.values()) == {0.0}


def _shifted(summary: HostSummary, seconds: float) -> HostSummary:
    ns = seconds * 1e9
    return dataclasses.replace(
        summary,
        steps=[dataclasses.replace(s, start_ns=s.start_ns + ns) for s in summary.steps],
        parts=[dataclasses.replace(p, start_ns=p.start_ns + ns, end_ns=p.end_ns + ns) for p in summary.parts],
        compiles=[(s + ns, e + ns) for s, e in summary.compiles],
    )


def test_a_host_whose_clock_is_off_by_a_second_is_aligned():
    traces = host_traces(JOB)
    summaries = [summarise_host(h, paths, None, None, None)[0] for h, paths in traces.items()]
    summaries[2] = _shifted(summaries[2], 1.0)
    job = job_of(summaries, [], None, lambda host: ([], [], [], []))
    assert job.clock.method == "collective ends"  # host_2 would leave each all-reduce before the others came
    assert job.clock.offsets["host_2"] == pytest.approx(-1.0, abs=0.01)
    assert job.straggler is not None and job.straggler.name == "host_1"


def test_one_process_eight_devices():
    report = job_profile(host_traces(ONE))
    job = report.job
    assert job is not None and [row.host for row in job.hosts] == ["host_0"]
    assert [row.device for row in job.devices] == [f"device {k}" for k in range(8)]
    truth = _truth(ONE)["hosts"][0]
    assert job.hosts[0].step_seconds == pytest.approx(truth["step_seconds"], rel=0.10)
    assert job.clock.method == "one host"
    assert job.straggler is not None and job.straggler.level == "device"


def _copy_host(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def test_one_log_dir_per_host_and_a_damaged_host_skipped(tmp_path):
    for host, paths in host_traces(JOB).items():
        _copy_host(paths[0], tmp_path / f"worker-{host[-1]}" / "plugins" / "profile" / "2026_01_01" / "vm.xplane.pb")
    damaged = tmp_path / "worker-3" / "plugins" / "profile" / "2026_01_01" / "vm.xplane.pb"
    damaged.write_bytes(b"not a protobuf")
    traces = host_traces(tmp_path)
    assert list(traces) == ["worker-0", "worker-1", "worker-2", "worker-3"]
    job = job_profile(traces).job
    assert job is not None
    assert [row.host for row in job.hosts] == ["worker-0", "worker-1", "worker-2"]
    assert [s.path for s in job.skipped] == [damaged] and "not an XPlane profile" in job.skipped[0].reason
    assert job.straggler is not None and job.straggler.name == "worker-1"


def test_profile_command_names_the_straggler():
    result = runner.invoke(app, ["profile", str(JOB), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [h["host"] for h in data["hosts"]] == ["host_0", "host_1", "host_2", "host_3"]
    assert len(data["devices"]) == 8 and data["straggler"]["name"] == "host_1"
    assert data["clock"]["method"] == "recorded clocks"
    text = runner.invoke(app, ["profile", str(JOB), "--top", "3"])
    assert text.exit_code == 0
    assert "host_1 is the straggler: it arrived last at the collectives of 7 of 7 steps" in text.stdout
    assert "Meanwhile it ran: load_batch" in text.stdout


def test_report_has_a_hosts_section_and_collectives_that_wait(tmp_path):
    page = tmp_path / "report.md"
    dump = FIXTURES / "dumps" / "multihost_straggler"
    result = runner.invoke(app, ["report", str(dump), "--profile", str(JOB), "--markdown", str(page)])
    assert result.exit_code == 0, result.output
    text = page.read_text()
    hosts = text.split("\n## Hosts\n", 1)[1].split("\n## ", 1)[0]
    assert "host_1 is the straggler: it arrived last at the collectives of 7 of 7 steps" in hosts
    assert "| host_1 | (all) | 8 |" in hosts  # a bar row per host
    assert "(hosts): host_1: " in text  # among the findings ranked on top
    header = next(line for line in text.splitlines() if line.startswith("| module | name | kind | dtype |"))
    assert "| wait_seconds | transfer_seconds | exposed_seconds |" in header


def test_a_step_function_no_host_ran_is_a_usage_error_not_a_skipped_host():
    result = runner.invoke(app, ["profile", str(JOB), "--step-function", "nope"])
    assert result.exit_code == 2
    assert "--step-function nope: no kernel of it in the trace; it has: jit_train_step" in result.stderr


def test_a_notebook_has_the_hosts_devices_and_collectives_tables():
    pytest.importorskip("pandas")
    report = job_profile(host_traces(JOB))
    hosts = report.to_pandas("hosts")
    assert list(hosts["host"]) == ["host_0", "host_1", "host_2", "host_3"]
    assert hosts["step_seconds"].dtype == "float64"
    assert len(report.to_pandas("devices")) == 8 and len(report.to_pandas("collectives")) == 8


def test_the_command_names_a_damaged_hosts_file_and_reads_the_others(tmp_path):
    for host, paths in host_traces(JOB).items():
        shutil.copyfile(paths[0], tmp_path / f"{host}.xplane.pb")
    (tmp_path / "host_3.xplane.pb").write_bytes(b"not a protobuf")
    result = runner.invoke(app, ["profile", str(tmp_path), "--format", "json"])
    assert result.exit_code == 0
    assert [h["host"] for h in json.loads(result.stdout)["hosts"]] == ["host_0", "host_1", "host_2"]
    assert f"{tmp_path / 'host_3.xplane.pb'}: not an XPlane profile" in result.stderr
    assert runner.invoke(app, ["profile", str(tmp_path), "--strict"]).exit_code == 2


def test_gzipped_host_files_are_named_by_their_host(tmp_path):
    for host, paths in host_traces(JOB).items():
        (tmp_path / f"{host}.xplane.pb.gz").write_bytes(gzip.compress(paths[0].read_bytes()))
    assert list(host_traces(tmp_path)) == ["host_0", "host_1", "host_2", "host_3"]
    job = job_profile(host_traces(tmp_path)).job
    assert job is not None and job.straggler is not None and job.straggler.name == "host_1"


def test_each_host_joins_its_own_dump_folder_else_the_whole_dump(tmp_path):
    """A per-host dump: each host's collectives take their bytes from its own folder. host_1's folder
    lacks jit_train_step (as a host that did not compile it would), so its rows have no bytes though the
    other folders have the module; host_3's folder is renamed, so host_3 joins the whole dump."""
    dump = tmp_path / "dump"
    shutil.copytree(FIXTURES / "dumps" / "multihost_straggler", dump)
    for path in (dump / "host_1").glob("module_0004.jit_train_step*"):
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    (dump / "host_3").rename(dump / "worker_3")
    job = job_profile(host_traces(JOB), load_dump(dump)).job
    assert job is not None
    used = {row.host: (row.dump, row.dump_match) for row in job.hosts}
    assert used == {
        "host_0": (str(dump / "host_0"), "own folder"),
        "host_1": (str(dump / "host_1"), "own folder"),
        "host_2": (str(dump / "host_2"), "own folder"),
        "host_3": (str(dump), "no folder of its name"),
    }
    sent = {(row.host, row.bytes_per_execution) for row in job.collectives}
    assert sent == {("host_0", 115591), ("host_1", None), ("host_2", 115591), ("host_3", 115591)}
    result = runner.invoke(app, ["profile", str(JOB), "--dump", str(dump), "--top", "1"])
    assert "host_3 had no folder of its name and joined the whole dump" in result.stdout
    # the ops shown are host_1's (the straggler), whose folder lacks its module: the note names that folder
    assert f"note: {dump / 'host_1'}: none of the traced modules is in this dump" in result.stderr


def test_a_dump_of_one_folder_is_every_hosts(tmp_path):
    dump = tmp_path / "dump"
    shutil.copytree(FIXTURES / "dumps" / "multihost_straggler" / "host_2", dump)
    job = job_profile(host_traces(JOB), load_dump(dump)).job
    assert job is not None
    assert {(row.dump, row.dump_match) for row in job.hosts} == {(str(dump), "whole dump")}
    assert {row.bytes_per_execution for row in job.collectives} == {115591}


def _all_reduce(ops):
    return next(op for op in ops if op.name == "all-reduce.3")


def test_the_profile_shown_is_the_stragglers_and_says_so():
    """The straggler's steps are the job's and its all-reduce hardly waits: its profile (headline, ops)
    tells what the others wait for, where host_0's said "device-bound" (its all-reduce waiting)."""
    report = job_profile(host_traces(JOB))
    assert report.job is not None and report.job.ops_host == "host_1"
    truth = {h["host"]: h for h in _truth(JOB)["hosts"]}
    assert report.step_summary is not None
    assert report.step_summary.step_seconds == pytest.approx(truth["host_1"]["step_seconds"], rel=0.10)
    assert report.step_summary.typical.bound == "host"  # its load_batch
    extra = _extra_input(JOB)
    shown = _all_reduce(report.ops)  # 23 ms a step of its 98.8 ms over 2 devices, most in step 0 (the compile)
    assert shown.wait_seconds is not None and shown.wait_seconds_per_step is not None
    assert shown.wait_seconds_per_step < 0.5 * extra
    assert all(op.wait_seconds is None for op in report.ops if op is not shown)  # no other op is a collective
    data = json.loads(runner.invoke(app, ["profile", str(JOB), "--format", "json"]).stdout)
    assert data["ops_host"] == "host_1" and "are host_1's, the straggler's" in data["ops_host_said"]
    text = runner.invoke(app, ["profile", str(JOB), "--top", "2"]).stdout
    assert "timeline are host_1's, the straggler's" in text
    assert "wait_seconds_per_step" in next(line for line in text.splitlines() if line.startswith("module "))


def test_a_waiting_hosts_op_rows_split_the_wait_from_the_transfer():
    """host_0's all-reduce: one device's time a step in it is mostly its wait for host_1 (about host_1's
    extra input work: 87 ms of 126 ms a step)."""
    read = [summarise_host(h, p, None, None, None) for h, p in host_traces(JOB).items()]
    summaries = [summary for summary, _ in read]
    job = job_of(summaries, [], None, lambda host: ([], [], [], []))
    report = read[0][1]
    with_op_waits(report, summaries[0], collective_waits(summaries, job.clock.offsets))
    op = _all_reduce(report.ops)
    assert op.wait_seconds_per_step == pytest.approx(_extra_input(JOB), rel=0.15)
    assert op.wait_seconds is not None and 0.6 < op.wait_seconds / op.total_seconds < 1
    in_clean_steps = sum(row.wait_seconds for row in job.collectives if row.host == "host_0")
    assert in_clean_steps < op.wait_seconds  # the rows leave step 0 (the compile) out; the op row has it


def test_without_a_straggler_the_profile_is_the_first_hosts(tmp_path):
    traces = host_traces(JOB)
    for host in ("host_0", "host_2", "host_3"):
        shutil.copyfile(traces[host][0], tmp_path / f"{host}.xplane.pb")
    data = json.loads(runner.invoke(app, ["profile", str(tmp_path), "--format", "json"]).stdout)
    assert data["straggler"]["name"] is None and data["ops_host"] == "host_0"
    assert "are host_0's, the first host's (no host stands out)" in data["ops_host_said"]
    op = next(op for op in data["ops"] if op["name"] == "all-reduce.3")
    assert 0 < op["wait_seconds"] < op["total_seconds"]


@pytest.mark.parametrize("folder", [JOB, ONE], ids=["multihost_straggler", "multidevice_cpu"])
def test_a_step_is_one_devices_against_the_devices_rows_and_pythons_clock(folder):
    """The op and function figures a step are one device's over the steps without a compile: the
    all-reduce's mean, max and slowest device are the `devices` rows' time in collectives a step (the only
    collective) over those steps, the function's their busy time; each step's figure is under the wall
    Python measured around the step. Summed over the devices (as before) the all-reduce took 12.5 ms a step
    on multidevice_cpu where the median step is 2.2 ms."""
    report = job_profile(host_traces(folder))
    job = report.job
    assert job is not None
    rows = [d for d in job.devices if d.host == job.ops_host]
    steady = {d.device: [s for s in d.steps if not s.compiled] for d in rows}
    collective = {k: sum(s.collective_seconds for s in v) / len(v) for k, v in steady.items()}
    busy = {k: sum(s.busy_seconds for s in v) / len(v) for k, v in steady.items()}
    op = _all_reduce(report.ops)
    assert op.devices == len(rows) == (8 if folder == ONE else 2) and op.steps == 7  # step 0 compiled
    assert op.seconds_per_step == pytest.approx(mean(collective.values()), rel=1e-9)
    assert op.seconds_per_step_max_device == pytest.approx(max(collective.values()), rel=1e-9)
    assert op.seconds_per_step_median_device == pytest.approx(median(collective.values()), rel=1e-9)
    assert op.slowest_device == max(collective, key=collective.__getitem__)
    compiling = {d.device: next(s for s in d.steps if s.compiled).collective_seconds for d in rows}
    assert op.total_seconds == pytest.approx(
        op.seconds_per_step * op.devices * op.steps + sum(compiling.values()), rel=1e-9
    )  # the compile's step apart
    function = report.functions[0]
    assert function.devices == len(rows)
    assert function.seconds_per_step == pytest.approx(mean(busy.values()), rel=1e-9)
    assert function.seconds_per_step_max_device == pytest.approx(max(busy.values()), rel=1e-9)
    assert function.slowest_device == max(busy, key=busy.__getitem__)
    walls = next(h for h in _truth(folder)["hosts"] if h["host"] == job.ops_host)["step_walls_seconds"]
    assert all(seconds < wall for seconds, wall in zip(function.seconds_by_step, walls, strict=True))
    assert op.seconds_per_step_max_device < sum(walls) / len(walls)
    assert op.seconds_per_step_max_device < median(walls)  # the all-reduce: 0.85 ms of 2.2 ms; 50.8 ms of 134 ms


def test_the_first_line_answers_for_the_job():
    """The job's step, the straggler, what it ran while the others waited, where they waited: the job is
    bound by host_1's input pipeline, not "device-bound"; host_1's own headline follows."""
    report = job_profile(host_traces(JOB))
    job = report.job
    assert job is not None and job.straggler is not None
    found = job.straggler
    walls = [
        w for h in _truth(JOB)["hosts"] for k, w in enumerate(h["step_walls_seconds"]) if k not in h["compile_steps"]
    ]
    assert found.step_seconds == pytest.approx(median(walls), rel=0.05)  # 131 ms; Python: 132 ms
    assert found.waited_in == "all-reduce.3"
    what, name, seconds = found.meanwhile[0]
    assert (what, name) == ("host", "load_batch") and seconds == pytest.approx(_extra_input(JOB), rel=0.15)
    text = runner.invoke(app, ["profile", str(JOB), "--top", "1"]).stdout.splitlines()
    expected = (
        f"job of 4 hosts: {duration(found.step_seconds)} a step (median of every host's steps without a "
        f"compile); bound by the straggler's host work: host_1: {duration(seconds)} of host work a step "
        f"(load_batch) makes the other hosts wait {duration(found.wait_seconds)} a step in all-reduce.3; on "
        "host_1, move that work off the step's path"
    )
    assert text[0].startswith(expected) and "device-bound" not in text[0]
    assert text[1].startswith("host_1's own step: jit_train_step: ") and "host-bound" in text[1]
    data = json.loads(runner.invoke(app, ["profile", str(JOB), "--format", "json"]).stdout)
    assert data["job_headline"] == text[0] and data["straggler"]["waited_in"] == "all-reduce.3"


def test_the_reports_first_screen_and_findings_charge_the_wait_to_the_straggler(tmp_path):
    """The first finding is the straggler's, costed by the others' wait; the all-reduce's finding is its
    transfer only (its time a step less its wait), and host_1's idle time is not a finding of its own."""
    markdown, page = tmp_path / "report.md", tmp_path / "report.html"
    dump = FIXTURES / "dumps" / "multihost_straggler"
    argv = ["report", str(dump), "--profile", str(JOB), "--markdown", str(markdown), "--html", str(page)]
    assert runner.invoke(app, argv).exit_code == 0
    report = job_profile(host_traces(JOB), load_dump(dump))
    job = report.job
    assert job is not None and job.straggler is not None
    first = runner.invoke(app, ["profile", str(JOB), "--format", "json"])
    headline = json.loads(first.stdout)["job_headline"]
    text = markdown.read_text()
    summary = text.split("## Summary\n\n", 1)[1].split("\n## ", 1)[0].splitlines()
    wait = job.straggler.wait_seconds
    assert summary[0].startswith(f"1. **{duration(wait)} a step ({duration(wait * 7)} a run)** (hosts): host_1: ")
    op = _all_reduce(report.ops)
    assert op.wait_seconds_per_step is not None and op.seconds_per_step is not None
    transfer = op.seconds_per_step - op.wait_seconds_per_step  # 39.8 ms of 40.8 ms a step
    assert summary[1].startswith(f"2. **{duration(transfer)} a step") and "all-reduce.3" in summary[1]
    assert "or shard so it sends less" in summary[1] and not any("idle, host" in line for line in summary)
    assert f"**{headline}**" in text.split("## Where the time goes", 1)[1].split("\n## ", 1)[0]
    html = page.read_text()
    screen = html.split("<section id='time'>", 1)[1].split("</section>", 1)[0]
    assert "data-first='hosts'" in screen and "host_1 |" in screen


FRAMES = FIXTURES / "profiles" / "multihost_frames"


def test_the_first_line_names_the_stragglers_frame(tmp_path):
    """multihost_frames was traced with Python's frames: the first line, the straggler's text, the report's
    first screen and its first finding name the user's frame of host_2's slow input work, `generate.py:<the
    first line of load_batch> load_batch` as Python's code object gives it (truth.json), not numpy's
    np.sort it spends the time in; host_2's work is about its extra input time by time.perf_counter."""
    truth = _truth(FRAMES)
    report = job_profile(host_traces(FRAMES))
    job = report.job
    assert job is not None and job.straggler is not None
    found = job.straggler
    assert found.name == truth["slow_host"] == "host_2"
    assert found.frame == truth["slow_work_frame"] == "generate.py:2077 load_batch"
    what, name, seconds = found.meanwhile[0]
    assert (what, name) == ("host", "load_batch") and seconds == pytest.approx(_extra_input(FRAMES), rel=0.15)
    text = runner.invoke(app, ["profile", str(FRAMES), "--top", "1"]).stdout.splitlines()
    assert text[0].startswith(
        f"job of 4 hosts: {duration(found.step_seconds)} a step (median of every host's steps without a "
        f"compile); bound by the straggler's host work: host_2: {duration(seconds)} of host work a step "
        f"(load_batch, in {truth['slow_work_frame']}) makes the other hosts wait {duration(found.wait_seconds)} "
        "a step in all-reduce.3"
    )
    assert f"; most of it in {truth['slow_work_frame']}" in next(t for t in text if t.startswith("host_2 is the"))
    markdown = tmp_path / "report.md"
    dump = FIXTURES / "dumps" / "multihost_frames"
    assert (
        runner.invoke(app, ["report", str(dump), "--profile", str(FRAMES), "--markdown", str(markdown)]).exit_code == 0
    )
    summary = markdown.read_text().split("## Summary\n\n", 1)[1].splitlines()
    assert summary[0].startswith("1. **") and f"(load_batch, in {truth['slow_work_frame']})" in summary[0]
    data = json.loads(runner.invoke(app, ["profile", str(FRAMES), "--format", "json"]).stdout)
    assert data["straggler"]["frame"] == truth["slow_work_frame"] and data["job_headline"] == text[0]


def test_without_pythons_frames_no_frame_is_named():
    """multihost_straggler was traced with the Python tracer off: its first line names the annotation
    alone."""
    found = job_profile(host_traces(JOB)).job.straggler
    assert found is not None and found.name == "host_1" and found.frame is None


SLOW = FIXTURES / "profiles" / "slow_device"


@pytest.fixture(scope="module")
def slow_device():
    report = job_profile(host_traces(SLOW), load_dump(FIXTURES / "dumps" / "slow_device"))
    assert report.job is not None and report.job.straggler is not None
    return report


def test_one_hosts_slow_device_is_the_straggler_by_the_hosts_rule(slow_device):
    """slow_device: device 2 runs 22 more loop trips than the others' 2 before the all-reduce (truth.json).
    The job's rule, per device, names it; it arrives later than the next latest by about what its extra
    trips add to the step by time.perf_counter (16.8 ms against 6.3 ms without them), the others wait about
    that long, and its own work a step (busy less collectives, the devices rows) exceeds the others' median
    by about as much."""
    truth = _truth(SLOW)
    job = slow_device.job
    found = job.straggler
    assert found.level == "device" and found.name == truth["slow_device"] == "device 2"
    assert found.last_in_steps == found.steps == truth["steps"]
    extra_trips = truth["step_seconds"] - truth["balanced_step_seconds"]
    assert found.step_seconds == pytest.approx(truth["step_seconds"], rel=0.05)
    assert found.margin_seconds == pytest.approx(extra_trips, rel=0.15)
    assert found.wait_seconds == pytest.approx(extra_trips, rel=0.15)
    own = {row.device: row.busy_seconds - row.collective_seconds for row in job.devices}
    others = median(seconds for device, seconds in own.items() if device != found.name)
    assert own[found.name] - others == pytest.approx(found.margin_seconds, rel=0.2)


def test_a_slow_devices_extra_work_is_its_op_beyond_the_median_device(slow_device):
    """The op device 2 spends the most time in beyond the median device is the loop body's matmul (its
    op_name is the fori_loop's body), by the op rows' own per-device figures; collectives are left out; its
    source line is the body's matmul's line of fixtures/generate.py (its HLO metadata's)."""
    found = slow_device.job.straggler
    assert found.extra_work is not None
    name, seconds, source = found.extra_work
    op = next(op for op in slow_device.ops if op.name == name)
    assert op.op_name == "jit(local_step)/shard_map/while/body/dot_general" and op.slowest_device == "device 2"
    line = int(source.rpartition(":")[2]) if source else 0
    assert source == op.source and "h @ w" in (REPO / "fixtures" / "generate.py").read_text().splitlines()[line - 1]
    assert op.seconds_per_step_max_device is not None and op.seconds_per_step_median_device is not None
    assert seconds == op.seconds_per_step_max_device - op.seconds_per_step_median_device
    assert 0 < seconds < found.margin_seconds


def test_the_first_line_says_the_job_waits_on_the_slow_device(slow_device, tmp_path):
    """The first line of `profile`, its JSON `job_headline` and the report's first screen say device 2's
    work holds the job and what the others wait in, not "device-bound"; no own-step line follows (one
    host's step is the job's); the report's first finding is the others' wait charged to device 2."""
    found = slow_device.job.straggler
    name, seconds, source = found.extra_work
    dump = FIXTURES / "dumps" / "slow_device"
    text = runner.invoke(app, ["profile", str(SLOW), "--dump", str(dump), "--top", "1"]).stdout.splitlines()
    assert text[0] == (
        f"job of 4 devices on one host: {duration(found.step_seconds)} a step (median of the host's steps "
        f"without a compile); bound by the straggler's own device work: device 2 finishes its work "
        f"{duration(found.margin_seconds)} a step after the next latest device ({name}, generate.py:"
        f"{source.rpartition(':')[2]}: {duration(seconds)} a "
        f"step more than the median device) and makes the other devices wait {duration(found.wait_seconds)} a "
        f"step in {found.waited_in}; on device 2, give it no more work than the others (balance the shards)"
    )
    assert found.waited_in == "psum_invariant.7" and text[1].strip().startswith("vm device 0 |")
    assert not any("device-bound" in line or "own step" in line for line in text[:2])
    data = json.loads(runner.invoke(app, ["profile", str(SLOW), "--dump", str(dump), "--format", "json"]).stdout)
    assert data["job_headline"] == text[0] and data["straggler"]["extra_work"] == [name, seconds, source]
    markdown = tmp_path / "report.md"
    assert runner.invoke(app, ["report", str(dump), "--profile", str(SLOW), "--markdown", str(markdown)]).exit_code == 0
    report = markdown.read_text()
    summary = report.split("## Summary\n\n", 1)[1].splitlines()
    wait = found.wait_seconds
    sentence = text[0].split("bound by the straggler's own device work: ", 1)[1]
    assert summary[0] == f"1. **{duration(wait)} a step ({duration(wait * 6)} a run)** (hosts): {sentence}"
    assert f"**{text[0]}**" in report.split("## Where the time goes", 1)[1].split("\n## ", 1)[0]


def test_eight_devices_none_slow_have_no_such_line():
    """multidevice_cpu: no device stands out (its latest arrives 87 us after the next latest, under 5% of
    the 2.2 ms step), so the first line is the step's own and JSON's job_headline is null."""
    found = job_profile(host_traces(ONE)).job.straggler
    assert found is not None and found.level == "device" and found.name is None and found.extra_work is None
    data = json.loads(runner.invoke(app, ["profile", str(ONE), "--format", "json"]).stdout)
    assert data["job_headline"] is None
    text = runner.invoke(app, ["profile", str(ONE), "--top", "1"]).stdout.splitlines()
    assert text[0].startswith("jit_train_step: ") and "straggler" not in text[0]
