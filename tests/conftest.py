"""Shared paths: committed fixtures, and the public corpus beside the repository when present."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from xlainspect.hlo.model import Module

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
DUMPS = FIXTURES / "dumps"
JAX011 = FIXTURES / "jax011" / "dumps"
CORPUS = Path(os.environ.get("XLAINSPECT_CORPUS", REPO.parent / "shared" / "corpus"))
GPU_CORPUS = Path(os.environ.get("XLAINSPECT_GPU_CORPUS", REPO.parent / "shared" / "gpu-corpus"))
"""Real jax 0.11.2 output of an H200 (its README); tests that read it in place pass over it when absent."""

# xlainspect's cache (xlainspect.cache: parsed models, results, answers, grammar tables) of a test run goes to a
# fresh directory, never ~/.cache.
os.environ["XLAINSPECT_CACHE_DIR"] = tempfile.mkdtemp(prefix="xlainspect-test-cache-")


@dataclass(frozen=True)
class Jax:
    """One jax version's fixture dumps: a behaviour test runs on each version that has its scenario."""

    version: str
    dumps: Path
    moved_lines: tuple[tuple[int, int], ...] = ()
    """generate.py lines that moved between the two generations (jax 0.10.2's -> this version's)."""

    def source(self, line: int) -> str:
        """`fixtures/generate.py:N`, a jax 0.10.2 fixture's source line as this version's dumps record it."""
        return f"fixtures/generate.py:{dict(self.moved_lines).get(line, line)}"

    def has(self, scenario: str) -> bool:
        return (self.dumps / scenario).is_dir()


#: jax 0.10.2 (fixtures/dumps) and its 0.11.2 twins (fixtures/jax011/dumps, made by generate.py at 57cb6d4,
#: which had grown lines before the `library_names` scenario: those scenarios' source lines moved).
JAX_VERSIONS = (
    Jax("0.10.2", DUMPS),
    Jax(
        "0.11.2",
        JAX011,
        (
            (153, 161),
            (159, 167),
            (207, 215),
            (208, 216),
            *((n, n + 8) for n in range(296, 317)),
            (356, 408),
            (359, 411),
        ),
    ),
)


def twins(*scenarios: str) -> list:
    """`(jax_version, scenario)` parameters for every version that has the scenario (no keras or TPU twin)."""
    return [
        pytest.param(jax, scenario, id=f"{scenario}-jax{jax.version}")
        for scenario in scenarios
        for jax in JAX_VERSIONS
        if jax.has(scenario)
    ]


@pytest.fixture(params=JAX_VERSIONS, ids=lambda jax: f"jax{jax.version}")
def jax_version(request) -> Jax:
    """Each jax version's fixtures in turn (for scenarios both versions have)."""
    return request.param


def corpus_files(pattern: str) -> list[Path]:
    """Corpus files matching `pattern`; [] when ../shared/corpus is absent (tests then skip)."""
    return sorted(CORPUS.glob(pattern)) if CORPUS.is_dir() else []


def hlo_fixture_files(roots: tuple[Path, ...] = (DUMPS,)) -> list[Path]:
    """Every committed HLO text file under `roots` (fixtures/dumps; pass JAX011 too for the jax 0.11.2
    twins), not the buffer-assignment and thunk side files."""
    side = (
        "buffer-assignment",
        "live-range",
        "memory-usage-report",
        "basic_compiler_metadata",
        "execution_options",
        "target_arguments",
        "transfer_stats",
        "hlo_module_config",
        "tpu_comp_env",
        "thunk_",  # GPU thunk_sequence, thunk_metadata: the executable's thunks, not HLO text
    )
    found = [p for root in roots for p in root.rglob("module_*.txt")]
    return sorted(p for p in found if not any(s in p.name for s in side))


def model_summary(modules, lines: bool = True) -> list:
    """Every field of a parsed model as plain values (`Module.to_record`): models compare by identity,
    records by content. `lines=False` sets the line numbers to 0 first (text printed from a model has
    its own)."""
    if not lines:
        modules = [Module.from_record(m.to_record()) for m in modules]
        for module in modules:
            module.line = 0
            for computation in module.computations:
                computation.line = 0
                for instruction in computation.instructions:
                    instruction.line = 0
    return [m.to_record() for m in modules]


requires_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus not present")

# `pytester` runs the pytest plugin's tests (tests/test_pytest_plugin.py) in fresh pytest processes.
pytest_plugins = ["pytester"]


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/ from today's output")


@pytest.fixture(autouse=True)
def _fresh_consoles():
    """Rich reads the terminal width once per console: each test's CLI output gets consoles made for it
    (its COLUMNS), not whatever width an earlier test in this worker left."""
    from xlainspect.cli.render import stderr_console, stdout_console

    stdout_console.cache_clear()
    stderr_console.cache_clear()


#: Modules whose module-scoped fixtures are costly (servers started, profiles read, jaxlib run in a child
#: process): under `pytest -n` (`make check`), each runs whole on one worker, which builds them once; any
#: other test goes to whichever worker is free. xdist's `--dist loadgroup` would say this with marks, but
#: it renames a test's node id to do it, which pytest 9.2 ignores.
ONE_WORKER = (
    "tests/test_remote.py",
    "tests/test_cluster.py",
    "tests/test_profile_gpu.py",
    "tests/test_profile_xprof.py",
    "tests/test_profile.py",
    "tests/test_profile_steps.py",
    "tests/test_cost.py",
)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """The `load` distribution of xdist (`-n` alone), but ONE_WORKER modules each one unit of work, sent
    first (xdist sends the larger units first)."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in ONE_WORKER else nodeid

    return Scheduling(config, log)


_CLUSTER = """
import sys, distributed
with distributed.LocalCluster(
    n_workers=int(sys.argv[1]), threads_per_worker=1, processes=True, dashboard_address=":0", host="127.0.0.1"
) as local:
    print(local.scheduler_address, flush=True)
    sys.stdin.read()
"""


@contextlib.contextmanager
def local_cluster(workers: int = 2, **env: str):
    """A LocalCluster of `workers` worker processes, one thread each, run by a child process (so that no
    process of it is this one's child: tests/test_workers.py counts those) until this block leaves; its
    workers import this checkout's xlainspect and the tests' modules. Its scheduler's address."""
    path = os.pathsep.join([str(REPO), str(REPO / "tests")])
    child = subprocess.Popen(
        [sys.executable, "-c", _CLUSTER, str(workers)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": path, **env},
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        yield child.stdout.readline().strip()
        child.stdin.close()  # the child leaves its block: the cluster closes
        child.wait(timeout=60)
    finally:
        child.kill()
        child.wait()
