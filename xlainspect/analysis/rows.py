"""Totals over typed rows: the one way the commands' "totals" tables are summed."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence


def group_sums(
    rows: Iterable[object], key: Callable[[object], Hashable], fields: Sequence[str]
) -> dict[Hashable, list]:
    """Per group (`key(row)`), in first-seen order: the row count, then each field's sum. A sum is None
    once any of its values is None: an unknown part makes the total unknown, never an undercount."""
    sums: dict[Hashable, list] = {}
    for row in rows:
        entry = sums.setdefault(key(row), [0] * (len(fields) + 1))
        entry[0] += 1
        for position, name in enumerate(fields, 1):
            value = getattr(row, name)
            entry[position] = None if entry[position] is None or value is None else entry[position] + value
    return sums
