"""Per-item work shared with forked worker processes, where xlainspect owns the process.

A fleet's dump is 100,000s of small files, a report 1,000s of modules to analyse: reading and
analysing them is Python work a second core halves. Where a library caller owns the process, or it
cannot fork, the work runs here, in order.

The workers are bare `os.fork` children that send their answers back pickled through a pipe. They
inherit what they work on (texts, functions, item lists, compiled regexes) through the fork, so
nothing is pickled on the way out. `concurrent.futures` and `multiprocessing` are not used: importing
them and starting their pool took 15 ms of a `diff` of two 350 KB modules before its work began, where
a bare fork takes 3 ms.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import signal
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Generic, TypeVar, cast

from xlainspect.settings import parse_workers, paused_gc, work_alone

T = TypeVar("T")
R = TypeVar("R")


def can_fork() -> bool:
    """Whether this platform has `os.fork` (Windows has not: there everything runs in one process)."""
    return hasattr(os, "fork")


def _ignore(n: int) -> None:
    """Progress nobody watches."""


def map_shared(
    function: Callable[[T], R],
    items: list[T],
    chunk: int,
    *,
    advance: Callable[[int], None] | None = None,
    meanwhile: Callable[[], object] | None = None,
    serial_below: int = 0,
    size: Callable[[T], int] | None = None,
    serial_below_size: int = 0,
) -> list[R]:
    """`[function(item) for item in items]`, computed by this process and `parse_workers() - 1` forked
    ones; `advance(n)` as items are done.

    The items go in chunks of `chunk` items to whichever process asks first, in order, while this
    process first runs `meanwhile()` (work of its own that needs no results): put the largest items
    first, or give their `size` (then they go out largest first, and the results are still in order),
    and whichever side runs faster (the machine may be busy) does more. The workers inherit what this
    process imported and compiled before the call; what they import themselves, both sides import at
    once. Only the workers' results cost a pickle. The chunks of a worker that fails are
    done here, so an exception is raised here as in a serial run. Fewer than `serial_below` items (or
    one chunk) whose sizes sum to less than `serial_below_size` run here alone."""
    advance = advance or _ignore
    alone = parse_workers() < 2 or len(items) <= chunk or not can_fork()
    sizes = [size(item) for item in items] if size and not alone else None  # a serial caller stats nothing
    if alone or (len(items) < serial_below and (sizes is None or sum(sizes) < serial_below_size)):
        found = _here(function, items, advance)
        if meanwhile is not None:
            meanwhile()
        return found
    if sizes is None:
        return _shared(function, items, chunk, advance, meanwhile)
    order = sorted(range(len(items)), key=lambda k: -sizes[k])
    found = cast("list[R]", [None] * len(items))  # each filled below
    for k, result in zip(order, _shared(function, [items[k] for k in order], chunk, advance, meanwhile)):
        found[k] = result
    return found


def map_hosts(function: Callable[[T], R], items: list[T], scheduler: str | None) -> list[R]:
    """`[function(item) for item in items]` for per-host work (a host's trace read and summarised): each
    item a task on the Dask cluster at `scheduler` (`cluster.map_on_cluster`), else `map_shared` here,
    one item a chunk. `function` and the items are pickled for a cluster: a top-level function, or a
    `functools.partial` of one, and plain data. The cluster's module is imported here, when a scheduler is
    given (it costs 15 ms, distributed much more): a local run never loads either."""
    if scheduler is not None:
        from xlainspect.cluster import map_on_cluster  # here only: see above

        return map_on_cluster(scheduler, function, items)
    return map_shared(function, items, 1)


def map_groups(
    function: Callable[[T], R], items: list[T], groups: list[str], scheduler: str | None, chunk: int = 1
) -> list[R]:
    """`[function(item) for item in items]` for work on many files of many hosts (`groups[k]`: item k's
    host): with a `scheduler`, each host's items one task on that cluster (`map_hosts`; `function` a
    top-level function), so that a worker reads one host's files and only the answers come back; else
    `map_shared` here, `chunk` items a chunk."""
    if scheduler is None:
        return map_shared(function, items, chunk)
    by_group: dict[str, list[int]] = {}
    for k, group in enumerate(groups):
        by_group.setdefault(group, []).append(k)
    tasks = [[items[k] for k in ks] for ks in by_group.values()]
    found = cast("list[R]", [None] * len(items))  # each filled below
    for ks, answers in zip(by_group.values(), map_hosts(functools.partial(_each, function), tasks, scheduler)):
        for k, answer in zip(ks, answers):
            found[k] = answer
    return found


def _each(function: Callable[[T], R], items: list[T]) -> list[R]:
    """`function` of each item: one task's work (a top-level function, so that a cluster can send it)."""
    return [function(item) for item in items]


def _here(function: Callable[[T], R], items: list[T], advance: Callable[[int], None]) -> list[R]:
    found: list[R] = []
    for item in items:
        found.append(function(item))
        advance(1)
    return found


def _shared(
    function: Callable[[T], R],
    items: list[T],
    chunk: int,
    advance: Callable[[int], None],
    meanwhile: Callable[[], object] | None,
) -> list[R]:
    found = cast("list[R]", [None] * len(items))  # each span filled below
    chunk = max(chunk, -(-len(items) // Claims.MOST))
    spans = [slice(start, min(start + chunk, len(items))) for start in range(0, len(items), chunk)]
    done: set[int] = set()

    def work() -> Iterator[tuple[int, list[R]]]:
        return ((k, [function(item) for item in items[spans[k]]]) for k in claims)

    with Claims(len(spans)) as claims, forked([work] * (parse_workers() - 1)) as workers:
        if meanwhile is not None:
            meanwhile()
        for k in claims:
            found[spans[k]] = _here(function, items[spans[k]], advance)
            done.add(k)
        for worker in workers:
            for k, results in worker.answers()[0]:
                found[spans[k]] = results
                advance(len(results))
                done.add(k)
    for k in sorted(set(range(len(spans))) - done):  # a worker that failed: its chunks here
        found[spans[k]] = _here(function, items[spans[k]], advance)
    return found


class OwnedProcess:
    """What `xlainspect.hlo.parser.parse_hlo` may do to a process xlainspect owns (its `Runner`), as the
    settings say (`settings.own_process`): parse a large text's parts in `parse_workers()` processes,
    and pause garbage collection while the model is made. The dump layer lends it; `hlo` imports
    neither this module nor the settings."""

    @property
    def workers(self) -> int:
        return parse_workers()

    def map(self, function: Callable[[T], R], items: list[T]) -> list[R]:
        return map_shared(function, items, 1)

    def paused_gc(self) -> contextlib.AbstractContextManager[object]:
        return paused_gc()


OWNED = OwnedProcess()


class Claims:
    """The numbers 0..count-1, each taken by whichever process reads it first, in order: 4-byte tokens
    in a pipe every process shares through the fork. A pipe gives each read of 4 bytes one whole token
    (it holds whole tokens only, written before any reader came), and a process that dies loses only
    the token it took: its chunk is then one no worker finished, which the caller does itself."""

    MOST = 4096
    """Tokens a pipe holds on every platform (16 KB) before anything reads it."""

    def __init__(self, count: int) -> None:
        if count > Claims.MOST:
            raise ValueError(f"{count} claims: at most {Claims.MOST}")
        self._tokens, write = os.pipe()
        try:
            os.write(write, b"".join(k.to_bytes(4, "little") for k in range(count)))
        finally:
            os.close(write)

    def __enter__(self) -> Claims:
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self._tokens)

    def __iter__(self) -> Iterator[int]:
        while len(token := os.read(self._tokens, 4)) == 4:
            yield int.from_bytes(token, "little")


class Forked(Generic[R]):
    """The answers `produce()` yields, computed in a forked child process (`forked` makes them): each
    is pickled back through a pipe as soon as it is made, and unpickled here by a thread while this process
    does its own work, so that neither the child's pickling nor this process's unpickling waits for
    the end. The child inherits what `produce` reads through the fork, and leaves with `os._exit`: no
    exit handlers, no flushing of buffers it shares with this process."""

    def __init__(self, produce: Callable[[], Iterable[R]]) -> None:
        read, write = os.pipe()
        self._pid: int | None = os.fork()
        if self._pid == 0:
            os.close(read)
            work_alone()
            _serve(produce, write)
        os.close(write)
        self._read = read
        self._answers: list[R] = []
        self._whole = True
        self._listener: threading.Thread | None = None

    def listen(self) -> None:
        """Start reading the child's answers (`forked` starts every child's listener after all forks)."""
        self._listener = threading.Thread(target=self._receive, daemon=True)
        self._listener.start()

    def _receive(self) -> None:
        with open(self._read, "rb") as pipe:
            while len(head := pipe.read(8)) == 8:
                size = int.from_bytes(head, "little")
                body = pipe.read(size)
                if len(body) < size:
                    break  # the child died mid-answer
                try:
                    self._answers.append(pickle.loads(body))
                except Exception:  # noqa: BLE001 (whatever an answer fails with, the caller does that work)
                    self._whole = False
                    break

    def answers(self) -> tuple[list[R], bool]:
        """The answers the child sent, and whether it finished (where it failed, an exception or a
        signal, the caller does what is missing, and meets the same exception with its traceback)."""
        assert self._listener is not None and self._pid is not None, "answers are taken once, after listen"
        self._listener.join()
        _, status = os.waitpid(self._pid, 0)
        self._pid = None
        return self._answers, status == 0 and self._whole

    def stop(self) -> None:
        """Kill the child and reap it, unless its answers were taken (this process is leaving early)."""
        if self._pid is not None:
            os.kill(self._pid, signal.SIGKILL)
            os.waitpid(self._pid, 0)
            if self._listener is None:
                os.close(self._read)
            else:
                self._listener.join()
            self._pid = None


def _serve(produce: Callable[[], Iterable[object]], write: int) -> None:
    """In the child: send each answer of `produce()`, pickled behind its length, then leave; on any
    exception leave with 1."""
    status = 1
    try:
        with open(write, "wb") as pipe:  # buffered: it writes all of a long answer, a raw write may not
            for answer in produce():
                data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
                pipe.write(len(data).to_bytes(8, "little"))
                pipe.write(data)
                pipe.flush()
        status = 0
    finally:
        os._exit(status)


@contextlib.contextmanager
def forked(produces: list[Callable[[], Iterable[R]]]) -> Generator[list[Forked[R]]]:
    """Each of `produces` in a child of its own, all forked before any is read (a fork copies only the
    thread that forks, and each child's answers are read by a thread); those still running are stopped
    when the block leaves, by an exception or an interrupt."""
    children: list[Forked[R]] = []
    try:
        for produce in produces:
            children.append(Forked(produce))
        for child in children:
            child.listen()
        yield children
    finally:
        for child in children:
            child.stop()
