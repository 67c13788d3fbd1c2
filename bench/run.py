"""xlainspect's benchmark: one command, a table on stdout, every figure in bench/results.json.

    python bench/run.py [--repeat 3] [--skip-big] [--big-trace] [--xprof-python PATH]

It builds its inputs itself under bench/.cache/ (ignored by git) and reuses them on later runs:
synthetic dumps of 2,000 and 20,000 modules (the committed fixture modules hard-linked under new
module ids), a 2,000-module dump whose HLO bodies are 10x larger, 64 host folders of the 2,000-module
dump (a fleet), and, made with jax, a 20-module dump of a 2-layer transformer training step with a
profiler trace (every command's latency) and one large CPU after-optimizations module (an unrolled
transformer training step, >= 40 MB), and jax.profiler traces of a small train step run for 2,000,
8,000 and 32,000 steps (44 to 700 MB), which `profile` reads beside XProf's overview_page (XProf in an
interpreter of its own: a bench-only dependency).
Every figure is the median of --repeat runs in fresh processes, made in rounds (`rounds`), measured
in this same run beside what it is compared with (XLA's C++ parser from the installed jaxlib on the
same file; XProf on the same trace).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / "bench" / ".cache"
FIXTURES = REPO / "fixtures" / "dumps"
#: Long-text CPU fixture dumps whose modules are replicated into the synthetic dumps.
SOURCE_DUMPS = (
    "clean_run",
    "ragged_batch",
    "eager_flood",
    "shape_branch",
    "static_arg",
    "dtype_change",
    "recreated_fn",
    "collectives_cpu",
)
BIG_MODULE_MIN_BYTES = 40 << 20
T = TypeVar("T")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (the median is reported)")
    parser.add_argument("--skip-big", action="store_true", help="leave out the large-module figures")
    parser.add_argument("--pods-only", action="store_true", help="only the pod figures (256 and 1,024 hosts)")
    parser.add_argument(
        "--modules-only", action="store_true", help="only the `modules` figures (with count-recompiles beside them)"
    )
    parser.add_argument(
        "--job-only", action="store_true", help="only the 64 hosts' `profile` figures (local pool and Dask cluster)"
    )
    parser.add_argument(
        "--pod-s3-hosts", type=int, nargs="*", default=POD_S3_HOSTS, help="pods also timed from a local S3 server"
    )
    parser.add_argument(
        "--traces-only", action="store_true", help="only the large-trace figures (profile beside XProf)"
    )
    parser.add_argument(
        "--trace-steps", type=int, nargs="+", default=TRACE_STEPS, help="the traces' step counts (made once each)"
    )
    parser.add_argument("--big-trace", action="store_true", help="also the ~1 GB trace (46,000 steps): peak RSS")
    parser.add_argument(
        "--xprof-python",
        help=f"an interpreter with {XPROF} (default: $XPROF_PYTHON, else a venv the bench makes under bench/.cache)",
    )
    args = parser.parse_args()
    traces = functools.partial(trace_figures, args.repeat, tuple(args.trace_steps), args.big_trace, args.xprof_python)
    CACHE.mkdir(parents=True, exist_ok=True)
    compile_bytecode()
    if args.pods_only:
        results = [machine_figure("at the start"), *pod_figures(args.repeat, tuple(args.pod_s3_hosts))]
        results.append(machine_figure("at the end"))
        print_table(results)
        (REPO / "bench" / "pods.json").write_text(json.dumps(results, indent=2) + "\n")
        return
    if args.traces_only:
        results = [machine_figure("at the start"), *traces(), machine_figure("at the end")]
        print_table(results)
        (REPO / "bench" / "traces.json").write_text(json.dumps(results, indent=2) + "\n")
        return
    if args.modules_only:
        results = [machine_figure("at the start"), *modules_figures(args.repeat), machine_figure("at the end")]
        print_table(results)
        return
    if args.job_only:
        results = [machine_figure("at the start"), *job_profile_figures(args.repeat), machine_figure("at the end")]
        print_table(results)
        return
    results: list[dict] = [machine_figure("at the start")]
    results += startup_figures(args.repeat)
    results += dump_figures(args.repeat)
    results += report_figures(args.repeat)
    results += latency_figures(args.repeat)
    results += gpu_profile_figures(args.repeat)
    results += fleet_figures(args.repeat)
    results += modules_figures(args.repeat)
    results += job_profile_figures(args.repeat)
    results += traces()
    results += pod_figures(args.repeat, tuple(args.pod_s3_hosts))
    if args.skip_big:
        results += small_parse_figure(args.repeat, None)
    else:
        results += big_module_figures(big_module(), args.repeat)
    results.append(machine_figure("at the end"))
    print_table(results)
    (REPO / "bench" / "results.json").write_text(json.dumps(results, indent=2) + "\n")


# ---- measuring


def machine_figure(when: str) -> dict:
    """How fast this machine runs Python now: the median of 7 runs of 3 million additions, in-process.
    A shared machine's speed moves a lot within an hour: this says where a run stood."""

    def additions() -> float:
        start = time.perf_counter()
        total = 0
        for i in range(3_000_000):
            total += i
        return time.perf_counter() - start

    return figure(f"machine: 3 million Python additions, {when}", statistics.median(additions() for _ in range(7)), "s")


def compile_bytecode() -> None:
    """Write xlainspect's .pyc files, as `pip install` does: every figure is then what an installed
    xlainspect costs, also where PYTHONDONTWRITEBYTECODE keeps a source checkout from caching them
    (Python still reads .pyc files then; it only does not write them)."""
    import compileall

    if not compileall.compile_dir(REPO / "xlainspect", quiet=1):
        raise RuntimeError("compileall failed on xlainspect/")


def run_python(code: str, *args: str, env: dict | None = None) -> dict:
    """Run `code` in a fresh interpreter; it prints one JSON object as its last line."""
    completed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(completed.stderr[-3000:])
    return json.loads(completed.stdout.strip().splitlines()[-1])


def rounds(jobs: dict[str, Callable[[], T]], repeat: int) -> dict[str, list[T]]:
    """Each job's results of `repeat` runs, made in rounds: every job once per round, in order. This
    machine's speed moves within a minute: in rounds, a slow spell touches one run of several figures,
    where runs back to back would give one figure all slow runs (and a slow median). Figures compared
    with each other (against C++, 10x the modules) are measured in the same rounds."""
    runs: dict[str, list[T]] = {name: [] for name in jobs}
    for _ in range(repeat):
        for name, job in jobs.items():
            runs[name].append(job())
    return runs


def once(command: list[str], env: dict | None = None) -> float:
    """Wall time of one run of a command, interpreter start included."""
    start = time.perf_counter()
    completed = subprocess.run(
        command, capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})}, check=False
    )
    elapsed = time.perf_counter() - start
    if completed.returncode not in (0, 1):
        raise RuntimeError(completed.stderr.decode()[-3000:])
    return elapsed


def wall(command: list[str], repeat: int, env: dict | None = None) -> float:
    """Median wall time of a command, interpreter start included."""
    return statistics.median(once(command, env) for _ in range(repeat))


def walls(commands: dict[str, list[str]], repeat: int, env: dict | None = None) -> dict[str, float]:
    """`wall` of each command, run in rounds."""
    runs = rounds({name: functools.partial(once, command, env) for name, command in commands.items()}, repeat)
    return {name: statistics.median(times) for name, times in runs.items()}


def median_of(code: str, repeat: int, *args: str, env: dict | None = None) -> dict:
    """Run `code` `repeat` times; the run whose time `s` is the median (its other fields come with it)."""
    return median_run([run_python(code, *args, env=env) for _ in range(repeat)])


def median_run(runs: list[dict]) -> dict:
    """Of script runs, the one whose time `s` is the median."""
    return sorted(runs, key=lambda r: r["s"] or 0)[len(runs) // 2]


def figure(name: str, value: float | None, unit: str, target: str = "", ok: bool | None = None, **extra) -> dict:
    return {"figure": name, "value": value, "unit": unit, "target": target, "ok": ok, **extra}


XLAINSPECT = [sys.executable, "-m", "xlainspect"]


# ---- 4. start-up


def startup_figures(repeat: int) -> list[dict]:
    imported = median_of(
        """
        import time, json
        start = time.perf_counter()
        import xlainspect
        print(json.dumps({"s": time.perf_counter() - start}))
    """,
        repeat,
    )["s"]
    helped = wall([*XLAINSPECT, "--help"], repeat)
    return [
        figure("import xlainspect", imported, "s", "<= 0.100", imported <= 0.1),
        figure("xlainspect --help (wall)", helped, "s", "<= 0.15", helped <= 0.15),
    ]


# ---- 1. count-recompiles on synthetic dumps


def dump_figures(repeat: int) -> list[dict]:
    small = synthetic_dump("dump_2000", 2000, enlarge=1)
    large = synthetic_dump("dump_20000", 20000, enlarge=1)
    fat = synthetic_dump("dump_2000_x10", 2000, enlarge=10)
    # Cold: a fresh process with xlainspect's caches off, like the first run on a new dump (a CI job).
    env = {"XLAINSPECT_CACHE_DIR": str(CACHE / "xlainspect-cache"), "XLAINSPECT_NO_CACHE": "1"}
    times = walls(
        {
            name: [*XLAINSPECT, "count-recompiles", str(dump), "--format", "json"]
            for name, dump in (("small", small), ("large", large), ("fat", fat))
        },
        repeat,
        env,
    )
    t_small, t_large, t_fat = times["small"], times["large"], times["fat"]
    ratio_bytes = dump_bytes(fat) / dump_bytes(small)
    return [
        figure("count-recompiles, 2,000 modules (wall, caches off)", t_small, "s", "<= 0.35", t_small <= 0.35),
        figure(
            "count-recompiles, 20,000 modules (wall, caches off)",
            t_large,
            "s",
            f"<= {10 * t_small:.2f} (10x)",
            t_large <= 10 * t_small,
        ),
        figure(
            f"count-recompiles, 2,000 modules, {ratio_bytes:.1f}x the HLO bytes (wall, caches off)",
            t_fat,
            "s",
            f"<= {1.2 * t_small:.2f} (1.2x)",
            t_fat <= 1.2 * t_small,
        ),
    ]


# ---- report of a whole dump


def report_figures(repeat: int) -> list[dict]:
    """`report --html` of the 2,000-module dump: the page must open at once (under 5 MB, sampled past
    that) and the report take under 2 s, the first report of a dump (caches off: every module parsed,
    as in a CI job) as well as one of a dump already analysed (results cache warm)."""
    small = synthetic_dump("dump_2000", 2000, enlarge=1)
    page = CACHE / "report_2000.html"
    command = [*XLAINSPECT, "report", str(small), "--html", str(page)]
    cold = wall(command, repeat, {"XLAINSPECT_NO_CACHE": "1"})
    warm_env = {"XLAINSPECT_CACHE_DIR": str(CACHE / "report-cache")}
    wall(command, 1, warm_env)  # fills the results cache
    warm = wall(command, repeat, warm_env)
    size = page.stat().st_size / 1e6
    return [
        figure("report --html, 2,000 modules, results cache warm (wall)", warm, "s", "<= 2.0", warm <= 2.0),
        figure("report --html, 2,000 modules, caches off (wall)", cold, "s", "<= 2.0", cold <= 2.0),
        figure("report --html, 2,000 modules: page size", size, "MB", "<= 5", size <= 5),
        *profiled_report_figures(repeat),
    ]


GPU_PROFILE = Path(os.environ.get("XLAINSPECT_GPU_CORPUS", REPO.parent / "shared" / "gpu-corpus")) / "mixer_profile"
"""A real H200 run with its profile (an 11 MB XSpace): the GPU corpus's, where this machine has it."""


def profiled_report_figures(repeat: int) -> list[dict]:
    """`report --profile --html` of the GPU corpus's mixer run, caches off: a 10 MB profile read, its ops
    joined to the dump's costs, under 3 s. Left out, said so, where the corpus is not on this machine."""
    if not GPU_PROFILE.is_dir():
        return [figure(f"report --html --profile: skipped, no {GPU_PROFILE}", None, "s")]
    page = CACHE / "report_profile.html"
    command = [*XLAINSPECT, "report", str(GPU_PROFILE / "dump"), "--profile", str(GPU_PROFILE / "trace")]
    cold = wall([*command, "--html", str(page)], repeat, {"XLAINSPECT_NO_CACHE": "1"})
    return [figure("report --html --profile, 11 MB profile, caches off (wall)", cold, "s", "<= 3.0", cold <= 3.0)]


def dump_bytes(folder: Path) -> int:
    """Bytes of the HLO text files (the side files are the same in every synthetic dump)."""
    return sum(p.stat().st_size for p in folder.glob("*optimizations.txt"))


def synthetic_dump(name: str, modules: int, enlarge: int) -> Path:
    """`modules` fixture modules under new ids (hard links; HLO bodies enlarged `enlarge` times)."""
    folder = CACHE / name
    done = folder / ".complete"
    if done.exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    sources = source_modules()
    enlarged = CACHE / f"{name}.sources"
    for index in range(modules):
        group = sources[index % len(sources)]
        for source in group:
            suffix = source.name.split(".", 1)[1]
            if enlarge > 1 and suffix.endswith("optimizations.txt"):
                source = enlarged_copy(source, enlarge, enlarged)
            link(source, folder / f"module_{index:04d}.{suffix}")
    done.touch()
    return folder


def source_modules() -> list[list[Path]]:
    """The files of each fixture module (module_NNNN.*), from the long-text CPU fixture dumps."""
    groups: dict[tuple[str, str], list[Path]] = {}
    for dump in SOURCE_DUMPS:
        for path in sorted((FIXTURES / dump).glob("module_*.*")):
            if path.is_file():
                groups.setdefault((dump, path.name.split(".", 1)[0]), []).append(path)
    return list(groups.values())


def link(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def enlarged_copy(source: Path, factor: int, folder: Path) -> Path:
    """The module with renamed copies of its non-entry computations until it is `factor` times larger."""
    target = folder / f"{source.parent.name}.{source.name}"
    if target.exists():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    text = source.read_text()
    blocks = re.findall(r"^%[^\n]*\{\n.*?^\}\n", text, flags=re.M | re.S)
    extra = [b for b in blocks if not b.startswith("ENTRY")]
    copies = math.ceil((factor - 1) * len(text) / max(1, sum(map(len, extra)))) if extra else 0
    renamed = [re.sub(r"%([A-Za-z0-9_.\-]+)", rf"%\1.copy{n}", block) for n in range(copies) for block in extra]
    target.write_text(text + "\n" + "\n".join(renamed))
    return target


# ---- fleet: one dump folder per host

FLEET_HOSTS, FLEET_MODULES = 64, 2000


def fleet_figures(repeat: int) -> list[dict]:
    """`count-recompiles` and `doctor` on 64 host folders x 2,000 compiles (one host compiled once more),
    cold: at most 10 s (the median run) and 1 GiB (the largest) each."""
    fleet = fleet_dump()
    env = {"XLAINSPECT_NO_CACHE": "1"}
    commands = {
        f"{name}, {FLEET_HOSTS} hosts x {FLEET_MODULES:,} modules": [*XLAINSPECT, name, str(fleet), "--format", "json"]
        for name in ("count-recompiles", "doctor")
    }
    runs = rounds({name: functools.partial(wall_rss, command, env) for name, command in commands.items()}, repeat)
    rows = []
    for name, measured in runs.items():
        seconds, rss = statistics.median(s for s, _ in measured), max(r for _, r in measured)
        rows.append(figure(f"{name} (wall, caches off)", seconds, "s", "<= 10", seconds <= 10))
        rows.append(figure(f"{name}: peak RSS", rss / 2**20, "MiB", "< 1024", rss < 2**30))
    return rows


def modules_figures(repeat: int) -> list[dict]:
    """`modules` (every module read, its instructions counted) on the 2,000-module dump and the 64-host
    fleet: caches off, a first run with the cache on (every file hashed, every answer written) and the
    same again (warm), beside count-recompiles caches off (headers only: the baseline) in the same rounds."""
    jobs: dict[str, Callable[[], float]] = {}
    for label, dump in (("2,000 modules", synthetic_dump("dump_2000", 2000, 1)), (_FLEET, fleet_dump())):
        modules = [*XLAINSPECT, "modules", str(dump), "--format", "json"]
        warm_env = {"XLAINSPECT_CACHE_DIR": str(CACHE / f"modules-cache-{dump.name}")}
        once(modules, warm_env)  # fills the caches
        jobs |= {
            f"count-recompiles, {label} (wall, caches off)": functools.partial(
                once, [*XLAINSPECT, "count-recompiles", str(dump), "--format", "json"], {"XLAINSPECT_NO_CACHE": "1"}
            ),
            f"modules, {label} (wall, caches off)": functools.partial(once, modules, {"XLAINSPECT_NO_CACHE": "1"}),
            f"modules, {label} (wall, first run, cache on)": functools.partial(first_run, modules),
            f"modules, {label} (wall, warm cache)": functools.partial(once, modules, warm_env),
        }
    return [figure(name, statistics.median(times), "s") for name, times in rounds(jobs, repeat).items()]


_FLEET = f"{FLEET_HOSTS} hosts x {FLEET_MODULES:,} modules"


def first_run(command: list[str]) -> float:
    """Wall time of a command with the cache on and empty (a fresh cache folder, removed after)."""
    with tempfile.TemporaryDirectory(dir=CACHE) as fresh:
        return once(command, {"XLAINSPECT_CACHE_DIR": fresh})


def fleet_dump() -> Path:
    """64 host folders, each the 2,000-module dump hard-linked; the last host holds one compile more
    (a copy of its first module under the next id), the finding `doctor` must make."""
    folder = CACHE / f"fleet_{FLEET_HOSTS}x{FLEET_MODULES}"
    if (folder / ".complete").exists():
        return folder
    print(f"building {folder} (once; about a minute)...", file=sys.stderr)
    shutil.rmtree(folder, ignore_errors=True)
    source = synthetic_dump("dump_2000", FLEET_MODULES, enlarge=1)
    names = [p.name for p in source.iterdir() if p.is_file() and p.name.startswith("module_")]
    for host in range(FLEET_HOSTS):
        target = folder / f"host_{host:02d}"
        target.mkdir(parents=True)
        for name in names:
            link(source / name, target / name)
    extra = [n for n in names if n.startswith("module_0000.")]
    for name in extra:
        link(source / name, target / name.replace("module_0000.", f"module_{FLEET_MODULES:04d}.", 1))
    (folder / ".complete").touch()
    return folder


JOB_HOSTS = 64
JOB_SOURCE = REPO / "fixtures" / "profiles" / "multihost_straggler"
"""A real 4-host job's traces (fixtures/generate.py): every job host is a copy of one of them."""


def job_profile_figures(repeat: int) -> list[dict]:
    """`profile` of one run's 64 host traces (copies of the fixture's four, the slow host first), cold:
    at most 10 s (the median run), and its peak RSS; in the same rounds, the same command with each host a
    task on a LocalCluster of 2 worker processes of one thread (`--scheduler`), started once before the
    rounds as a standing cluster is (its workers' imports paid in the first round); the peak RSS is the
    command's, the workers' not counted."""
    folder = job_traces()
    command = [*XLAINSPECT, "profile", str(folder), "--format", "json"]
    env = {"XLAINSPECT_NO_CACHE": "1"}
    with local_cluster() as scheduler:
        jobs = {
            "job": functools.partial(wall_rss, command, env),
            "cluster": functools.partial(wall_rss, [*command, "--scheduler", scheduler], env),
        }
        runs = rounds(jobs, repeat)
    name = f"profile, {JOB_HOSTS} hosts' traces of one run"
    found: list[dict] = []
    for job, label, target in (("job", "", "<= 10"), ("cluster", ", on a 2-worker Dask LocalCluster", "")):
        seconds, rss = statistics.median(s for s, _ in runs[job]), max(r for _, r in runs[job])
        ok = seconds <= 10 if target else None
        found += [
            figure(f"{name}{label} (wall, caches off)", seconds, "s", target, ok),
            figure(f"{name}{label}: peak RSS", rss / 2**20, "MiB"),
        ]
    return found


@contextlib.contextmanager
def local_cluster() -> Generator[str]:
    """A Dask LocalCluster of 2 worker processes, 1 thread each, whose workers import this checkout's
    xlainspect; its scheduler's address."""
    import distributed

    sys.path.insert(0, str(REPO))  # the workers start with this process's sys.path
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", host="127.0.0.1"
    ) as cluster:
        yield cluster.scheduler_address


def job_traces() -> Path:
    """One run folder of 64 `host_NN.xplane.pb`: host_00 the fixture's slow host, the others its other
    hosts in turn (hard links)."""
    folder = CACHE / f"job_{JOB_HOSTS}" / "plugins" / "profile" / "run"
    if (folder / ".complete").exists():
        return folder.parents[2]
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    sources = sorted(JOB_SOURCE.rglob("*.xplane.pb"))
    slow = json.loads((JOB_SOURCE / "truth.json").read_text())["slow_host"]
    order = [p for p in sources if p.name.startswith(slow + ".")] + [
        p for p in sources if not p.name.startswith(slow + ".")
    ]
    others = order[1:]
    for host in range(JOB_HOSTS):
        link(order[0] if host == 0 else others[(host - 1) % len(others)], folder / f"host_{host:02d}.xplane.pb")
    (folder / ".complete").touch()
    return folder.parents[2]


def wall_rss(command: list[str], env: dict, stdout: Path | None = None) -> tuple[float, int]:
    """Wall time and peak RSS (bytes) of one run of a command; its output kept in `stdout` where given
    (a file, as a pipe drained at once would cost: the figures that check the answer read it there)."""
    with tempfile.TemporaryFile() as stderr, open(stdout or os.devnull, "wb") as out:
        start = time.perf_counter()
        process = subprocess.Popen(
            command, stdout=out, stderr=stderr, env={**os.environ, "PYTHONPATH": str(REPO), **env}
        )
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            stderr.seek(0)
            raise RuntimeError(stderr.read().decode()[-3000:])
    return elapsed, usage.ru_maxrss * 1024


# ---- production-size traces: profile beside XProf's first tool

TRACE_STEPS = (2000, 8000, 32000)
BIG_TRACE_STEPS = 46000
"""About 1 GB of XSpace (some 22 KB a step): `--big-trace` adds it, for its peak RSS alone (< 3 GiB)."""
BIG_TRACE_RSS = 3 << 30
XPROF = "xprof==2.24.2"
TRAIN_TRACE = """
import json, sys, time
from pathlib import Path
import numpy as np
import jax, jax.numpy as jnp
jax.config.update("jax_platforms", "cpu")
LAYERS = 12

def loss_fn(params, x, y):
    for w, b in params:
        x = jnp.tanh(x @ w + b)
    return jnp.mean((x - y) ** 2)

@jax.jit
def train_step(params, m, v, x, y, t):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    m = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, m, grads)
    v = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * g * g, v, grads)
    params = jax.tree.map(lambda p, m, v: p - 1e-3 * m / (jnp.sqrt(v) + 1e-8), params, m, v)
    return params, m, v, loss

rng = np.random.default_rng(0)
params = [(jnp.asarray(rng.standard_normal((32, 32), dtype=np.float32) * 0.1), jnp.zeros(32)) for _ in range(LAYERS)]
m = jax.tree.map(jnp.zeros_like, params); v = jax.tree.map(jnp.zeros_like, params)
x, y = jnp.ones((16, 32)), jnp.zeros((16, 32))
folder, steps = Path(sys.argv[1]), int(sys.argv[2])
walls, inside = [], []
with jax.profiler.trace(str(folder / "trace")):
    for i in range(steps):
        start = time.perf_counter()
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            begun = time.perf_counter()
            params, m, v, loss = train_step(params, m, v, x, y, i)
            loss.block_until_ready()
            inside.append(time.perf_counter() - begun)
        walls.append(time.perf_counter() - start)
truth = {"steps": steps, "wall_seconds": walls, "inside_seconds": inside}
(folder / "truth.json").write_text(json.dumps(truth) + "\\n")
"""
XPROF_OVERVIEW = """
import sys
from xprof.convert import raw_to_tool_data
data, _ = raw_to_tool_data.xspace_to_tool_data([sys.argv[1]], "overview_page", {})
if data is None:
    print("overview_page gave no data", file=sys.stderr)
    sys.exit(3)
sys.stdout.buffer.write(data if isinstance(data, bytes) else data.encode())
"""


def trace_figures(repeat: int, steps: tuple[int, ...], big: bool, xprof: str | None) -> list[dict]:
    """`profile TRACE --dump DUMP --format json` on one host's trace of 2,000, 8,000 and 32,000 steps of a
    small train step, cold (caches off), wall time and peak RSS, beside XProf's overview_page on the same
    file in the same rounds (a fresh process in XProf's own interpreter, its import included), and their
    ratios: at most 1.0x (aim 0.5x); then, in a run of each its own, the peak memory of all their
    processes together. From the same runs: `step_seconds` within 1% of the median step the program
    measured, and every step listed. `big`: the ~1 GB trace too, ours alone, its peak under 3 GiB."""
    python, note = xprof_python(xprof)
    sizes = (*steps, BIG_TRACE_STEPS) if big else steps
    jobs: dict[str, Callable[[], tuple[float, int] | None]] = {}
    for n in sizes:
        folder = train_trace(n)
        jobs[f"ours {n}"] = functools.partial(wall_rss, profile_command(folder), NO_CACHE, folder / "profile.json")
        if python and n != BIG_TRACE_STEPS:
            jobs[f"xprof {n}"] = functools.partial(xprof_once, python, folder)
    runs = rounds(jobs, repeat)
    rows = [figure(f"XProf: {note}", None, "")]
    for n in sizes:
        folder = train_trace(n)
        ours = Measured(runs[f"ours {n}"], tree_memory(profile_command(folder), NO_CACHE))
        theirs = None
        if f"xprof {n}" in runs:
            theirs = Measured(runs[f"xprof {n}"], xprof_tree_memory(python, folder))
        rows += trace_size_figures(n, ours, theirs, python is not None)
    return rows


NO_CACHE = {"XLAINSPECT_NO_CACHE": "1"}


class Measured:
    """One tool on one trace: its timed runs' median wall and largest peak RSS (None where a run failed),
    and the peak memory of all its processes together (`tree_memory`; None where not measured)."""

    def __init__(self, runs: list[tuple[float, int] | None], together: int | None) -> None:
        done = [run for run in runs if run is not None]
        self.failed = len(done) < len(runs)
        self.seconds = statistics.median(s for s, _ in done) if done else None
        self.rss = max(r for _, r in done) if done else None
        self.together = together


def profile_command(folder: Path) -> list[str]:
    return [*XLAINSPECT, "profile", str(folder / "trace"), "--dump", str(folder / "dump"), "--format", "json"]


def trace_size_figures(steps: int, ours: Measured, theirs: Measured | None, xprof_available: bool) -> list[dict]:
    """The figures of one trace: ours, XProf's, the ratios, the answer's checks."""
    folder = train_trace(steps)
    megabytes = sum(p.stat().st_size for p in (folder / "trace").rglob("*.xplane.pb")) / 1e6
    name = f"{steps:,}-step trace ({megabytes:,.0f} MB)"
    rows = [figure(f"profile, {name} with its dump (wall, caches off)", ours.seconds, "s")]
    if steps == BIG_TRACE_STEPS:
        rows += memory_figures(f"profile, {name}", ours, "< 3072", BIG_TRACE_RSS)
    else:
        rows += memory_figures(f"profile, {name}", ours)
        rows += xprof_figures(name, ours, theirs, folder, xprof_available)
    return rows + answer_figures(name, folder, steps)


def memory_figures(label: str, tool: Measured, target: str = "", limit: int | None = None) -> list[dict]:
    """Peak RSS (the largest process) and the peak of all processes together, in MiB, under `limit`."""
    rows = []
    for what, value in (("peak RSS", tool.rss), (_TOGETHER, tool.together)):
        ok = None if limit is None or value is None else value < limit
        rows.append(figure(f"{label}: {what}", None if value is None else value / 2**20, "MiB", target, ok))
    return rows


_TOGETHER = "peak memory, all processes (PSS, sampled)"


def xprof_figures(name: str, ours: Measured, theirs: Measured | None, folder: Path, available: bool) -> list[dict]:
    """XProf's wall time and memory on the same trace and ours over them (target 1.0x, aim 0.5x); what
    its overview_page lists (its step-time graph's steps), to show it read the steps too."""
    label = f"XProf overview_page, {name}"
    if not available:
        return [figure(f"{label}: XProf unavailable", None, "s")]
    if theirs is None or theirs.failed:
        return [figure(f"{label}: XProf failed ({xprof_failure(folder)})", None, "s")]
    rows = [figure(f"{label} (wall)", theirs.seconds, "s"), *memory_figures(label, theirs)]
    for what, mine, their in (
        ("wall", ours.seconds, theirs.seconds),
        ("peak RSS", ours.rss, theirs.rss),
        ("peak memory of all processes", ours.together, theirs.together),
    ):
        ratio = None if mine is None or their is None else mine / their
        rows.append(figure(f"  profile / XProf, {what}", ratio, "x", "<= 1.0 (aim 0.5)", _ok(ratio, (ratio or 0) <= 1)))
    rows.append(figure("  XProf's overview_page: steps in its step-time graph", xprof_steps(folder), "steps"))
    return rows


def answer_figures(name: str, folder: Path, steps: int) -> list[dict]:
    """From the last run's JSON: `step_seconds` against the median step the program measured with
    time.perf_counter around the annotated block, as fixtures/generate.py does (target: within 1%), and
    against its clock inside the block (no target, for reference: a step here is ~0.5 ms, and the
    annotation's own entry and exit, outside that clock, are a few % of it); the steps listed (target:
    every one)."""
    answer = json.loads((folder / "profile.json").read_text())
    truth = json.loads((folder / "truth.json").read_text())
    around, inside = (statistics.median(truth[key]) for key in ("wall_seconds", "inside_seconds"))
    off = (answer["step_seconds"] / around - 1) * 100
    listed = len(answer["steps"])
    return [
        figure(
            f"profile, {name}: step_seconds against the program's median step",
            off,
            "%",
            "within +-1",
            abs(off) <= 1,
            step_seconds=answer["step_seconds"],
            median_step=around,
        ),
        figure(
            "  against its clock inside the annotation",
            (answer["step_seconds"] / inside - 1) * 100,
            "%",
            median_step=inside,
        ),
        figure(f"profile, {name}: steps listed", listed, "steps", f"== {steps:,}", listed == steps),
    ]


def train_trace(steps: int) -> Path:
    """A jax.profiler trace of `steps` steps of a small CPU train step (12 tanh layers, an Adam-like
    update), default ProfileOptions as users make them, each step in StepTraceAnnotation("train",
    step_num=i) and timed by the program with time.perf_counter (truth.json); its dump (--xla_dump_to)
    beside it. Made once with jax; the trace.json.gz jax writes beside the XSpace (neither tool reads
    it, hundreds of MB at 32,000 steps) is deleted."""
    folder = CACHE / f"trace_{steps}"
    if (folder / ".complete").exists():
        return folder
    print(f"generating {folder} with jax (once; {steps:,} steps)...", file=sys.stderr)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    script = CACHE / "generate_trace.py"
    script.write_text(TRAIN_TRACE)
    env = {**os.environ, "XLA_FLAGS": f"--xla_dump_to={folder / 'dump'}"}
    subprocess.run([sys.executable, str(script), str(folder), str(steps)], check=True, env=env)
    for path in (folder / "trace").rglob("*.trace.json.gz"):
        path.unlink()
    (folder / ".complete").touch()
    return folder


def xprof_once(python: str, folder: Path) -> tuple[float, int] | None:
    """One cold run of XProf's overview_page on the trace's XSpace, whole process; None where it failed
    (its error kept in xprof.err)."""
    try:
        return wall_rss(xprof_command(python, folder), {}, folder / "overview_page.json")
    except RuntimeError as error:
        (folder / "xprof.err").write_text(str(error))
        return None


def xprof_tree_memory(python: str, folder: Path) -> int | None:
    try:
        return tree_memory(xprof_command(python, folder), {})
    except RuntimeError:
        return None


def xprof_command(python: str, folder: Path) -> list[str]:
    """XProf's overview_page on the trace's XSpace, cold. overview_page saves its op stats beside the
    file it reads (ALL_HOSTS.op_stats_v2.pb; also with use_saved_result off) and reads them back on the
    next call (0.1 s): it is given a hard link of the XSpace in a folder of its own, emptied here."""
    xplane = next((folder / "trace").rglob("*.xplane.pb"))
    session = folder / "xprof"
    shutil.rmtree(session, ignore_errors=True)
    session.mkdir()
    link(xplane, session / xplane.name)
    return [python, "-c", textwrap.dedent(XPROF_OVERVIEW), str(session / xplane.name)]


def tree_memory(command: list[str], env: dict) -> int | None:
    """Peak memory (bytes) of a command's processes together: the sum of their PSS (a page k processes
    share counts 1/k in each: the mapped trace, what a fork shares), read from /proc every 20 ms. Peak RSS
    (`wall_rss`) is the largest single process's: Linux gives a waited-for process's maximum and its
    children's, not their sum, so a forked worker's memory is missing there. A run of its own, as the
    sampling takes CPU; None without /proc."""
    if not Path("/proc/self/smaps_rollup").exists():
        return None
    process = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
    )
    peak = 0
    while process.poll() is None:
        peak = max(peak, sum(map(pss, process_tree(process.pid))))
        time.sleep(0.02)
    if process.returncode not in (0, 1):
        raise RuntimeError(f"{command[0]} exited {process.returncode}")
    return peak


def process_tree(pid: int) -> list[int]:
    """A process and its descendants, from /proc (each thread's children: a worker may be forked from any)."""
    try:
        children = [int(c) for path in Path(f"/proc/{pid}/task").glob("*/children") for c in path.read_text().split()]
    except OSError:  # gone meanwhile
        children = []
    return [pid, *(q for child in children for q in process_tree(child))]


def pss(pid: int) -> int:
    """Proportional set size of a process (bytes); 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            return next((int(line.split()[1]) * 1024 for line in rollup if line.startswith("Pss:")), 0)
    except OSError:
        return 0


def xprof_failure(folder: Path) -> str:
    lines = (folder / "xprof.err").read_text().strip().splitlines()
    return lines[-1][:80] if lines else "no message"


def xprof_steps(folder: Path) -> int | None:
    """The steps overview_page lists: the rows of its table with a `stepnum` column."""
    try:
        tables = json.loads((folder / "overview_page.json").read_text())
    except (OSError, ValueError):
        return None
    for table in tables if isinstance(tables, list) else []:
        if any(column.get("id") == "stepnum" for column in table.get("cols", [])):
            return len(table.get("rows", []))
    return None


def xprof_python(given: str | None) -> tuple[str | None, str]:
    """The interpreter XProf runs in and what the table says of it. XProf is the bench's alone, never
    xlainspect's: --xprof-python (or XPROF_PYTHON), else a venv of its own made once under bench/.cache
    with pip. None, and why, where XProf cannot be had: its figures are then said to be missing."""
    python = given or os.environ.get("XPROF_PYTHON") or xprof_venv()
    if python is None:
        return None, f"unavailable (pip install {XPROF} into {CACHE / 'xprof-venv'} failed)"
    probe = subprocess.run(
        [python, "-c", "import importlib.metadata as m, xprof.convert.raw_to_tool_data; print(m.version('xprof'))"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return None, f"unavailable (no xprof in {python})"
    return python, f"xprof {probe.stdout.strip()} in {python}"


def xprof_venv() -> str | None:
    """bench/.cache/xprof-venv with XPROF installed (made once; a minute or two); None where pip fails
    (no network, no wheel for this Python)."""
    venv = CACHE / "xprof-venv"
    python = venv / "bin" / "python"
    if (venv / ".complete").exists():
        return str(python)
    print(f"installing {XPROF} into {venv} (once)...", file=sys.stderr)
    shutil.rmtree(venv, ignore_errors=True)
    made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, check=False)
    if made.returncode != 0:
        return None
    pip = [str(python), "-m", "pip", "install", "--quiet", XPROF]
    if subprocess.run(pip, capture_output=True, check=False).returncode != 0:
        return None
    (venv / ".complete").touch()
    return str(python)


# ---- pods: 256 and 1,024 hosts, on local disk and served by a local S3 server

POD_HOSTS = (256, 1024)
POD_S3_HOSTS = (256,)
"""Pods also read from S3: moto's server answers a request in ~5 ms on 2 cores, so the 1,024-host pod
(30,720 objects) would take minutes per run; `--pod-s3-hosts 256 1024` asks for it."""
POD_SOURCE = FIXTURES / "fleet_divergence"
"""Real per-host dumps (four host processes of one job, fixtures/generate.py): every pod host is a
copy of its host_0, and one host (the pod's third) a copy of host_2, which compiled another program."""


def pod_figures(repeat: int, s3_hosts: tuple[int, ...]) -> list[dict]:
    """`count-recompiles` and `doctor` on pods of POD_HOSTS hosts, cold (caches off: a URL is fetched
    into a temporary mirror), wall time (the median run) and peak RSS (the largest), on local disk and
    from a local S3 server; then the growth per host from the smallest pod to the largest, carried to
    a 6,144-host pod, and doctor on the largest pod on one core (taskset) beside all cores."""
    env = {"XLAINSPECT_NO_CACHE": "1"}
    commands = {}
    for hosts in POD_HOSTS:
        pod = pod_dump(hosts)
        for name in ("count-recompiles", "doctor"):
            commands[f"{name}, pod of {hosts:,} hosts"] = [*XLAINSPECT, name, str(pod), "--format", "json"]
    largest = f"doctor, pod of {POD_HOSTS[-1]:,} hosts"
    if shutil.which("taskset"):
        commands[f"{largest}, one core"] = ["taskset", "-c", "0", *commands[largest]]
    runs = rounds({name: functools.partial(wall_rss, command, env) for name, command in commands.items()}, repeat)
    if s3_hosts:
        runs |= s3_pod_runs(s3_hosts, repeat, env)
    rows = []
    for name, measured in runs.items():
        seconds, rss = statistics.median(s for s, _ in measured), max(r for _, r in measured)
        rows.append(figure(f"{name} (wall, caches off)", seconds, "s"))
        rows.append(figure(f"{name}: peak RSS", rss / 2**20, "MiB", "< 1024", rss < 2**30))
    return rows + pod_growth(runs)


def pod_growth(runs: dict[str, list[tuple[float, int]]]) -> list[dict]:
    """Per command, seconds per added host between the smallest and the largest pod, and the time a
    6,144-host pod takes carried on at that rate (a line through the two measured pods)."""
    rows = []
    small, large = POD_HOSTS[0], POD_HOSTS[-1]
    for name in ("count-recompiles", "doctor"):
        seconds = {h: statistics.median(s for s, _ in runs[f"{name}, pod of {h:,} hosts"]) for h in (small, large)}
        per_host = (seconds[large] - seconds[small]) / (large - small)
        rows.append(figure(f"{name}: growth per added host ({small:,} -> {large:,} hosts)", per_host * 1000, "ms"))
        rows.append(figure(f"{name}: 6,144 hosts at that growth", seconds[large] + per_host * (6144 - large), "s"))
    return rows


def pod_dump(hosts: int) -> Path:
    """`hosts` host folders, copies (hard links) of POD_SOURCE's host_0, the third of host_2."""
    folder = CACHE / f"pod_{hosts}"
    if (folder / ".complete").exists():
        return folder
    print(f"building {folder} (once)...", file=sys.stderr)
    shutil.rmtree(folder, ignore_errors=True)
    for host in range(hosts):
        source = POD_SOURCE / ("host_2" if host == 2 else "host_0")
        for path in source.rglob("*"):
            if path.is_file():
                target = folder / f"host_{host:04d}" / path.relative_to(source)
                target.parent.mkdir(parents=True, exist_ok=True)
                link(path, target)
    (folder / ".complete").touch()
    return folder


def s3_pod_runs(hosts_list: tuple[int, ...], repeat: int, env: dict) -> dict[str, list[tuple[float, int]]]:
    """The pods uploaded to a moto S3 server started on a free 127.0.0.1 port, and the commands run on
    their s3:// URLs (s3fs finds the server through AWS_ENDPOINT_URL)."""
    import fsspec  # the `remote` extra: `make bench` installs the test extra, which holds it

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    s3_env = {
        **env,
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    saved = {name: os.environ.get(name) for name in s3_env}
    try:
        os.environ.update(s3_env)
        wait_for_port(port)
        fs = fsspec.filesystem("s3", skip_instance_cache=True)
        fs.mkdir("pods")
        commands = {}
        for hosts in hosts_list:
            print(f"uploading the {hosts:,}-host pod to the S3 server...", file=sys.stderr)
            fs.put(str(pod_dump(hosts)), f"pods/pod_{hosts}", recursive=True)
            for name in ("count-recompiles", "doctor"):
                command = [*XLAINSPECT, name, f"s3://pods/pod_{hosts}", "--format", "json"]
                commands[f"{name}, pod of {hosts:,} hosts, from S3"] = command
        return rounds({name: functools.partial(wall_rss, c, s3_env) for name, c in commands.items()}, repeat)
    finally:
        server.terminate()
        server.wait()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def wait_for_port(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"the S3 server did not start on port {port}")


# ---- latency: every command, cold and warm, on ordinary inputs

SMALL_RUN = """
key = jax.random.key(0)
params = [{{n: jax.random.normal(jax.random.fold_in(key, i), s) * 0.02 for n, s in shapes.items()}}
          for i in range(LAYERS)]
x = jnp.ones((B, S, D))
train_step = jax.jit(step)
options = jax.profiler.ProfileOptions()
options.python_tracer_level = 0
with jax.profiler.trace(sys.argv[1], profiler_options=options):
    for i in range(2):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            value, params = train_step(params, x)
            value.block_until_ready()
stats = [jnp.max(x), jnp.min(x), jnp.std(x), jnp.argmax(x), jnp.cumsum(x, 0), jnp.sort(x, -1), jnp.tanh(x)]
"""


def small_dump(heads: int = 8) -> Path:
    """A 20-module CPU dump of a 2-layer transformer training step (its step module ~350 KB after
    optimizations, the rest jax's eager ops) and a jax.profiler trace of two steps: made once with jax.
    With other `heads`, another run of the program after a change: the step module differs, jax's eager
    ops are the same."""
    folder = CACHE / ("step_dump" if heads == 8 else f"step_dump_{heads}_heads")
    if (folder / ".complete").exists():
        return folder
    print(f"generating {folder} with jax (once; seconds)...", file=sys.stderr)
    shutil.rmtree(folder, ignore_errors=True)
    script = CACHE / "generate_step.py"
    script.write_text((TRANSFORMER_STEP + SMALL_RUN).format(layers=2, heads=heads))
    env = {**os.environ, "XLA_FLAGS": f"--xla_dump_to={folder / 'dump'}"}
    subprocess.run([sys.executable, str(script), str(folder / "trace")], check=True, env=env)
    (folder / ".complete").touch()
    return folder


COLD_TARGET, WARM_TARGET = 0.35, 0.2


def latency_figures(repeat: int) -> list[dict]:
    """Every command, whole process, on (a) the step module alone (~350 KB after optimizations; the
    folder-reading commands get a folder holding only its files) and (b) the 20-module step dump: cold
    (caches off, a first run on a new dump) against 0.35 s, warm (caches on, the same dump again) 0.2 s."""
    folder = small_dump()
    dump = folder / "dump"
    module = biggest(dump.glob("*after_optimizations.txt"))
    alone = one_module_folder(module)
    trace = folder / "trace"
    commands = {
        f"{command[0]}, {label}": [*XLAINSPECT, *command]
        for label, target_file, target_dir in (("one module", module, alone), ("20-module dump", dump, dump))
        for command in latency_commands(target_file, target_dir, trace)
    }
    # `diff` above compares an input with itself, where every module is equal on both sides (and
    # analysed once); here with another run of the program, whose step module differs
    other = small_dump(heads=4) / "dump"
    commands["diff against another run, one module"] = [
        *XLAINSPECT,
        "diff",
        str(module),
        str(biggest(other.glob("*after_optimizations.txt"))),
    ]
    commands["diff against another run, 20-module dump"] = [*XLAINSPECT, "diff", str(dump), str(other)]
    cold = walls(commands, repeat, {"XLAINSPECT_NO_CACHE": "1"})
    warm_env = {"XLAINSPECT_CACHE_DIR": str(CACHE / "latency-cache")}
    for command in commands.values():
        once(command, warm_env)  # fills its caches
    warm = walls(commands, repeat, warm_env)
    rows = []
    for name in commands:
        rows += [
            figure(f"{name}: cold (wall, caches off)", cold[name], "s", f"<= {COLD_TARGET}", cold[name] <= COLD_TARGET),
            figure(f"{name}: warm (wall, caches on)", warm[name], "s", f"<= {WARM_TARGET}", warm[name] <= WARM_TARGET),
        ]
    return rows


GPU_CORPUS = Path(os.environ.get("XLAINSPECT_GPU_CORPUS", REPO.parent / "shared" / "gpu-corpus")) / "mixer_profile"
"""jax 0.11.2 on an H200: a 10.9 MB XSpace and its dump (fixtures/gpu_corpus holds a pruned, gzipped copy)."""


def gpu_profile_figures(repeat: int) -> list[dict]:
    """`profile` of a real GPU trace with its dump, caches off (a first run): mixer_profile of the shared
    GPU corpus, 285,000 events, 55 compiles, 2,600 kernels of compiled functions most in CUDA graphs.
    The pruned copy in fixtures/ (gzipped, 6 of its 57 modules) stands in where the corpus is absent."""
    root = GPU_CORPUS if GPU_CORPUS.is_dir() else REPO / "fixtures" / "gpu_corpus" / "mixer_profile"
    command = [*XLAINSPECT, "profile", str(root / "trace"), "--dump", str(root / "dump")]
    seconds = wall(command, repeat, {"XLAINSPECT_NO_CACHE": "1"})
    where = "10.9 MB XSpace" if root == GPU_CORPUS else "the pruned fixture copy"
    return [
        figure(
            f"profile, mixer_profile ({where}) with its dump (wall, caches off)", seconds, "s", "<= 2.0", seconds <= 2.0
        )
    ]


def latency_commands(file: Path, folder: Path, trace: Path) -> list[list[str]]:
    """Each command with its ordinary arguments: `file` for those that read HLO text, `folder` for those
    that read a dump."""
    text = str(file)
    modules = sorted(file.glob("*after_optimizations.txt")) if file.is_dir() else [file]
    return [
        ["parse", *map(str, modules)],
        ["modules", str(folder)],
        ["count-recompiles", str(folder)],
        ["layouts", text],
        ["memory", text],
        ["fusions", text],
        ["copies", text],
        ["collectives", text],
        ["ops", text],
        ["graph", str(biggest(modules)), "--around", graph_centre(biggest(modules))],
        ["diff", text, text],
        ["doctor", str(folder)],
        ["cost", text],
        ["profile", str(trace), "--dump", str(folder)],
        ["report", str(folder), "--html", str(CACHE / "latency_report.html")],
    ]


def one_module_folder(module: Path) -> Path:
    """A folder holding only `module`'s files (hard links), for the commands that read a dump folder."""
    folder = CACHE / "step_module"
    if not (folder / ".complete").exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        prefix = module.name.split(".", 2)[:2]
        for source in module.parent.glob(".".join(prefix) + ".*"):
            if source.is_file():
                link(source, folder / source.name)
        (folder / ".complete").touch()
    return folder


def graph_centre(module: Path) -> str:
    """The name of the entry computation's first fusion: `graph --around` starts there."""
    text = module.read_text()
    entry = text[text.index("\nENTRY ") :]
    return re.search(r"%([\w.\-]+) = \S+ fusion\(", entry)[1]


def biggest(paths) -> Path:
    return max(paths, key=lambda p: p.stat().st_size)


SMALL_PARSE = """
import json, sys, time
from xlainspect import settings
from xlainspect.hlo import parser
from xlainspect.dump.files import read_text
from xlainspect.dump.model_cache import open_cache
from xlainspect.workers import OWNED
settings.own_process()  # as the CLI parses: its processes, and the grammar's saved tables
open_cache()
text = read_text(sys.argv[-1])
start = time.perf_counter()
parser.parse_hlo(text, sys.argv[-1], runner=OWNED)
print(json.dumps({"s": time.perf_counter() - start}))
"""


def small_parse_figure(repeat: int, big_speed: float | None) -> list[dict]:
    """In-process parse speed of the step module in a fresh process (its parser's start-up included),
    beside the big module's: the start-up tax is the time over what the big module's speed predicts."""
    module = biggest((small_dump() / "dump").glob("*after_optimizations.txt"))
    megabytes = module.stat().st_size / 1e6
    seconds = median_of(SMALL_PARSE, repeat, str(module))["s"]
    name = f"grammar parse, {megabytes * 1000:.0f} KB step module, first parse in a process"
    rows = [figure(name, megabytes / seconds, "MB/s")]
    if big_speed:
        tax = seconds - megabytes / big_speed
        rows.append(figure("  its start-up tax (time over the big module's speed)", tax, "s", "<= 0.050", tax <= 0.05))
    return rows


# ---- 2. and 3. one large after-optimizations module

TRANSFORMER_STEP = """
import json, sys, time
import jax, jax.numpy as jnp
jax.config.update("jax_platforms", "cpu")
LAYERS, HEADS, D, S, B = {layers}, {heads}, 64, 32, 2

def layer(p, x):
    q, k, v = x @ p["wq"], x @ p["wk"], x @ p["wv"]
    heads = []
    for h in range(HEADS):  # heads unrolled: many small instructions, as in a big model's step
        cut = slice(h * (D // HEADS), (h + 1) * (D // HEADS))
        a = jax.nn.softmax(jnp.einsum("bsd,btd->bst", q[..., cut], k[..., cut]) / 4.0, axis=-1)
        heads.append(jnp.einsum("bst,btd->bsd", a, v[..., cut]))
    x = x + jnp.concatenate(heads, -1) @ p["wo"]
    x = x / (jnp.sqrt(jnp.mean(x * x, -1, keepdims=True)) + 1e-6)
    return x + jax.nn.gelu(x @ p["w1"]) @ p["w2"]

def loss(params, x):
    for p in params:
        x = layer(p, x)
    return jnp.mean(x * x)

def step(params, x):
    value, grads = jax.value_and_grad(loss)(params, x)
    return value, jax.tree.map(lambda w, g: w - 1e-3 * g, params, grads)

shapes = {{"wq": (D, D), "wk": (D, D), "wv": (D, D), "wo": (D, D), "w1": (D, 4 * D), "w2": (4 * D, D)}}
"""
GENERATOR = (
    TRANSFORMER_STEP
    + """
params = [{{n: jnp.zeros(s) for n, s in shapes.items()}} for _ in range(LAYERS)]
text = jax.jit(step).lower(params, jnp.zeros((B, S, D))).compile().as_text()
open(sys.argv[1], "w").write(text)
"""
)


def big_module() -> Path:
    """A >= 40 MB CPU after-optimizations module: an unrolled transformer training step (made once)."""
    target = CACHE / "big_after_optimizations.txt"
    if target.exists() and target.stat().st_size >= BIG_MODULE_MIN_BYTES:
        return target
    print(f"generating {target} with jax (once; several minutes)...", file=sys.stderr)
    script = CACHE / "generate_big.py"
    script.write_text(GENERATOR.format(layers=72, heads=32))
    subprocess.run([sys.executable, str(script), str(target)], check=True)
    return target


CPP_PARSE = """
import json, resource, sys, time
binding = None
for name in ("jaxlib._hlo", "jaxlib._jax", "jaxlib.xla_extension", "jaxlib.xla_client"):
    try:
        module = __import__(name, fromlist=["_"])
    except ImportError:
        continue
    binding = getattr(module, "hlo_module_from_text", None)
    if binding:
        break
if binding is None:
    print(json.dumps({"s": None, "where": None})); sys.exit()
text = open(sys.argv[-1]).read()
start = time.perf_counter()
binding(text)
elapsed = time.perf_counter() - start
print(json.dumps({"s": elapsed, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "where": binding.__module__ + ".hlo_module_from_text"}))
"""

GRAMMAR_PARSE = """
import json, resource, sys, time
from xlainspect import settings
from xlainspect.hlo import parser
from xlainspect.dump.files import read_text
from xlainspect.dump.model_cache import open_cache
from xlainspect.workers import OWNED
settings.own_process(1 if sys.argv[-2] == "1" else None)  # as the CLI parses: its processes and saved tables
open_cache()
parser._line_reader()
text = read_text(sys.argv[-1])
start = time.perf_counter()
modules = parser.parse_hlo(text, sys.argv[-1], runner=OWNED)
elapsed = time.perf_counter() - start
instructions = sum(m.instruction_count for m in modules)
print(json.dumps({"s": elapsed, "instructions": instructions,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "rss_workers": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))
"""

FAST_OPS = """
import json, resource, sys, time
start = time.perf_counter()
from xlainspect.analysis.ops import line_histogram
from xlainspect.hlo.fastpath import scan
from xlainspect.dump.files import read_text
lines = scan(read_text(sys.argv[-1]))
rows = line_histogram("big", lines)
print(json.dumps({"s": time.perf_counter() - start, "instructions": len(lines),
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""

WARM_ANALYSIS = """
import json, resource, sys, time
start = time.perf_counter()
from xlainspect.dump.model_cache import parse_file
(module,) = parse_file(sys.argv[-1])
loaded = time.perf_counter() - start
from xlainspect.analysis.ops import opcode_histogram
rows = opcode_histogram(module)
print(json.dumps({"s": loaded, "analysis_s": time.perf_counter() - start - loaded, "rows": len(rows),
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def big_module_figures(path: Path, repeat: int) -> list[dict]:
    megabytes = path.stat().st_size / 1e6
    parses = rounds(
        {
            "cpp": functools.partial(run_python, CPP_PARSE, str(path)),
            "one": functools.partial(run_python, GRAMMAR_PARSE, "1", str(path)),
            "many": functools.partial(run_python, GRAMMAR_PARSE, "all", str(path)),
        },
        repeat,
    )
    cpp, one, many = (median_run(parses[name]) for name in ("cpp", "one", "many"))
    cache_env = {"XLAINSPECT_CACHE_DIR": str(CACHE / "xlainspect-cache")}
    median_of(WARM_ANALYSIS, 1, str(path), env=cache_env)  # fills the cache
    warm = median_of(WARM_ANALYSIS, repeat, str(path), env=cache_env)
    fast = median_of(FAST_OPS, repeat, str(path))
    ops_wall = wall(
        [*XLAINSPECT, "ops", str(path), "--format", "json"], repeat, cache_env | {"XLAINSPECT_NO_CACHE": "1"}
    )
    cpp_s = cpp["s"]
    rows = [figure(f"big module: {megabytes:.1f} MB, {one['instructions']:,} instructions", megabytes, "MB")]
    if cpp_s is None:
        rows.append(figure("XLA C++ parser (jaxlib)", None, "s", "hlo_module_from_text not found in this jaxlib"))
    else:
        rows.append(
            figure(f"XLA C++ parser ({cpp['where']})", megabytes / cpp_s, "MB/s", f"{cpp_s:.2f} s", rss=cpp["rss"])
        )
    for label, run, target in (("1 process", one, 8.5), (f"{os.cpu_count()} processes", many, 13.5)):
        speed = megabytes / run["s"]
        ratio = f", {cpp_s / run['s']:.2f}x C++" if cpp_s else ""
        rows.append(
            figure(
                f"grammar parse, {label}{ratio}",
                speed,
                "MB/s",
                f">= {target} MB/s",
                speed >= target,
                rss=run["rss"],
                rss_workers=run["rss_workers"],
            )
        )
    rows += small_parse_figure(repeat, megabytes / one["s"])
    rss = max(one["rss"], many["rss"])
    rows.append(
        figure(
            "peak RSS of a full parse",
            rss / 2**20,
            "MiB",
            f"<= C++ {cpp['rss'] / 2**20:.0f} MiB" if cpp_s else "",
            _ok(cpp_s, rss <= cpp.get("rss", 0)),
        )
    )
    collectives = [*XLAINSPECT, "collectives", str(path), "--format", "json"]
    wall(collectives, 1, cache_env)  # the cold run fills the model and results caches
    rerun = wall(collectives, repeat, cache_env)
    rows.append(
        figure(
            "warm re-analysis: xlainspect collectives again (wall)",
            rerun,
            "s",
            f"<= {cpp_s / 5:.2f} (C++ / 5)" if cpp_s else "",
            _ok(cpp_s, cpp_s and rerun <= cpp_s / 5),
        )
    )
    rows.append(figure("  cached model load alone (imports included)", warm["s"], "s", "", None, rss=warm["rss"]))
    rows.append(figure("  then the ops analysis on it (not cached)", warm["analysis_s"], "s", "", None))
    rows.append(
        figure("opcode histogram by the line fast path (read + scan + histogram, in process)", fast["s"], "s", "", None)
    )
    rows.append(
        figure(
            "xlainspect ops, no cache (wall, start-up included)",
            ops_wall,
            "s",
            f"< {cpp_s:.2f} (C++)" if cpp_s else "",
            _ok(cpp_s, cpp_s and ops_wall < cpp_s),
        )
    )
    return rows + cost_figures(path, repeat, cache_env | {"XLAINSPECT_NO_CACHE": "1"})


def cost_figures(path: Path, repeat: int, env: dict) -> list[dict]:
    """`cost` (XLA's FLOPs and bytes per op, roofline on a chip) against `fusions` on the same module,
    both cold, start-up and parse included: the target is 1.2x."""
    times = walls(
        {
            "fusions": [*XLAINSPECT, "fusions", str(path), "--format", "json"],
            "cost": [*XLAINSPECT, "cost", str(path), "--chip", "h100", "--format", "json"],
        },
        repeat,
        env,
    )
    fusions_wall, cost_wall = times["fusions"], times["cost"]
    return [
        figure(
            "xlainspect cost --chip h100, no cache (wall)",
            cost_wall,
            "s",
            f"<= {1.2 * fusions_wall:.2f} (1.2x fusions)",
            cost_wall <= 1.2 * fusions_wall,
        ),
        figure("  xlainspect fusions, no cache (wall)", fusions_wall, "s", "", None),
    ]


def _ok(reference: float | None, holds) -> bool | None:
    """A target met or not; None (no verdict) without the C++ figure to compare with."""
    return None if reference is None else bool(holds)


def print_table(results: list[dict]) -> None:
    width = max(len(r["figure"]) for r in results)
    print(f"{'figure':<{width}}  {'value':>10}  {'unit':<5}  {'target':<22}  ok")
    for r in results:
        value = "-" if r["value"] is None else f"{r['value']:.3f}" if r["value"] < 100 else f"{r['value']:,.0f}"
        ok = {True: "yes", False: "NO", None: ""}[r["ok"]]
        print(f"{r['figure']:<{width}}  {value:>10}  {r['unit']:<5}  {r['target']:<22}  {ok}")


if __name__ == "__main__":
    main()
