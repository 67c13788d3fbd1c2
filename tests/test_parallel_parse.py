"""Large texts are parsed in worker processes; the model and the errors must be those of one process."""

from __future__ import annotations

import pytest
from conftest import DUMPS, corpus_files, model_summary

from xlainspect import HloParseError, settings
from xlainspect.hlo import parser
from xlainspect.workers import OWNED


@pytest.fixture
def two_workers(monkeypatch):
    """The runner the dump layer lends parse_hlo, with two processes."""
    monkeypatch.setattr(settings, "_parse_workers", 2)
    return OWNED


def _texts():
    fixture = DUMPS / "clean_run" / "module_0000.jit_train_step.cpu_after_optimizations.txt"
    texts = [fixture.read_text()]
    texts += [p.read_text() for p in corpus_files("models/openxla__xla__gemma3_1b_flax_call.hlo")]
    return texts


@pytest.mark.parametrize("index", range(len(_texts())))
def test_parts_give_the_serial_model(index, monkeypatch, two_workers):
    text = _texts()[index]
    serial = parser.parse_hlo(text, "x.hlo")
    monkeypatch.setattr(parser, "PARALLEL_MIN_BYTES", 0)
    assert len(parser._split_at_computations(text, 2)) == 2
    assert model_summary(parser.parse_hlo(text, "x.hlo", runner=two_workers)) == model_summary(serial)


def test_an_error_in_a_later_part_is_reported_as_serially(monkeypatch, two_workers):
    text = (DUMPS / "clean_run" / "module_0000.jit_train_step.cpu_after_optimizations.txt").read_text()
    bad = text[: len(text) * 3 // 4] + text[len(text) * 3 // 4 :].replace(" = f32[", " = f33[", 1)
    with pytest.raises(HloParseError) as serial:
        parser.parse_hlo(bad, "bad.hlo")
    monkeypatch.setattr(parser, "PARALLEL_MIN_BYTES", 0)
    with pytest.raises(HloParseError) as parallel:
        parser.parse_hlo(bad, "bad.hlo", runner=two_workers)
    assert (parallel.value.line, parallel.value.column, parallel.value.message) == (
        serial.value.line,
        serial.value.column,
        serial.value.message,
    )
    assert "unknown element type 'f33'" in serial.value.message


def test_split_points_follow_computation_ends():
    text = (
        "HloModule m\n\na {\n  x = f32[] parameter(0)\n}\n\nENTRY e {\n  y = f32[] parameter(0)\n}\n"  # inline snippet
    )
    parts = parser._split_at_computations(text, 2)
    assert [text[a:b].count("{") for a, b in parts] == [1, 1]
    assert text[parts[0][1] - 2 : parts[0][1]] == "}\n"


def test_a_library_parse_leaves_the_process_as_it_found_it(monkeypatch):
    """No worker processes and no garbage-collector changes unless the caller opts in (the CLI does)."""
    import gc

    def no_workers(*args):
        raise AssertionError("a library call must not fork")

    text = _texts()[0]
    monkeypatch.setattr(settings, "_parse_workers", 4)  # what the CLI sets: a library parse must not read it
    monkeypatch.setattr(settings, "_pause_gc", True)
    monkeypatch.setattr(parser, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parser, "_run_in_workers", no_workers)
    frozen, enabled = gc.get_freeze_count(), gc.isenabled()
    disabled_during = []
    monkeypatch.setattr(parser, "_assemble", lambda items, path, text: disabled_during.append(not gc.isenabled()) or [])
    parser.parse_hlo(text, "x.hlo")
    assert (gc.get_freeze_count(), gc.isenabled(), disabled_during) == (frozen, enabled, [False])
