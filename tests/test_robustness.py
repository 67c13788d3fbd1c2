"""Property test: damaged real dump files never crash xlainspect.

Real fixture files are damaged the way crashed jobs, copy errors and terminal pastes damage them
(truncated at any offset, lines deleted or duplicated, bytes flipped, non-UTF-8 bytes inserted,
two modules spliced together). The library may only raise `HloParseError` (parse_hlo) or
`XlaInspectError` (reading files); the CLI may only exit 0 or 2 and never print a traceback.

About 320 cases run by default (derandomized, so CI is reproducible); set XLAINSPECT_FUZZ_EXAMPLES
to run more per test, e.g. `XLAINSPECT_FUZZ_EXAMPLES=5000 pytest tests/test_robustness.py`.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import DUMPS, REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from xlainspect import get_chip, module_cost, parse_hlo
from xlainspect.cli.app import app
from xlainspect.dump.files import read_text
from xlainspect.errors import HloParseError, XlaInspectError

EXTRA = int(os.environ.get("XLAINSPECT_FUZZ_EXAMPLES", "0"))

#: Small real dumps of different shapes: CPU long text, short dialect, TPU tiled layouts, collectives.
SEEDS = [
    DUMPS / "clean_run" / "module_0000.jit_train_step.cpu_after_optimizations.txt",
    DUMPS / "short_dialect" / "module_0000.jit_block.cpu_after_optimizations.txt",
    DUMPS / "tpu_v5e" / "module_0219.jit_dots.cl_933746096.after_optimizations.txt",
    DUMPS / "collectives_cpu" / "module_0002.jit_ring_body.cpu_after_optimizations.txt",
    DUMPS / "ragged_batch" / "module_0000.jit_train_step.before_optimizations.txt",
]
SEED_BYTES = [path.read_bytes() for path in SEEDS]

NOT_UTF8 = [b"\xff", b"\xc3", b"\xe2\x82", b"\x80\x80", b"\xed\xa0\x80", b"\x00"]


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


@st.composite
def damaged(draw) -> bytes:
    """One real file with one to three kinds of damage applied in sequence."""
    data = draw(st.sampled_from(SEED_BYTES))
    for _ in range(draw(st.integers(1, 3))):
        data = draw(st.sampled_from(DAMAGE))(draw, data)
    return data


def _truncate(draw, data: bytes) -> bytes:
    return data[: draw(st.integers(0, len(data)))]


def _delete_lines(draw, data: bytes) -> bytes:
    lines = _lines(data)
    if not lines:
        return data
    start = draw(st.integers(0, len(lines) - 1))
    return b"".join(lines[:start] + lines[start + draw(st.integers(1, 3)) :])


def _duplicate_line(draw, data: bytes) -> bytes:
    lines = _lines(data)
    if not lines:
        return data
    at = draw(st.integers(0, len(lines) - 1))
    return b"".join(lines[: at + 1] + [lines[at]] + lines[at + 1 :])


def _flip_bytes(draw, data: bytes) -> bytes:
    if not data:
        return data
    mutable = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        mutable[draw(st.integers(0, len(data) - 1))] ^= 1 << draw(st.integers(0, 7))
    return bytes(mutable)


def _insert_not_utf8(draw, data: bytes) -> bytes:
    at = draw(st.integers(0, len(data)))
    return data[:at] + draw(st.sampled_from(NOT_UTF8)) + data[at:]


def _splice(draw, data: bytes) -> bytes:
    """The head of this file glued to the tail of another (two processes writing one file)."""
    other = draw(st.sampled_from(SEED_BYTES))
    return data[: draw(st.integers(0, len(data)))] + other[draw(st.integers(0, len(other))) :]


DAMAGE = [_truncate, _delete_lines, _duplicate_line, _flip_bytes, _insert_not_utf8, _splice]


def _settings(examples: int):
    return settings(
        max_examples=max(examples, EXTRA),
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@pytest.fixture(scope="module")
def work_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@_settings(200)
@given(data=damaged())
def test_library_raises_only_xlainspect_errors(work_dir, data):
    path = work_dir / "module_0000.jit_f.cpu_after_optimizations.txt"
    path.write_bytes(data)
    try:
        text = read_text(path)
    except XlaInspectError as error:
        assert str(path) in str(error)  # the message names the file
        return
    try:
        modules = parse_hlo(text, str(path))
    except HloParseError as error:
        assert error.path == str(path) and error.line >= 1 and error.column >= 1
        assert error.render().startswith(f"{path}:{error.line}:{error.column}: ")
        return
    assert all(module.computations for module in modules)
    for module in modules:  # what parses, the cost analysis counts, or it names the place
        try:
            module_cost(module, get_chip("h100"))
        except HloParseError as error:
            assert error.path == str(path) and error.line >= 1


@_settings(120)
@given(data=damaged())
def test_cli_parse_exits_0_or_2_without_traceback(work_dir, data):
    path = work_dir / "module_0000.jit_f.before_optimizations.txt"
    path.write_bytes(data)
    result = CliRunner().invoke(app, ["parse", str(path), "--format", "json"])
    assert result.exit_code in (0, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        assert str(path) in result.output  # the one error names the file


@pytest.mark.parametrize("cut", [0.05, 0.37, 0.999])
def test_cli_subprocess_truncated_file_never_prints_a_traceback(tmp_path, cut):
    """A few end-to-end runs in a real interpreter (the in-process runner hides import-time crashes)."""
    data = SEED_BYTES[0]
    path = tmp_path / SEEDS[0].name
    path.write_bytes(data[: int(len(data) * cut)])
    result = subprocess.run(
        [sys.executable, "-m", "xlainspect", "parse", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stderr.startswith(f"{path}:")
