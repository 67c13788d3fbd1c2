"""Dumps of multi-host jobs: one folder per host (or XLA 2026's `<module>/<host>_<pid>/` sub-folders) are
read as hosts, and `doctor` names the hosts whose compile counts differ from the rest.

The fleets are built in tmp_path from the real `ragged_batch` fixture (jit_train_step and jit_eval_step,
two compiles each); the odd host is made by deleting one compile's files, as a host that compiled less.
"""

from __future__ import annotations

import shutil

from conftest import DUMPS

from xlainspect.analysis.doctor import diagnose
from xlainspect.analysis.recompiles import count_recompiles
from xlainspect.dump.directory import load_dump
from xlainspect.report.views.doctor import examples


def _fleet(root, hosts: int):
    for index in range(hosts):
        shutil.copytree(DUMPS / "ragged_batch", root / f"host_{index}")
    return root


def _host_finding(health):
    return next(f for f in health.findings if f.check == "host-compile-counts")


def test_host_folders_are_hosts_with_their_compiles(tmp_path):
    dump = load_dump(_fleet(tmp_path, 3))
    assert sorted({m.host for m in dump.modules}) == ["host_0", "host_1", "host_2"]
    assert [(m.host, m.module_id) for m in dump.functions()["jit_train_step"]] == [
        ("host_0", 0),
        ("host_0", 2),
        ("host_1", 0),
        ("host_1", 2),
        ("host_2", 0),
        ("host_2", 2),
    ]


def test_doctor_names_the_host_that_compiled_less(tmp_path):
    fleet = _fleet(tmp_path, 4)
    for path in (fleet / "host_2").glob("module_0002.*"):  # host_2 lost jit_train_step's second compile
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    finding = _host_finding(diagnose(fleet))
    assert finding.severity == "warning"
    assert finding.count == 1
    assert examples(finding) == ("host_2: jit_train_step 1 (most hosts 2)",)


def test_hosts_that_agree_give_no_host_finding(tmp_path):
    health = diagnose(_fleet(tmp_path, 3))
    assert [f.check for f in health.findings if f.check == "host-compile-counts"] == []
    assert health.modules == 12


def test_per_process_subfolders_of_module_folders_are_hosts(tmp_path):
    """--xla_dump_hlo_to_subfolder: `<dir>/module_0000.jit_f/<host>_<pid>/` holds each process's files."""
    for module in ("module_0000.jit_train_step", "module_0002.jit_train_step"):
        for host in ("worker-a_101", "worker-b_202"):
            target = tmp_path / module / host
            target.mkdir(parents=True)
            for path in DUMPS.joinpath("ragged_batch").glob(f"{module}.*"):
                shutil.copy(path, target / path.name)
    dump = load_dump(tmp_path)
    hosts = sorted((m.host, m.module_id) for m in dump.modules)
    assert hosts == [("worker-a_101", 0), ("worker-a_101", 2), ("worker-b_202", 0), ("worker-b_202", 2)]
    assert all(m.hlo_file() and m.file("buffer-assignment") for m in dump.modules)


def test_doctor_reports_progress_per_check(tmp_path):
    """The CLI draws these calls as a bar on a terminal (a fleet's dump takes seconds): one per check (the
    HLO texts' three findings come from one read of each file, one check)."""
    heard = []

    def progress(description, total):
        heard.append([description, total, 0])
        return lambda n=1: heard[-1].__setitem__(2, heard[-1][2] + n)

    diagnose(_fleet(tmp_path, 2), progress)
    # unknown-files, host-programs and host-programs-uncompared among them
    assert heard == [["checking the dump", 11, 11]]


def test_count_recompiles_explains_one_usual_host(tmp_path):
    """Four hosts compiled jit_train_step twice each (batch 100, then 5), host_2 once: counted and
    explained per host, from a host that compiled as most did."""
    fleet = _fleet(tmp_path, 4)
    for path in (fleet / "host_2").glob("module_0002.*"):
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    rows = {r.name: r for r in count_recompiles(load_dump(fleet)).functions}
    train = rows["jit_train_step"]
    assert (train.modules, train.module_ids, train.hosts) == (2, (0, 2), 4)
    assert [(c.kind, c.parameter, c.values) for c in train.causes] == [
        ("shape", "x", (100, 5)),
        ("shape", "y", (100, 5)),
    ]


def test_count_recompiles_table_says_the_counts_are_per_host(tmp_path):
    from typer.testing import CliRunner

    from xlainspect.cli.app import app

    result = CliRunner().invoke(app, ["count-recompiles", str(_fleet(tmp_path, 3)), "--format", "markdown"])
    assert result.exit_code == 0, result.output
    assert "4 compiles of 2 functions, 2 compiled more than once, on each of 3 hosts" in result.output
