"""`profile LOGDIR --scheduler ADDRESS`: each host's summary a task on a real Dask cluster (a LocalCluster
of two worker processes, one thread each), its answer byte for byte the local run's; a bad address and a
lost worker one line and exit 2, with nothing on stdout."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys

import pytest
from conftest import FIXTURES, REPO, local_cluster
from typer.testing import CliRunner

from xlainspect import cluster, settings
from xlainspect.cli.app import app

distributed = pytest.importorskip("distributed")

JOB = FIXTURES / "profiles" / "multihost_straggler"
FLEET = FIXTURES / "dumps" / "fleet_divergence"
runner = CliRunner()


@pytest.fixture(scope="module")
def scheduler():
    with local_cluster() as address:
        yield address


@pytest.fixture(autouse=True)
def _settings_kept(monkeypatch):
    """The CLI's `--no-cache` and its own process's settings are left to this test: later tests of this
    worker find them as they were."""
    for name in ("_cache_enabled", "_parse_workers", "_pause_gc"):
        monkeypatch.setattr(settings, name, getattr(settings, name))


def _profile(*arguments: str, command: str = "profile") -> tuple[int, str, str]:
    result = runner.invoke(app, ["--no-cache", command, *arguments, "--format", "json"])
    return result.exit_code, result.stdout, result.stderr


def _counted(monkeypatch) -> list[int]:
    """The items of each map on the cluster, as they are sent."""
    calls: list[int] = []
    real = cluster.map_on_cluster

    def counted(address, function, items):
        calls.append(len(items))
        return real(address, function, items)

    monkeypatch.setattr(cluster, "map_on_cluster", counted)
    return calls


def test_the_job_on_a_cluster_is_the_local_answer(scheduler):
    local = _profile(str(JOB))
    on_cluster = _profile(str(JOB), "--scheduler", scheduler)
    assert local[0] == on_cluster[0] == 0, on_cluster[2]
    assert on_cluster[1] == local[1]
    assert json.loads(on_cluster[1])["straggler"]["name"] == "host_1"


def test_the_scheduler_from_the_environment(scheduler, monkeypatch):
    calls = _counted(monkeypatch)
    result = runner.invoke(
        app, ["--no-cache", "profile", str(JOB), "--format", "json"], env={"XLAINSPECT_SCHEDULER": scheduler}
    )
    assert result.exit_code == 0, result.stderr
    assert calls == [4, 1]  # every host's summary, then the straggler's activity


def test_a_damaged_host_is_skipped_on_the_cluster_as_here(scheduler, tmp_path):
    job = shutil.copytree(JOB, tmp_path / "job")
    damaged = next(job.rglob("host_2.xplane.pb*"))
    damaged.write_bytes(damaged.read_bytes()[:1000])
    local = _profile(str(job))
    on_cluster = _profile(str(job), "--scheduler", scheduler)
    assert on_cluster == local
    assert local[0] == 0 and "host_2.xplane.pb" in local[2]


@pytest.mark.parametrize(("command", "tasks"), [("count-recompiles", [4]), ("doctor", [4, 4])])
def test_a_fleets_hosts_are_read_on_the_cluster_as_here(scheduler, monkeypatch, command, tasks):
    """A task per host: doctor's every HLO file's edges and digest, then (both commands) the programs
    the hosts compiled, compared by digest; host_2's other program is found as here."""
    calls = _counted(monkeypatch)
    local = _profile(str(FLEET), command=command)
    on_cluster = _profile(str(FLEET), "--scheduler", scheduler, command=command)
    assert on_cluster == local and local[0] == 0
    assert calls == tasks
    answer = json.loads(local[1])
    if command == "count-recompiles":
        found = [(d["compile"], d["odd_hosts"], d["line"]) for d in answer["host_disagreements"]]
        assert found == [(1, ["host_2"], 14), (2, ["host_2"], 14)]
    else:
        [finding] = answer["findings"]
        assert (finding["check"], finding["count"]) == ("host-programs", 2)
        assert finding["examples"][1].startswith("host_2: jit_train_step compile 2 differs from host_0, host_1, host_3")


@pytest.mark.parametrize("command", ["count-recompiles", "doctor"])
def test_a_fleets_unreadable_program_is_named_on_the_cluster_as_here(scheduler, tmp_path, command):
    fleet = shutil.copytree(FLEET, tmp_path / "fleet")
    damaged = fleet / "host_3" / "module_0000.jit_train_step.before_optimizations.txt"
    damaged.unlink()
    damaged.symlink_to(tmp_path / "gone")  # listed, not readable
    local = _profile(str(fleet), command=command)
    on_cluster = _profile(str(fleet), "--scheduler", scheduler, command=command)
    assert on_cluster == local and local[0] == 0
    assert "host_3/module_0000.jit_train_step.before_optimizations.txt" in local[1]


def test_profile_report_takes_a_scheduler(scheduler):
    from xlainspect.analysis.commands.profile import profile_report

    report = profile_report(JOB, scheduler=scheduler)
    assert report.job is not None and [row.host for row in report.job.hosts] == ["host_0", "host_1", "host_2", "host_3"]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(("command", "where"), [("profile", JOB), ("count-recompiles", FLEET), ("doctor", FLEET)])
def test_a_bad_address_is_one_line(monkeypatch, command, where):
    monkeypatch.setattr(cluster, "CONNECT_SECONDS", 1.0)
    address = f"tcp://127.0.0.1:{_closed_port()}"
    code, out, err = _profile(str(where), "--scheduler", address, command=command)
    assert (code, out) == (2, "")
    assert err.startswith(f"cannot reach the Dask scheduler at {address}: ")
    assert len(err.strip().splitlines()) == 1


class _KillOnExecute(distributed.WorkerPlugin):
    """Ends its worker's process as a task starts: a machine lost mid-run."""

    def transition(self, key, start, finish, **kwargs):
        if finish == "executing":
            os._exit(1)


def test_a_lost_worker_is_one_line_and_no_answer():
    """Dask retries a task whose worker died on another worker; here every worker dies (allowed-failures
    0: the first death is final), so the scheduler gives the task up (KilledWorker)."""
    with local_cluster(DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES="0") as address:
        with distributed.Client(address) as client:
            client.register_plugin(_KillOnExecute(), name="kill")
        code, out, err = _profile(str(JOB), "--scheduler", address)
    assert (code, out) == (2, "")
    assert err.startswith(f"the Dask cluster at {address} lost the run (KilledWorker: ")
    assert err.rstrip().endswith(": no answer") and len(err.strip().splitlines()) == 1


def test_a_local_run_never_imports_distributed():
    code = (
        "import sys; import xlainspect.cli.profile_cmd, xlainspect.analysis.commands.profile\n"
        "from xlainspect.workers import map_hosts\n"
        "assert map_hosts(abs, [-1, 2], None) == [1, 2]\n"
        "assert not {'distributed', 'dask', 'xlainspect.cluster'} & set(sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize(("command", "where"), [("profile", JOB), ("count-recompiles", FLEET), ("doctor", FLEET)])
def test_workers_of_another_xlainspect_are_refused(scheduler, monkeypatch, command, where):
    monkeypatch.setattr(cluster, "_version", lambda: "0.0.0-other")
    code, out, err = _profile(str(where), "--scheduler", scheduler, command=command)
    assert (code, out) == (2, "")
    assert err.startswith("the Dask worker tcp://127.0.0.1:") and err.rstrip().endswith(
        ", this is 0.0.0-other: install the same version on every worker"
    )


def test_a_scheduler_without_workers_is_one_line():
    with local_cluster(0) as address:
        code, out, err = _profile(str(JOB), "--scheduler", address)
    assert (code, out) == (2, "")
    assert err == f"the Dask scheduler at {address} has no workers (start some: dask worker {address})\n"
