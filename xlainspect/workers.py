"""Per-item work shared with forked worker processes, where xlainspect owns the process.

A fleet's dump is 100,000s of small files: reading them is system calls and Python bookkeeping in
equal parts, and a second core halves it. Where a library caller owns the process, or it cannot
fork, the work runs here, in order.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import TypeVar

from xlainspect.settings import parse_workers

T = TypeVar("T")
R = TypeVar("R")


def map_shared(function: Callable[[T], R], items: list[T], chunk: int) -> list[R]:
    """`[function(item) for item in items]`, computed by this process and `parse_workers() - 1` forked
    ones. Chunks of `chunk` items go to the workers from the front while this process takes them from
    the back as long as it can still cancel them: whichever side runs faster (the machine may be busy)
    does more, and only the workers' results cost a pickle round trip. The workers inherit `function`
    and `items` through the fork (never pickled)."""
    workers = parse_workers()
    if workers < 2 or len(items) <= chunk or "fork" not in multiprocessing.get_all_start_methods():
        return [function(item) for item in items]
    from concurrent.futures import ProcessPoolExecutor

    found: list = [None] * len(items)
    spans = [(start, min(start + chunk, len(items))) for start in range(0, len(items), chunk)]
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(workers - 1, mp_context=context, initializer=_adopt, initargs=(function, items)) as pool:
        tasks = [pool.submit(_span, span) for span in spans]
        for (start, end), task in zip(reversed(spans), reversed(tasks)):
            if not task.cancel():
                break
            found[start:end] = [function(item) for item in items[start:end]]
        for (start, end), task in zip(spans, tasks):
            if not task.cancelled():
                found[start:end] = task.result()
    return found


_adopted: tuple[Callable, list] = (lambda item: item, [])
"""A worker's function and items, inherited through the fork."""


def _adopt(function: Callable, items: list) -> None:
    global _adopted
    _adopted = (function, items)


def _span(span: tuple[int, int]) -> list:
    function, items = _adopted
    return [function(item) for item in items[span[0] : span[1]]]
