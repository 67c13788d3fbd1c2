"""Per-item work shared with forked worker processes, where xlainspect owns the process.

A fleet's dump is 100,000s of small files, a report 1,000s of modules to analyse: reading and
analysing them is Python work a second core halves. Where a library caller owns the process, or it
cannot fork, the work runs here, in order.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import TypeVar

from xlainspect.settings import parse_workers

T = TypeVar("T")
R = TypeVar("R")


def _ignore(n: int) -> None:
    """Progress nobody watches."""


def map_shared(
    function: Callable[[T], R],
    items: list[T],
    chunk: int,
    *,
    advance: Callable[[int], None] | None = None,
    meanwhile: Callable[[], object] | None = None,
    warm: int = 0,
    serial_below: int = 0,
) -> list[R]:
    """`[function(item) for item in items]`, computed by this process and `parse_workers() - 1` forked
    ones; `advance(n)` as items are done.

    The first `warm` items are done here before the fork, so the workers inherit what they warmed
    (imports, parser tables). Chunks of `chunk` items go to the workers from the front while this
    process runs `meanwhile()` (work of its own that needs no results), then does the last chunk, and
    takes more from the back as long as it can still cancel them: whichever side runs faster (the
    machine may be busy) does more, and only the workers' results cost a pickle round trip. The
    workers inherit `function` and `items` through the fork (never pickled). Fewer than
    `serial_below` items (or one chunk) run here alone."""
    advance = advance or _ignore
    if (
        parse_workers() < 2
        or len(items) <= max(chunk, serial_below - 1)
        or "fork" not in multiprocessing.get_all_start_methods()
    ):
        found = _here(function, items, advance)
        if meanwhile is not None:
            meanwhile()
        return found
    return _shared(function, items, chunk, advance, meanwhile, warm)


def _here(function: Callable, items: list, advance: Callable[[int], None]) -> list:
    found = []
    for item in items:
        found.append(function(item))
        advance(1)
    return found


def _shared(function: Callable, items: list, chunk: int, advance, meanwhile, warm: int) -> list:
    found: list = _here(function, items[:warm], advance) + [None] * (len(items) - warm)
    spans = [(start, min(start + chunk, len(items))) for start in range(warm, len(items), chunk)]
    last, spans = spans[-1], spans[:-1]  # never submitted: the pool queues a task or two it cannot cancel
    with forked_pool(parse_workers() - 1, (function, items)) as pool:
        tasks = [pool.submit(_span, span) for span in spans]
        if meanwhile is not None:
            meanwhile()
        found[last[0] : last[1]] = _here(function, items[last[0] : last[1]], advance)
        for (start, end), task in zip(reversed(spans), reversed(tasks)):
            if not task.cancel():
                break
            found[start:end] = _here(function, items[start:end], advance)
        for (start, end), task in zip(spans, tasks):
            if not task.cancelled():
                found[start:end] = task.result()
                advance(end - start)
    return found


def _span(span: tuple[int, int]) -> list:
    function, items = inherited()
    return [function(item) for item in items[span[0] : span[1]]]


def forked_pool(processes: int, inherit: object):
    """A ProcessPoolExecutor of `processes` forked workers in which `inherited()` is `inherit`: it
    reaches them through the fork (big texts, functions, item lists), never pickled."""
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork")
    return ProcessPoolExecutor(processes, mp_context=context, initializer=_adopt, initargs=(inherit,))


_inherited: object = None
"""A worker's `inherit`, set by the fork's initializer."""


def _adopt(inherit: object) -> None:
    global _inherited
    _inherited = inherit


def inherited():
    """In a `forked_pool` worker, what the pool was given to inherit."""
    return _inherited
