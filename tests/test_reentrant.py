"""The parser is reentrant: parses interleaved in threads give the models serial parses give."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest
from conftest import DUMPS, REPO, model_summary

from xlainspect.hlo.parser import parse_hlo

#: Two different real modules (jax 0.10.2 CPU dumps): their attribute values and line numbers differ,
#: so a parse that read the other's text would build another model.
TEXTS = [
    (DUMPS / "clean_run" / "module_0000.jit_train_step.before_optimizations.txt").read_text(),
    (DUMPS / "ragged_batch" / "module_0004.jit_eval_step.cpu_after_optimizations.txt").read_text(),
]


@pytest.fixture
def often_switching_threads():
    """The interpreter switches threads every microsecond, so that parses interleave mid-parse."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


@pytest.mark.parametrize("fast", [False, True], ids=["grammar", "speed-layer"])
def test_parses_in_threads_give_the_serial_models(fast, often_switching_threads):
    serial = [model_summary(parse_hlo(text, f"{k}.hlo", fast=fast)) for k, text in enumerate(TEXTS)]
    found: dict[tuple[int, int], list] = {}
    failures: list[BaseException] = []

    def parse(worker: int, k: int) -> None:
        try:
            for round_ in range(6):
                found[worker, round_] = model_summary(parse_hlo(TEXTS[k], f"{k}.hlo", fast=fast))
        except BaseException as error:  # noqa: BLE001 (reported by the test below)
            failures.append(error)

    threads = [threading.Thread(target=parse, args=(worker, worker % 2)) for worker in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert len(found) == 24
    assert all(summary == serial[worker % 2] for (worker, _), summary in found.items())


def test_an_error_in_one_thread_leaves_the_other_parse_alone(often_switching_threads):
    bad = TEXTS[1].replace(" = f32[", " = f33[", 1)
    results: dict[str, object] = {}

    def good() -> None:
        results["good"] = [model_summary(parse_hlo(TEXTS[0], "0.hlo", fast=False)) for _ in range(4)]

    def failing() -> None:
        for _ in range(8):
            try:
                parse_hlo(bad, "bad.hlo", fast=False)
            except Exception as error:  # noqa: BLE001 (the error is the result)
                results["error"] = (type(error).__name__, error.line, error.message)

    threads = [threading.Thread(target=good), threading.Thread(target=failing)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results["good"] == [model_summary(parse_hlo(TEXTS[0], "0.hlo", fast=False))] * 4
    assert results["error"][0] == "HloParseError" and "unknown element type 'f33'" in results["error"][2]


def test_parsing_imports_neither_the_settings_nor_the_workers():
    """`hlo` is lent its cache and its processes (the import-linter contract says it may not import
    them; this proves no lazy import does either)."""
    script = (
        "import sys; from xlainspect.hlo.parser import parse_hlo, parse_header, decode_shape\n"
        "parse_hlo(open(sys.argv[1]).read(), 'x.hlo'); parse_hlo(open(sys.argv[1]).read(), 'x.hlo', fast=False)\n"
        "parse_header('HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}'); decode_shape('b(f32[2])')\n"
        "print(sorted(m for m in sys.modules if m in ('xlainspect.settings', 'xlainspect.workers', 'xlainspect.cache')))"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            str(DUMPS / "clean_run" / "module_0000.jit_train_step.before_optimizations.txt"),
        ],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO)},
        check=True,
    )
    assert done.stdout.split() == ["[]"]
