"""How a long library call reports progress without drawing anything: the caller passes a `Progress`.

`progress(description, total)` starts a stage and returns `advance(n)`, called as each of its `total`
units of work completes. The CLI passes one that draws a bar on a terminal; library callers pass
nothing (`silent`).
"""

from __future__ import annotations

from collections.abc import Callable

Advance = Callable[[int], None]
Progress = Callable[[str, "int | None"], Advance]


def _ignore(n: int = 1) -> None:
    """Progress nobody watches."""


def silent(description: str, total: int | None = None) -> Advance:
    return _ignore
