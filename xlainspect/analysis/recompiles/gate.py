"""count-recompiles as a CI gate: compile budgets per function and in total, a baseline's counts as
budgets too. The gate returns which budgets were exceeded (`Violation`); the messages, which name
the option a person set, are written by `xlainspect.report.causes.violation_text`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from xlainspect.analysis.recompiles.model import FunctionCompiles
from xlainspect.errors import no_match


@dataclass(slots=True)
class Budget:
    """The CI gate: compile budgets per function and in total; a baseline's counts are budgets too."""

    max_per_function: int | None = None
    per_name: tuple[tuple[str, int], ...] = ()
    max_total: int | None = None
    ignore_eager: bool = False
    baseline: tuple[tuple[str, int], ...] | None = None
    """Per-function counts of an earlier run; None without one. A function absent from it is new: its
    budget is `max_per_function`, else NEW_FUNCTION_BUDGET, so a baseline never waves one through."""


NEW_FUNCTION_BUDGET = 1
"""Compiles allowed to a function the baseline does not hold, without a per-function budget: one (a
new function compiles once; a new function that recompiles fails the gate)."""

Limit = Literal["per_name", "per_function", "baseline", "new", "total"]
"""Which budget: one function's by name, every function's, the baseline's count, the one a function new
to the baseline gets (`NEW_FUNCTION_BUDGET`), or the total."""


@dataclass(frozen=True, slots=True)
class Violation:
    """A budget exceeded: `function` (None for the total) compiled `compiles` times, over `budget`."""

    function: str | None
    compiles: int
    budget: int
    limit: Limit


def budget_violations(rows: list[FunctionCompiles], budget: Budget) -> list[Violation]:
    """Per function (then the total) the tightest budget it exceeds; empty when everything is within."""
    per_name, baseline = dict(budget.per_name), dict(budget.baseline or ())
    counted = per_name_rows([r for r in rows if not (budget.ignore_eager and r.eager)])
    found: list[Violation] = []
    for row in counted:
        limits: list[tuple[int | None, Limit]] = [
            (per_name.get(row.name), "per_name") if row.name in per_name else (budget.max_per_function, "per_function"),
            (baseline.get(row.name), "baseline"),
        ]
        if budget.baseline is not None and row.name not in baseline and limits[0][0] is None:
            limits.append((NEW_FUNCTION_BUDGET, "new"))
        over: list[tuple[int, Limit]] = [(n, kind) for n, kind in limits if n is not None and row.modules > n]
        if over:
            limit, kind = min(over, key=lambda o: o[0])  # a tie: the first named (the option, then the baseline)
            found.append(Violation(row.name, row.modules, limit, kind))
    total = sum(r.modules for r in counted)
    if budget.max_total is not None and total > budget.max_total:
        found.append(Violation(None, total, budget.max_total, "total"))
    return found


def check_budget_names(budget: Budget, functions: Iterable[str]) -> None:
    """Raise NoMatchError (`did you mean jit_train_step?`) for the first per-name budget naming none of
    `functions` (HloModule names): a misspelt name would budget nothing and pass the gate. The one rule
    of `count-recompiles --max` and the pytest plugin's `max_compiles` marker."""
    names = set(functions)
    for name, _ in budget.per_name:
        if name not in names:
            raise no_match("per_name", name, list(names))


def per_name_rows(rows: list[FunctionCompiles]) -> list[FunctionCompiles]:
    """One row per HloModule name (a user's jit_matmul and eager ones are two rows of one name), with
    the compiles of both: budgets count compiles per name."""
    merged: dict[str, FunctionCompiles] = {}
    for row in rows:
        if row.name in merged:
            seen = merged[row.name]
            row = FunctionCompiles(row.name, seen.modules + row.modules, seen.module_ids + row.module_ids, False)
        merged[row.name] = row
    return list(merged.values())


def baseline_counts(rows: list[FunctionCompiles]) -> dict[str, dict[str, int]]:
    """The document `--update-baseline` writes: compile counts per function."""
    return {"functions": {r.name: r.modules for r in per_name_rows(rows)}}
