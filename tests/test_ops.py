"""Opcode histograms per module and per function."""

from __future__ import annotations

from collections import Counter

from conftest import DUMPS

from xlainspect.analysis.lookup import module_label
from xlainspect.analysis.ops import function_histogram, opcode_histogram
from xlainspect.dump.directory import load_dump, select_modules
from xlainspect.dump.files import read_text


def test_histogram_counts_every_instruction_and_splits_fused():
    (module,) = select_modules(load_dump(DUMPS / "collectives_cpu"), function="jit_ring_body")
    rows = {r.opcode: r for r in opcode_histogram(module)}
    assert sum(r.count for r in rows.values()) == module.instruction_count
    assert (rows["copy"].count, rows["copy"].unfused, rows["copy"].fused) == (2, 2, 0)
    assert rows["fusion"].count == read_text(module.path).count(" fusion(")
    assert rows["multiply"].fused == 1
    assert {r.module for r in rows.values()} == {"module_0002.jit_ring_body"}


def test_function_histogram_folds_variants():
    modules = select_modules(load_dump(DUMPS / "tpu_v5e"), function="jit_layouts")
    assert len(modules) == 12
    rows = {r.opcode: r for r in function_histogram(modules)}
    copies = [Counter(i.opcode for i in m.instructions())["copy"] for m in modules]
    assert (rows["copy"].variants, rows["copy"].total) == (12, sum(copies))
    assert (rows["copy"].min_per_variant, rows["copy"].max_per_variant) == (min(copies), max(copies))
    assert {module_label(m) for m in modules} >= {"module_0000.jit_layouts", "module_0206.jit_layouts"}


def test_line_histogram_equals_the_grammar_histogram_on_every_fixture_and_corpus_file():
    from tests.conftest import corpus_files, hlo_fixture_files
    from xlainspect.analysis.lookup import module_label
    from xlainspect.analysis.ops import line_histogram, opcode_histogram
    from xlainspect.dump.files import read_text
    from xlainspect.hlo.fastpath import scan
    from xlainspect.hlo.parser import parse_hlo

    answered = 0
    for path in hlo_fixture_files() + corpus_files("models/*") + corpus_files("xla_parser_tests_*/valid/*.hlo"):
        text = read_text(path)
        lines = scan(text)
        if lines is None:
            continue
        (module,) = parse_hlo(text, str(path))
        assert line_histogram(module_label(module), lines) == opcode_histogram(module), path
        answered += 1
    assert answered > 250
