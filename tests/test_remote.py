"""Dumps read from object storage: real servers started here (gcp-storage-emulator for gs://, moto's
server for s3://) on free 127.0.0.1 ports, committed fixture dumps uploaded to them, and each command's
answer on the URL compared with its answer on the same files on local disk. gcsfs finds the emulator
through STORAGE_EMULATOR_HOST, s3fs the S3 server through AWS_ENDPOINT_URL: nothing of xlainspect's
is told about them."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest
from conftest import DUMPS, FIXTURES, REPO, local_cluster

from xlainspect import diagnose
from xlainspect.dump.storage import local

# gcsfs reads this when imported (by the uploads here): without it, gcsfs asks each bucket over gRPC
# whether it is hierarchical, which an emulator never answers (60 s)
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
fsspec = pytest.importorskip("fsspec")
pytest.importorskip("gcsfs")
pytest.importorskip("s3fs")
pytest.importorskip("moto")
pytest.importorskip("gcp_storage_emulator")

STRAGGLER = FIXTURES / "profiles" / "multihost_straggler"
_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _serve(command: list[str], port: int, env: dict | None = None):
    """Start a server process and wait until it accepts connections on `port`."""
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})}
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return process
        time.sleep(0.1)
    process.kill()
    pytest.fail(f"server {command[:3]} did not start on port {port}")


def _stop(process) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.fixture(scope="module")
def servers():
    """Both servers, and the environment that points the libraries at them."""
    gcs_port, s3_port = _free_port(), _free_port()
    gcs = _serve(
        [
            sys.executable,
            "-m",
            "gcp_storage_emulator",
            "start",
            "--host=127.0.0.1",
            f"--port={gcs_port}",
            "--in-memory",
        ],
        gcs_port,
    )
    s3 = _serve([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(s3_port)], s3_port)
    env = {
        "STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{gcs_port}",
        "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{s3_port}",
        **_CREDENTIALS,
    }
    try:
        yield env
    finally:
        _stop(gcs)
        _stop(s3)


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    """One cache folder for the commands run here: each URL is fetched once (gcp-storage-emulator
    answers a download in about 0.1 s)."""
    return str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def uploaded(servers):
    """One dump (shape_branch) in a bucket of each server, and a 2-host fleet (ragged_batch per host) in
    S3's (gcp-storage-emulator answers a download in about 0.1 s: a fleet there would take seconds)."""
    saved = {name: os.environ.get(name) for name in servers}
    os.environ.update(servers)
    try:
        for protocol in ("gs", "s3"):
            fs = fsspec.filesystem(protocol, skip_instance_cache=True)
            fs.mkdir("dumps")
            for host in ("host_0", "host_1") if protocol == "s3" else ():
                fs.put(str(DUMPS / "ragged_batch"), f"dumps/fleet/{host}", recursive=True)
            fs.put(str(DUMPS / "shape_branch"), "dumps/shape_branch", recursive=True)
            fs.pipe("dumps/notes/README.txt", b"not a dump")
        s3 = fsspec.filesystem("s3", skip_instance_cache=True)
        s3.put(str(DUMPS / "fleet_divergence"), "dumps/fleet_divergence", recursive=True)
        s3.put(str(STRAGGLER / "plugins"), "dumps/straggler/plugins", recursive=True)
        yield servers
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _run(env: dict, *args: str, cache: str | None = None) -> subprocess.CompletedProcess:
    extra = {"PYTHONPATH": str(REPO), **env}
    if cache is not None:
        extra["XLAINSPECT_CACHE_DIR"] = cache
    return subprocess.run(
        [sys.executable, "-m", "xlainspect", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **extra},
        check=False,
        timeout=120,
    )


def _local_fleet(tmp_path):
    for host in ("host_0", "host_1"):
        shutil.copytree(DUMPS / "ragged_batch", tmp_path / "fleet" / host)
    return tmp_path / "fleet"


@pytest.mark.parametrize(("url", "folder"), [("gs://dumps/shape_branch", None), ("s3://dumps/fleet", "fleet")])
def test_count_recompiles_on_a_url_equals_local_disk(uploaded, cache, tmp_path, url, folder):
    local = _local_fleet(tmp_path) if folder else DUMPS / "shape_branch"
    remote = _run(uploaded, "count-recompiles", url, "-f", "json", cache=cache)
    on_disk = _run(uploaded, "count-recompiles", str(local), "-f", "json", cache=cache)
    assert remote.returncode == on_disk.returncode == 0, remote.stderr
    answer = json.loads(remote.stdout)
    assert answer == json.loads(on_disk.stdout)
    name, count = ("jit_train_step", 2) if folder else ("jit_featurize", 4)  # a fleet: per host
    found = next(f for f in answer["functions"] if f["name"] == name)
    assert found["modules"] == count and found["causes"]


@pytest.mark.parametrize("protocol", ["gs", "s3"])
def test_doctor_and_parse_on_a_url_equal_local_disk(uploaded, cache, protocol):
    remote = _run(uploaded, "doctor", f"{protocol}://dumps/shape_branch", "-f", "json", cache=cache)
    on_disk = _run(uploaded, "doctor", str(DUMPS / "shape_branch"), "-f", "json", cache=cache)
    assert remote.returncode == on_disk.returncode == 0, remote.stderr
    strip = lambda answer: {k: v for k, v in json.loads(answer).items() if k != "root"}  # noqa: E731
    assert strip(remote.stdout) == strip(on_disk.stdout)
    name = "module_0000.jit_featurize.cpu_after_optimizations.txt"
    parsed = _run(uploaded, "parse", f"{protocol}://dumps/shape_branch/{name}", "-f", "json", cache=cache)
    assert parsed.returncode == 0, parsed.stderr
    parsed_here = _run(uploaded, "parse", str(DUMPS / "shape_branch" / name), "-f", "json", cache=cache)
    [answer], [answer_here] = json.loads(parsed.stdout), json.loads(parsed_here.stdout)
    assert answer.pop("file").endswith(name) and answer_here.pop("file").endswith(name)
    assert answer == answer_here and answer["module"] == "jit_featurize"


def test_doctor_names_the_diverging_host_of_a_fleet_in_a_bucket(uploaded, cache):
    remote = _run(uploaded, "doctor", "s3://dumps/fleet_divergence", "-f", "json", cache=cache)
    on_disk = _run(uploaded, "doctor", str(DUMPS / "fleet_divergence"), "-f", "json", cache=cache)
    assert remote.returncode == on_disk.returncode == 0, remote.stderr
    findings = json.loads(remote.stdout)["findings"]
    assert findings == json.loads(on_disk.stdout)["findings"]
    assert [(f["check"], f["severity"], f["examples"][0][:40]) for f in findings] == [
        ("host-programs", "error", "host_2: jit_train_step compile 1 differs")
    ]


def test_the_mirror_fetches_an_object_again_only_when_its_version_changes(uploaded, tmp_path, monkeypatch):
    monkeypatch.setenv("XLAINSPECT_CACHE_DIR", str(tmp_path))
    fs = fsspec.filesystem("s3", skip_instance_cache=True)
    fs.put(str(DUMPS / "shape_branch"), "dumps/changing", recursive=True)
    name = "module_0000.jit_featurize.cpu_after_optimizations.txt"
    mirror = local("s3://dumps/changing")
    first = (mirror / name).stat().st_mtime_ns
    assert local("s3://dumps/changing") == mirror and (mirror / name).stat().st_mtime_ns == first
    text = (mirror / name).read_bytes()
    changed = text.replace(
        b"jit_featurize", b"jit_featurizz", 1
    )  # the same size: a cache keyed by size and mtime could miss it
    assert len(changed) == len(text)
    fs.pipe(f"dumps/changing/{name}", changed)
    assert (local("s3://dumps/changing") / name).read_bytes() == changed


@pytest.mark.parametrize(
    ("url", "cause"),
    [
        ("gs://no-such-bucket/dump", "no such bucket, folder or object"),
        ("s3://no-such-bucket/dump", "no such bucket, folder or object"),
        ("gs://dumps/no/such/dump", "no such bucket, folder or object"),
        ("s3://dumps/no/such/dump", "no such bucket, folder or object"),
        ("nosuchprotocol://dumps/fleet", "not a URL fsspec can read"),
        ("s3://", "names no bucket or folder"),
        ("gs://dumps/notes", "no files that XLA's dumper or jax.profiler writes there"),
        ("s3://dumps/notes", "no files that XLA's dumper or jax.profiler writes there"),
    ],
)
def test_a_bad_url_is_one_line_naming_it_and_exit_2(uploaded, tmp_path, url, cause):
    result = _run(uploaded, "count-recompiles", url, cache=str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith(f"{url}: {cause}")


def test_no_permission_is_one_line_and_exit_2(uploaded, tmp_path):
    """The S3 server checking credentials (INITIAL_NO_AUTH_ACTION_COUNT=0) refuses the unknown key."""
    port = _free_port()
    server = _serve(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        port,
        {"INITIAL_NO_AUTH_ACTION_COUNT": "0"},
    )
    try:
        result = _run({**uploaded, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}, "doctor", "s3://dumps/fleet")
    finally:
        _stop(server)
    assert result.returncode == 2
    assert result.stderr.strip() == "s3://dumps/fleet: permission denied (Forbidden)"


def test_no_network_is_one_line_and_exit_2(uploaded, tmp_path):
    closed = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    # botocore's one attempt: its default 5, with backoff between them, only make the same error take 8 s
    unreachable = {**uploaded, "AWS_ENDPOINT_URL": closed, "AWS_MAX_ATTEMPTS": "1"}
    result = _run(unreachable, "count-recompiles", "s3://dumps/fleet", cache=str(tmp_path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("s3://dumps/fleet: cannot read (Could not connect to the endpoint URL")


def test_a_pod_is_listed_folder_by_folder_with_progress(uploaded, tmp_path, monkeypatch):
    monkeypatch.setenv("XLAINSPECT_CACHE_DIR", str(tmp_path))
    heard = []

    def progress(description, total):
        heard.append([description, total, 0])
        return lambda n=1: heard[-1].__setitem__(2, heard[-1][2] + n)

    mirror = local("s3://dumps/fleet_divergence", progress)
    assert heard == [["reading s3://dumps/fleet_divergence", 4, 4]]  # one host folder each
    assert sorted(p.name for p in mirror.iterdir() if p.is_dir()) == ["host_0", "host_1", "host_2", "host_3"]


def test_memory_and_file_urls_read_as_the_local_dump(tmp_path, monkeypatch):
    """The in-memory file system of fsspec (not async: its folders are listed one after another) and file://."""
    monkeypatch.setenv("XLAINSPECT_CACHE_DIR", str(tmp_path))
    memory = fsspec.filesystem("memory")
    memory.put(str(DUMPS / "fleet_divergence"), "/pods/fleet", recursive=True)
    local_findings = diagnose(DUMPS / "fleet_divergence").findings
    assert diagnose("memory:///pods/fleet").findings == local_findings
    assert diagnose(f"file://{DUMPS / 'fleet_divergence'}").findings == local_findings


def test_the_workers_of_a_cluster_fetch_their_own_hosts_traces(uploaded, tmp_path):
    """`profile s3://... --scheduler`: the command lists the log dir, each worker fetches its host's
    trace into its own cache, and the answer is the local run's; the reports name the objects' URLs
    where the local run names its mirror's files."""
    pytest.importorskip("distributed")
    mine, theirs = tmp_path / "caller", tmp_path / "workers"
    with local_cluster(2, **uploaded, XLAINSPECT_CACHE_DIR=str(theirs)) as address:
        on_cluster = _run(
            uploaded, "profile", "s3://dumps/straggler", "--scheduler", address, "-f", "json", cache=str(mine)
        )
    here = _run(uploaded, "profile", "s3://dumps/straggler", "-f", "json", cache=str(tmp_path / "here"))
    assert on_cluster.returncode == here.returncode == 0, on_cluster.stderr
    answer, local_answer = json.loads(on_cluster.stdout), json.loads(here.stdout)
    run = "s3://dumps/straggler/plugins/profile/2026_11_28_04_28_39"
    assert answer.pop("paths") == [f"{run}/host_{k}.xplane.pb" for k in range(4)]
    assert [p.rpartition("/")[2] for p in local_answer.pop("paths")] == [f"host_{k}.xplane.pb" for k in range(4)]
    assert answer == local_answer and answer["straggler"]["name"] == "host_1"
    assert not (mine / "remote").exists()  # nothing fetched by the command itself
    assert sorted(p.name for p in theirs.rglob("*.xplane.pb")) == [f"host_{k}.xplane.pb" for k in range(4)]


def _fetched(cache) -> list[str]:
    """The dump files a cache mirrored one object at a time (`<host>/<name>.<digest>/<name>`), as
    `<host>/<name>`."""
    return sorted(f"{p.parent.parent.name}/{p.name}" for p in cache.rglob("module_*") if p.is_file())


FLEET_URL = "s3://dumps/fleet_divergence"


def _fleet_on_cluster_and_here(uploaded, tmp_path, command: str):
    """`command` on the fleet's bucket with a 2-worker LocalCluster (the command's cache `caller`, the
    workers' `workers`) and without one (cache `here`), both exit 0: (on the cluster, here)."""
    pytest.importorskip("distributed")
    with local_cluster(2, **uploaded, XLAINSPECT_CACHE_DIR=str(tmp_path / "workers")) as address:
        on_cluster = _run(
            uploaded, command, FLEET_URL, "--scheduler", address, "-f", "json", cache=str(tmp_path / "caller")
        )
    here = _run(uploaded, command, FLEET_URL, "-f", "json", cache=str(tmp_path / "here"))
    assert on_cluster.returncode == here.returncode == 0, on_cluster.stderr
    return on_cluster, here


def test_the_workers_of_a_cluster_read_their_own_hosts_of_a_fleet(uploaded, tmp_path):
    """`count-recompiles s3://... --scheduler`: the command lists the fleet's bucket and fetches only
    the usual host's files, whose recompiles it explains, and the odd host's programs whose first
    differing line it quotes; each worker fetches its hosts' programs into its own cache, and the
    answer is the local run's, byte for byte."""
    on_cluster, here = _fleet_on_cluster_and_here(uploaded, tmp_path, "count-recompiles")
    mine, theirs = tmp_path / "caller", tmp_path / "workers"
    assert on_cluster.stdout == here.stdout
    assert [d["odd_hosts"] for d in json.loads(here.stdout)["host_disagreements"]] == [["host_2"], ["host_2"]]
    programs = [
        f"module_{m}.before_optimizations.txt"
        for m in ("0000.jit_train_step", "0002.jit_evaluate", "0004.jit_train_step")
    ]
    usual = [f"module_{m}" for m in ("0000.jit_train_step.debug_options", "0004.jit_train_step.debug_options")]
    usual += [
        f"module_{m}.{s}.txt"
        for m in ("0000.jit_train_step", "0002.jit_evaluate", "0004.jit_train_step")
        for s in ("before_optimizations", "cpu_after_optimizations")
    ]
    odd = [f"host_2/{programs[0]}", f"host_2/{programs[2]}"]
    assert _fetched(mine) == sorted([f"host_0/{name}" for name in usual] + odd)  # no mirror of host_1, host_3
    assert _fetched(theirs) == [f"host_{k}/{name}" for k in range(4) for name in programs]


def test_the_workers_of_a_cluster_diagnose_their_own_hosts_of_a_fleet(uploaded, tmp_path):
    """`doctor s3://... --scheduler`: the command lists the fleet's bucket and fetches only what it
    reads itself (each host's debug_options, each distinct module text once to parse it, the programs
    the host-programs finding quotes); each worker reads its hosts' HLO files, and the answer is the
    local run's, its root the URL where the local run names its mirror."""
    on_cluster, here = _fleet_on_cluster_and_here(uploaded, tmp_path, "doctor")
    url, mine, theirs = FLEET_URL, tmp_path / "caller", tmp_path / "workers"
    answer, local_answer = json.loads(on_cluster.stdout), json.loads(here.stdout)
    assert answer.pop("root") == url
    assert local_answer.pop("root").startswith(str(tmp_path / "here" / "remote" / "s3" / "dumps" / "fleet_divergence"))
    assert answer == local_answer
    assert [f["check"] for f in answer["findings"]] == ["host-programs"] and answer["files"] == 84
    texts = ("0000.jit_train_step", "0002.jit_evaluate", "0004.jit_train_step")
    after = [f"module_{m}.cpu_after_optimizations.txt" for m in texts]
    quoted = [f"module_{m}.before_optimizations.txt" for m in (texts[0], texts[2])]
    options = [f"host_{k}/module_0000.jit_train_step.debug_options" for k in range(4)]
    odd = [f"host_2/{name}" for name in (after[0], after[2], *quoted)]  # host_2's programs differ
    assert _fetched(mine) == sorted([*options, *(f"host_0/{name}" for name in after + quoted), *odd])
    programs = [f"module_{m}.{s}.txt" for m in texts for s in ("before_optimizations", "cpu_after_optimizations")]
    assert _fetched(theirs) == [f"host_{k}/{name}" for k in range(4) for name in programs]
