"""Totals over typed rows: the one way the commands' "totals" tables are summed."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar, cast

Row = TypeVar("Row")
Key = TypeVar("Key", bound=Hashable)


def group_sums(rows: Iterable[Row], key: Callable[[Row], Key], fields: Sequence[str]) -> dict[Key, list[int | None]]:
    """Per group (`key(row)`), in first-seen order: the row count, then each field's sum (the fields
    are integer counts: bytes, flags). A sum is None once any of its values is None: an unknown part
    makes the total unknown, never an undercount."""
    sums: dict[Key, list[int | None]] = {}
    for row in rows:
        entry = sums.setdefault(key(row), [0] * (len(fields) + 1))
        entry[0] = cast(int, entry[0]) + 1  # the count (first) is never None; only a sum turns unknown
        for position, name in enumerate(fields, 1):
            value = getattr(row, name)
            total = entry[position]
            entry[position] = None if total is None or value is None else total + value
    return sums
