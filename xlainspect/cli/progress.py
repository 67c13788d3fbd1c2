"""Progress bars on stderr for long runs: shown only when stderr is a terminal and a stage of the work
has already taken about a second, so quick commands, pipes and CI logs never see one."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator

from xlainspect.cli.render import stderr_console
from xlainspect.progress import Advance, Progress

#: Seconds of work before the bar appears; XLAINSPECT_PROGRESS_AFTER sets it (0: at once, as the pty test does).
SHOW_AFTER = float(os.environ.get("XLAINSPECT_PROGRESS_AFTER", "1.0"))


@contextlib.contextmanager
def progress_bars() -> Iterator[Progress]:
    """Yield a `Progress` for library calls; each stage it is told of gets a transient bar, all stopped at
    the end.

    with progress_bars() as progress:
        report = xlainspect.count_recompiles(path, progress=progress)
    """
    bars: list = []

    def stage(description: str, total: int | None = None) -> Advance:
        started = time.monotonic()
        state: dict = {"done": 0, "task": None}

        def advance(n: int = 1) -> None:
            state["done"] += n
            if state["task"] is None and sys.stderr.isatty() and time.monotonic() - started >= SHOW_AFTER:
                if not bars:
                    bars.append(_start())
                state["task"] = bars[0].add_task(description, total=total, completed=state["done"])
            elif state["task"] is not None:
                bars[0].update(state["task"], completed=state["done"])

        return advance

    try:
        yield stage
    finally:
        for bar in bars:
            bar.stop()


def _start():
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=stderr_console(),
        transient=True,
    )
    bar.start()
    return bar
