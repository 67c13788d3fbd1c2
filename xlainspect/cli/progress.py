"""Progress bars on stderr for long runs: shown only when stderr is a terminal and a stage of the work
has already taken about a second, so quick commands, pipes and CI logs never see one."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Generator
from typing import TYPE_CHECKING

from xlainspect.cli.render import stderr_console
from xlainspect.progress import Advance, Progress

if TYPE_CHECKING:  # rich's progress is imported where a bar is drawn
    from rich.progress import Progress as Bars
    from rich.progress import TaskID

#: Seconds of work before the bar appears; XLAINSPECT_PROGRESS_AFTER sets it (0: at once, as the pty test does).
SHOW_AFTER = float(os.environ.get("XLAINSPECT_PROGRESS_AFTER", "1.0"))


@contextlib.contextmanager
def progress_bars() -> Generator[Progress]:
    """Yield a `Progress` for library calls; each stage it is told of gets a transient bar, all stopped at
    the end.

    with progress_bars() as progress:
        report = xlainspect.count_recompiles(path, progress=progress)
    """
    bars: list[Bars] = []

    def stage(description: str, total: int | None = None) -> Advance:
        started = time.monotonic()
        done = 0
        task: TaskID | None = None

        def advance(n: int = 1) -> None:
            nonlocal done, task
            done += n
            if task is None and sys.stderr.isatty() and time.monotonic() - started >= SHOW_AFTER:
                if not bars:
                    bars.append(_start())
                task = bars[0].add_task(description, total=total, completed=done)
            elif task is not None:
                bars[0].update(task, completed=done)

        return advance

    try:
        yield stage
    finally:
        for bar in bars:
            bar.stop()


def _start() -> Bars:
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
