"""A progress bar on stderr for long runs: shown only when stderr is a terminal and the work has
already taken about a second, so quick commands, pipes and CI logs never see it."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator

#: Seconds of work before the bar appears; XLAINSPECT_PROGRESS_AFTER sets it (0: at once, as the pty test does).
SHOW_AFTER = float(os.environ.get("XLAINSPECT_PROGRESS_AFTER", "1.0"))


@contextlib.contextmanager
def progress(description: str, total: int | None = None) -> Iterator[Callable[[int], None]]:
    """Yield `advance(n)`; call it as work completes. The bar is transient (erased at the end).

    with progress("parsing modules", total=len(files)) as advance:
        for path in files:
            ...
            advance(1)
    """
    started = time.monotonic()
    state: dict = {"done": 0, "bar": None, "task": None}

    def advance(n: int = 1) -> None:
        state["done"] += n
        if state["bar"] is None and sys.stderr.isatty() and time.monotonic() - started >= SHOW_AFTER:
            state["bar"], state["task"] = _start(description, total, state["done"])
        elif state["bar"] is not None:
            state["bar"].update(state["task"], completed=state["done"])

    try:
        yield advance
    finally:
        if state["bar"] is not None:
            state["bar"].stop()


def _start(description: str, total: int | None, done: int):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from xlainspect.cli.render import stderr_console

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=stderr_console(),
        transient=True,
    )
    task = bar.add_task(description, total=total, completed=done)
    bar.start()
    return bar, task
