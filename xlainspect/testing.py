"""What a test compiled: the `xla_compiles` fixture and the `max_compiles` marker of the pytest plugin
(`xlainspect.pytest_plugin`), which loads this module only in a run with `--xla-dump`."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from xlainspect.analysis.recompiles import (
    Budget,
    FunctionCompiles,
    budget_violations,
    check_budget_names,
    count_recompiles,
)
from xlainspect.dump.directory import Dump, load_dump
from xlainspect.errors import DumpError
from xlainspect.report.causes import explain_recompiles, violation_text


class XlaCompiles:
    """The modules XLA compiled since this object was made (during one test), read from the dump folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._before = _stamps(folder)

    def dump(self) -> Dump:
        """An `xlainspect.dump.Dump` holding only this test's modules (empty before the first compile)."""
        return self._this_test(self._session())

    def _this_test(self, session: Dump) -> Dump:
        """The modules of `session` whose files are new or rewritten since the test started."""
        fresh = {path for path, stamp in _stamps(self.folder).items() if self._before.get(path) != stamp}
        return Dump(session.root, [m for m in session.modules if any(str(f.path) in fresh for f in m.files)])

    def _session(self) -> Dump:
        """Every module of the dump folder: what this process (this worker) compiled so far."""
        try:
            return load_dump(self.folder)
        except DumpError:  # no module files yet
            return Dump(self.folder, [])

    def functions(self) -> dict[str, int]:
        """Compiles per function (HloModule name, e.g. `jit_train_step`), in first-compile order."""
        return {name: len(modules) for name, modules in self.dump().functions().items()}

    def count(self, function: str) -> int:
        """Compiles of `function`; `train_step` also finds jax's `jit_train_step`."""
        counts = self.functions()
        return counts.get(function, counts.get(f"jit_{function}", 0))

    def recompiles(self) -> list[FunctionCompiles]:
        """count-recompiles' rows (`FunctionCompiles`: count, module ids, causes) for this test."""
        return count_recompiles(self.dump()).functions

    def explain(self) -> str:
        """Every function compiled more than once during the test, with its causes and a suggestion."""
        return explain_recompiles(self.recompiles())

    def over_budget(self, total: int | None = None, **per_function: int) -> list[str]:
        """count-recompiles' gate messages for these budgets; empty when within them (a function the test
        did not compile is within any budget). A name no module of the session has is count-recompiles'
        `--max` error (NoMatchError, `did you mean jit_train_step?`): the same rule, checked against every
        function compiled so far, since jax compiles a function once per process and a test that calls it
        again compiles nothing."""
        budget = Budget(per_name=tuple(per_function.items()), max_total=total)
        session = self._session()
        check_budget_names(budget, session.functions())
        violations = budget_violations(count_recompiles(self._this_test(session)).functions, budget)
        return [violation_text(v, "max_compiles") for v in violations]


def _stamps(folder: Path) -> dict[str, tuple[int, int]]:
    """(mtime, size) of every file under the dump folder: a module's files appear or change when it compiles."""
    stamps: dict[str, tuple[int, int]] = {}
    for directory, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(directory, name)
            with contextlib.suppress(FileNotFoundError):  # a file replaced while we walk
                stat = os.stat(path)
                stamps[path] = (stat.st_mtime_ns, stat.st_size)
    return stamps
