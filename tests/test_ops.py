"""Opcode histograms per module and per function."""

from __future__ import annotations

from collections import Counter

from conftest import DUMPS, JAX011

from xlainspect.analysis.lookup import module_label
from xlainspect.analysis.ops import function_histogram, opcode_histogram
from xlainspect.dump.directory import load_dump
from xlainspect.dump.files import read_text
from xlainspect.dump.selection import select_modules


def test_histogram_counts_every_instruction_and_splits_fused(jax_version):
    (module,), _ = select_modules(load_dump(jax_version.dumps / "collectives_cpu"), function="jit_ring_body")
    rows = {r.opcode: r for r in opcode_histogram(module)}
    assert sum(r.count for r in rows.values()) == module.instruction_count
    assert (rows["copy"].count, rows["copy"].unfused, rows["copy"].fused) == (2, 2, 0)
    assert rows["fusion"].count == read_text(module.path).count(" fusion(")
    assert rows["multiply"].fused == 1
    assert {r.module for r in rows.values()} == {"module_0002.jit_ring_body"}


def test_function_histogram_folds_variants():
    modules, _ = select_modules(load_dump(DUMPS / "tpu_v5e"), function="jit_layouts")
    assert len(modules) == 12
    rows = {r.opcode: r for r in function_histogram(modules)}
    copies = [Counter(i.opcode for i in m.instructions())["copy"] for m in modules]
    assert (rows["copy"].variants, rows["copy"].total) == (12, sum(copies))
    assert (rows["copy"].min_per_variant, rows["copy"].max_per_variant) == (min(copies), max(copies))
    assert {module_label(m) for m in modules} >= {"module_0000.jit_layouts", "module_0206.jit_layouts"}


def test_line_histogram_equals_the_grammar_histogram_on_every_fixture_and_corpus_file():
    from conftest import DUMPS, JAX011, corpus_files, hlo_fixture_files

    from xlainspect.analysis.lookup import module_label
    from xlainspect.analysis.ops import line_histogram, opcode_histogram
    from xlainspect.dump.files import read_text
    from xlainspect.hlo.fastpath import scan
    from xlainspect.hlo.parser import parse_hlo

    answered = 0
    for path in (
        hlo_fixture_files((DUMPS, JAX011)) + corpus_files("models/*") + corpus_files("xla_parser_tests_*/valid/*.hlo")
    ):
        text = read_text(path)
        lines = scan(text)
        if lines is None:
            continue
        (module,) = parse_hlo(text, str(path))
        assert line_histogram(module_label(module), lines) == opcode_histogram(module), path
        answered += 1
    assert answered > 500


def test_calls_are_counted_as_inlined():
    """The equinox scenario's make_step (jax 0.11.2) as jax gave it to XLA: `jit(relu)` called twice and `jit(_where)`
    once, as `call`s. Counted as XLA's CallInliner leaves it: no call, relu's constant, broadcast and
    maximum twice, the called computations' parameters gone (the calls' operands replace them)."""
    module = next(m for m in load_dump(JAX011 / "equinox").modules if m.module_id == 38).module("before")
    written = Counter(i.opcode for i in module.instructions())
    rows = {r.opcode: r.count for r in opcode_histogram(module)}
    assert (written["call"], written["maximum"], written["parameter"], written["constant"]) == (3, 1, 39, 42)
    assert ("call" in rows, rows["maximum"], rows["parameter"], rows["constant"]) == (False, 2, 35, 43)
    assert rows["select"] == written["select"] == 3  # _where's select, inlined once
    assert sum(rows.values()) == module.instruction_count - 3 - 4 + 3
    (per_function,) = [r for r in function_histogram([module]) if r.opcode == "maximum"]
    assert per_function.total == 2 and not [r for r in function_histogram([module]) if r.opcode == "call"]


def test_line_histogram_looks_through_calls_as_the_model_does():
    from xlainspect.analysis.ops import line_histogram
    from xlainspect.hlo.fastpath import scan

    module = next(m for m in load_dump(JAX011 / "equinox").modules if m.module_id == 38)
    lines = scan(read_text(module.hlo_file("before").path))
    assert lines is not None
    assert line_histogram(module_label(module.module("before")), lines) == opcode_histogram(module.module("before"))
