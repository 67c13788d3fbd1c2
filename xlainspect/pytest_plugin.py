"""pytest plugin (entry point `pytest11`): gate compiles where Python teams already gate behaviour.

`pytest --xla-dump` (a flag, as `--cov` is: `pytest --xla-dump tests/` runs tests/) dumps into a fresh
temporary folder, `--xla-dump-dir=DIR` (or `--xla-dump=DIR`) into DIR: either adds `--xla_dump_to` to
XLA_FLAGS before the test modules import jax (XLA reads XLA_FLAGS once, when jax starts its backend: a
flag set later is ignored). Under pytest-xdist each worker dumps into its own sub-folder (`DIR/gw0`,
...), since module ids restart at 0 in every process and would collide in one folder.

A test sees the modules compiled while it ran: a file new or rewritten since the test started belongs
to it. The fixture `xla_compiles` counts them per function and explains recompiles with
count-recompiles' own analysis; the marker `max_compiles(jit_f=1, total=3)` fails a test over budget
with that explanation.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from xlainspect.capture import xla_flags_with_dump
from xlainspect.errors import UsageError

if TYPE_CHECKING:
    from xlainspect.testing import XlaCompiles

_FOLDER = pytest.StashKey[Path]()
_WORKER = "PYTEST_XDIST_WORKER"
_NEEDS_OPTION = (
    "needs `pytest --xla-dump` or `--xla-dump-dir=DIR` (XLA_FLAGS must name the dump folder before jax starts)"
)
_FLAG = "--xla-dump"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("xlainspect")
    group.addoption(
        _FLAG,
        nargs="?",
        const="",
        default=None,
        metavar="DIR",
        help="Dump XLA compiles to a fresh temporary folder (--xla-dump=DIR: to DIR) for the xla_compiles "
        "fixture and the max_compiles marker; a flag: `--xla-dump tests/` runs tests/.",
    )
    group.addoption(
        "--xla-dump-dir",
        default=None,
        metavar="DIR",
        help="Dump XLA compiles to DIR (DIR/<worker> under pytest-xdist); implies --xla-dump.",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, args: list[str]) -> None:
    """Set XLA_FLAGS here, the earliest hook: before conftest.py files (which may import jax) load.
    `--xla-dump` written alone becomes `--xla-dump=` in `args` (pytest parses them again after this
    hook, as its docs say a plugin may rewrite them here), so the path after it stays a test path."""
    alone = _flag_alone(args)
    known = early_config.known_args_namespace
    wanted = known.xla_dump_dir if known.xla_dump_dir is not None else "" if alone else known.xla_dump
    if wanted is None:
        return
    folder = Path(wanted) if wanted else Path(tempfile.mkdtemp(prefix="xla-dump-"))
    folder = (folder / os.environ[_WORKER] if _WORKER in os.environ else folder).absolute()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise pytest.UsageError(
            f"--xla-dump-dir: cannot use {wanted!r} as the dump folder ({error.strerror})"
        ) from None
    early_config.stash[_FOLDER] = folder
    problem = _jax_started_first()
    os.environ["XLA_FLAGS"] = xla_flags_with_dump(os.environ.get("XLA_FLAGS", ""), folder)
    if problem:
        early_config.issue_config_time_warning(pytest.PytestConfigWarning(problem), stacklevel=2)


def _flag_alone(args: list[str]) -> bool:
    """Rewrite each `--xla-dump` written without `=DIR` (before a bare `--`) to `--xla-dump=`, the
    temporary folder; True when there was one."""
    end = args.index("--") if "--" in args else len(args)
    found = [i for i in range(end) if args[i] == _FLAG]
    for i in found:
        args[i] = f"{_FLAG}="
    return bool(found)


def _jax_started_first() -> str | None:
    """Why the dump may not happen: jax imported before the flag was set (fatal once its backend started)."""
    if "jax" not in sys.modules:
        return None
    try:
        from jax._src import xla_bridge

        # private, as jax has no public way to ask; a jax without that table: say what is known
        started = bool(getattr(xla_bridge, "_backends", None))
    except ImportError:
        started = False
    if started:
        return (
            "--xla-dump has no effect: jax was imported and started its backend before pytest set XLA_FLAGS "
            "(a plugin or an earlier import ran jax); export XLA_FLAGS=--xla_dump_to=DIR instead"
        )
    return (
        "jax was imported before --xla-dump set XLA_FLAGS; the dump works only while nothing runs jax "
        "before the tests (XLA reads XLA_FLAGS when its backend starts)"
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "max_compiles(NAME=N, ..., total=N): fail the test when a function "
        "(HloModule name, e.g. jit_train_step) or all functions together "
        "compile more often during it; needs --xla-dump",
    )


def pytest_report_header(config: pytest.Config) -> str | None:
    folder = config.stash.get(_FOLDER, None)
    return f"xla dump: {folder}" if folder is not None else None


def _folder(config: pytest.Config, what: str) -> Path:
    folder = config.stash.get(_FOLDER, None)
    if folder is None:
        pytest.fail(f"{what} {_NEEDS_OPTION}", pytrace=False)
    return folder


def _compiles(config: pytest.Config, what: str) -> XlaCompiles:
    """The modules compiled from now on. Imported here, the one place: every pytest run of a machine
    where xlainspect is installed loads this plugin, and only a run with `--xla-dump` reads a dump."""
    from xlainspect.testing import XlaCompiles

    return XlaCompiles(_folder(config, what))


@pytest.fixture
def xla_compiles(request: pytest.FixtureRequest) -> XlaCompiles:
    """The modules compiled during this test: `count(fn)`, `functions()`, `recompiles()`, `explain()`."""
    return _compiles(request.config, "the xla_compiles fixture")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Check a `max_compiles` marker around the test body, so going over budget fails the test itself."""
    marker = item.get_closest_marker("max_compiles")
    if marker is None:
        return (yield)
    if marker.args:
        pytest.fail("max_compiles takes keywords only: max_compiles(jit_train_step=1, total=3)", pytrace=False)
    compiles = _compiles(item.config, "@pytest.mark.max_compiles")
    result = yield
    try:
        violations = compiles.over_budget(**marker.kwargs)
    except UsageError as error:  # a name no function has: count-recompiles' `--max` error, worded for the marker
        pytest.fail(error.worded(lambda _: "max_compiles"), pytrace=False)
    if violations:
        budgets = ", ".join(f"{k}={v}" for k, v in marker.kwargs.items())
        pytest.fail(
            f"max_compiles({budgets}) exceeded:\n"
            + "\n".join(f"  {v}" for v in violations)
            + f"\n\nwhy (count-recompiles):\n{compiles.explain() or '  no function compiled twice'}",
            pytrace=False,
        )
    return result
