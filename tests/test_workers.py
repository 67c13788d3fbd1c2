"""workers.map_shared: forked children give the serial answer, in order, and leave nothing behind."""

from __future__ import annotations

import os
import select
import shutil
import time
from contextlib import contextmanager

import pytest
from conftest import DUMPS

import xlainspect
from xlainspect import settings, workers
from xlainspect.analysis import runner


@pytest.fixture
def two_processes(monkeypatch):
    monkeypatch.setattr(settings, "_parse_workers", 2)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _no_children_left() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


class _Pipe:
    """Items done on one side, told through a pipe the forked worker inherits: a test waits for the other
    process instead of sleeping and hoping it has started (a loaded machine starts the worker late, or
    it does every item before this process claims one)."""

    def __init__(self) -> None:
        self.read, self.write = os.pipe()

    def tell(self) -> None:
        os.write(self.write, b".")

    def wait_for(self, items: int, timeout: float = 120.0) -> None:
        done = 0
        while done < items:
            ready, _, _ = select.select([self.read], [], [], timeout)
            if not ready:
                pytest.fail(f"the other process did {done} of {items} items in {timeout} s")
            done += len(os.read(self.read, items - done))


class _Worker:
    """What a forked worker did (`from_worker`) and this process (`from_here`)."""

    def __init__(self) -> None:
        self.parent = os.getpid()
        self.from_worker, self.from_here = _Pipe(), _Pipe()

    def here(self) -> bool:
        """Whether this call runs in the test's process; a worker's call is told to `from_worker`."""
        if os.getpid() == self.parent:
            return True
        self.from_worker.tell()
        return False


@contextmanager
def _worker():
    worker = _Worker()
    try:
        yield worker
    finally:
        for pipe in (worker.from_worker, worker.from_here):
            os.close(pipe.read)
            os.close(pipe.write)


def test_shared_work_is_the_serial_answer_in_order(two_processes):
    with _worker() as worker:
        fds = _open_fds()

        first = [True]

        def square(n: int) -> tuple[int, bool]:
            """Each side's first item waits for the other: this process's for the worker's to start, the
            worker's for this process's to end (the worker holds one chunk meanwhile, so this process
            claims one: no deadlock)."""
            here = worker.here()
            if first:
                first.clear()
                (worker.from_worker if here else worker.from_here).wait_for(1)
                if here:
                    worker.from_here.tell()
            return n * n, here

        found = workers.map_shared(square, list(range(200)), 3)
        assert _open_fds() == fds
    assert [square for square, _ in found] == [n * n for n in range(200)]
    assert {here for _, here in found} == {True, False}  # both processes did some
    assert _no_children_left()


def test_a_worker_that_dies_has_its_chunks_done_here(two_processes):
    parent = os.getpid()

    def square(n: int) -> int:
        if os.getpid() != parent and n >= 20:
            os._exit(3)  # a worker killed mid-way (the OOM killer, a crash in a C extension)
        time.sleep(0.002)
        return n * n

    advanced = []
    found = workers.map_shared(square, list(range(50)), 4, advance=advanced.append)
    assert found == [n * n for n in range(50)]
    assert sum(advanced) == 50
    assert _no_children_left()


def test_an_exception_in_a_worker_is_raised_here_with_its_own_traceback(two_processes):
    def fail_on_7(n: int) -> int:
        if n == 7:
            raise ValueError(f"item {n}")
        return n

    fds = _open_fds()
    with pytest.raises(ValueError, match="item 7"):
        workers.map_shared(fail_on_7, list(range(40)), 2)
    assert _open_fds() == fds
    assert _no_children_left()


def test_meanwhile_runs_once_and_sized_items_go_out_largest_first(two_processes):
    """This process claims items only after `meanwhile`, so the worker takes the first ones: the
    largest; the results are in the items' order. `meanwhile` returns once the worker has done three."""
    calls = []
    with _worker() as worker:

        def meanwhile() -> None:
            worker.from_worker.wait_for(3)
            calls.append(1)

        found = workers.map_shared(
            lambda n: (n, worker.here()), list(range(30)), 1, meanwhile=meanwhile, size=lambda n: n
        )
    assert [n for n, _ in found] == list(range(30))
    assert [here for _, here in found[27:]] == [False, False, False]  # the worker's, during `meanwhile`
    assert calls == [1]


def test_few_items_run_here_unless_their_sizes_reach_the_threshold(two_processes):
    """Below the threshold all run here (and `meanwhile` after them); at it the work is shared: `meanwhile`
    runs first, and returns once the worker has done an item."""
    items = ["x" * 10] * 10  # sizes sum to 100

    def run(threshold: int) -> list[bool]:
        with _worker() as worker:
            ran: list[bool] = []

            def here(text: str) -> bool:
                ran.append(worker.here())
                return ran[-1]

            def meanwhile() -> None:
                if not ran:  # shared: this process has claimed nothing yet
                    worker.from_worker.wait_for(1)

            return workers.map_shared(
                here, items, 1, serial_below=64, size=len, serial_below_size=threshold, meanwhile=meanwhile
            )

    assert run(101) == [True] * 10
    assert False in run(100)


def test_claims_hand_out_each_number_once_across_processes():
    with workers.Claims(500) as claims, workers.forked([lambda: [list(claims)]]) as (child,):
        mine = list(claims)
        (theirs,), finished = child.answers()
    assert finished
    assert sorted(mine + theirs) == list(range(500))
    assert mine == sorted(mine) and theirs == sorted(theirs)


def test_answers_larger_than_a_pipe_holds_come_back_whole(two_processes):
    def big(n: int) -> str:
        time.sleep(0.001)
        return f"{n}:" + "x" * 300_000  # a chunk's answer is 1.5 MB, a pipe holds 64 KB

    found = workers.map_shared(big, list(range(60)), 5)
    assert [int(text.split(":")[0]) for text in found] == list(range(60))
    assert {len(text) - len(text.split(":")[0]) for text in found} == {300_001}


def test_more_items_than_claims_go_in_larger_chunks(two_processes):
    many = list(range(3 * workers.Claims.MOST))
    assert workers.map_shared(lambda n: -n, many, 1) == [-n for n in many]


@pytest.mark.parametrize(
    ("command", "options", "damaged"),
    [
        ("fusions_report", {}, "after_optimizations.txt"),
        ("copies_report", {}, "after_optimizations.txt"),
        ("ops_report", {}, "after_optimizations.txt"),
        ("cost_report", {"chip": xlainspect.ChipChoice("tpu-v5e")}, "after_optimizations.txt"),
        ("memory_report", {}, "after_optimizations-buffer-assignment.txt"),
        ("layouts_report", {}, "after_optimizations.txt"),
    ],
)
def test_a_command_over_a_dump_shared_with_a_worker_equals_the_serial_run(
    tmp_path, monkeypatch, command, options, damaged
):
    """The per-module commands share a dump's modules with a forked worker (largest first); a module
    whose file does not parse is skipped, in the dump's order, as in one process."""
    dump = tmp_path / "dump"
    shutil.copytree(DUMPS / "tpu_v5e", dump)
    for number in ("0085", "0029"):
        next(dump.glob(f"module_{number}.*.{damaged}")).write_text("garbage\n")
    run = lambda path: getattr(xlainspect, command)(path, **options)  # noqa: E731
    monkeypatch.setattr(settings, "_cache_enabled", False)  # the worker analyses, not read the first run's facts
    monkeypatch.setattr(settings, "_parse_workers", 1)
    serial = run(dump)
    monkeypatch.setattr(settings, "_parse_workers", 2)
    monkeypatch.setattr(runner, "SHARE_MIN_MODULES", 0)
    monkeypatch.setattr(runner, "SHARE_MIN_BYTES", 0)
    forks = []
    monkeypatch.setattr(workers, "_shared", lambda *args: forks.append(1) or shared(*args))
    shared_report = run(dump)
    assert forks == [1]
    assert shared_report == serial
    assert [s.path.name.split(".")[0] for s in serial.skipped] == ["module_0029", "module_0085"]


shared = workers._shared


def test_a_serial_caller_sizes_nothing(monkeypatch):
    """A library caller (one process) never pays for the sizes: a dump's modules would each be stat'ed."""
    monkeypatch.setattr(settings, "_parse_workers", 1)
    assert workers.map_shared(lambda n: -n, [1, 2, 3], 1, size=lambda n: 1 // 0) == [-1, -2, -3]


def test_a_worker_maps_alone(two_processes):
    """A forked worker's own maps run in it (`settings.work_alone`): its sibling holds the other core, so
    a fork of its own (a job's host reading a large trace) would only share it. The worker is made to
    do a chunk (this process's first waits for it) and reports the workers it may use: one."""
    with _worker() as worker:

        def workers_seen(n: int) -> tuple[bool, int]:
            here = worker.here()
            if here and n == 0:
                worker.from_worker.wait_for(1)  # until the worker has done a chunk
            return here, settings.parse_workers()

        found = workers.map_shared(workers_seen, list(range(20)), 1)
    assert {seen for here, seen in found if not here} == {1}  # the worker did one chunk at least
    assert _no_children_left()
