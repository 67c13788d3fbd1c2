"""Shared paths: committed fixtures, and the public corpus beside the repository when present."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
DUMPS = FIXTURES / "dumps"
CORPUS = Path(os.environ.get("XLAINSPECT_CORPUS", REPO.parent / "shared" / "corpus"))

# The parsed-model cache (xlainspect.dump.model_cache) of a test run goes to a fresh directory, never ~/.cache.
os.environ["XLAINSPECT_CACHE_DIR"] = tempfile.mkdtemp(prefix="xlainspect-test-cache-")


def corpus_files(pattern: str) -> list[Path]:
    """Corpus files matching `pattern`; [] when ../shared/corpus is absent (tests then skip)."""
    return sorted(CORPUS.glob(pattern)) if CORPUS.is_dir() else []


def hlo_fixture_files() -> list[Path]:
    """Every committed HLO text file under fixtures/dumps (not the buffer-assignment side files)."""
    side = (
        "buffer-assignment",
        "live-range",
        "memory-usage-report",
        "basic_compiler_metadata",
        "execution_options",
        "target_arguments",
        "transfer_stats",
        "hlo_module_config",
        "tpu_comp_env",
        "thunk_",  # GPU thunk_sequence, thunk_metadata: the executable's thunks, not HLO text
    )
    return sorted(p for p in DUMPS.rglob("module_*.txt") if not any(s in p.name for s in side))


def model_summary(modules, lines: bool = True) -> list:
    """Every field of a parsed model as plain values: models compare by identity, this by content.
    `lines=False` leaves out the line numbers (text printed from a model has its own)."""
    return [
        (
            m.name,
            m.attributes,
            repr(m.stack_frames),
            m.line if lines else 0,
            m.has_header,
            m.entry_computation_layout,
            [
                (
                    c.name,
                    c.is_entry,
                    c.parameter_shapes,
                    c.result_shape,
                    c.attributes,
                    c.line if lines else 0,
                    [
                        (
                            i.name,
                            i.opcode,
                            i.shape,
                            i.operands,
                            i.attributes,
                            i.is_root,
                            i.line if lines else 0,
                            i.operand_shape_indices,
                        )
                        for i in c.instructions
                    ],
                )
                for c in m.computations
            ],
        )
        for m in modules
    ]


requires_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus not present")

# `pytester` runs the pytest plugin's tests (tests/test_pytest_plugin.py) in fresh pytest processes.
pytest_plugins = ["pytester"]


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/ from today's output")


@pytest.fixture(autouse=True)
def _fresh_consoles():
    """Rich reads the terminal width once per console: each test's CLI output gets consoles made for it
    (its COLUMNS), not whatever width an earlier test in this worker left."""
    from xlainspect.cli.render import stderr_console, stdout_console

    stdout_console.cache_clear()
    stderr_console.cache_clear()
