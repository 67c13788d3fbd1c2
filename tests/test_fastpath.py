"""The line-level fast path answers exactly as the grammar, wherever it answers at all."""

from __future__ import annotations

from collections import Counter

from conftest import CORPUS, DUMPS, JAX011, hlo_fixture_files
from test_syntax_forms import (
    ELEMENT_TYPES,
    NESTED_OPERANDS,
    OPCODE_NAMED_OPERANDS,
    ORIGINS,
    SYNTAX_EXAMPLES,
)

from xlainspect import HloParseError, parse_hlo
from xlainspect.analysis.ops import line_histogram
from xlainspect.dump.files import read_text
from xlainspect.hlo.fastpath import canonical_names, program_lines, scan
from xlainspect.hlo.parser import decode_shape


def _files():
    corpus = sorted(CORPUS.rglob("*.hlo")) + sorted(CORPUS.rglob("*.txt")) if CORPUS.is_dir() else []
    return hlo_fixture_files() + [p for p in corpus if "/invalid/" not in str(p)]


def _grammar_view(text):
    modules = parse_hlo(text)
    return [
        (c.name, i.name, i.opcode, i.shape, i.is_root, i.line, i.called_computations)
        for module in modules
        for c in module.computations
        for i in c.instructions
    ]


def _fast_view(lines):
    return [(f.computation, f.name, f.opcode, decode_shape(f.shape), f.is_root, f.line, f.called) for f in lines]


def test_fast_path_equals_the_grammar_on_every_fixture_and_corpus_module():
    answered = 0
    for path in _files():
        text = read_text(path)
        lines = scan(text)
        try:
            grammar = _grammar_view(text)
        except HloParseError:
            assert lines is None, path  # never an answer for text the grammar rejects
            continue
        if lines is None:
            continue
        answered += 1
        assert _fast_view(lines) == grammar, path
    assert answered >= len(hlo_fixture_files()) * 0.9  # it answers for (nearly) every real dump file


def test_opcode_counts_of_a_real_module():
    path = DUMPS / "clean_run" / "module_0000.jit_train_step.cpu_after_optimizations.txt"
    text = path.read_text()
    (module,) = parse_hlo(text)
    counts = {row.opcode: row.count for row in line_histogram("m", scan(text))}
    assert counts == Counter(i.opcode for i in module.instructions())
    assert counts["parameter"] == sum(1 for i in module.instructions() if i.opcode == "parameter")


def test_unsure_text_is_left_to_the_grammar():
    # inline snippets (labelled, not dumps): a comment, a continued calls= list, an unclosed computation
    assert scan("HloModule m\nENTRY e {\n  p = f32[] parameter(0) /* note */\n}\n") is None
    assert scan("HloModule m\nENTRY e {\n  p = f32[] call(), calls=%a, %b\n}\n") is None
    assert scan("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n") is None
    (line,) = scan("HloModule m\nENTRY e {\n  ROOT p = f32[2]{0} parameter(0)\n}\n")
    assert (line.computation, line.name, line.opcode, line.shape, line.is_root, line.line) == (
        "e",
        "p",
        "parameter",
        "f32[2]{0}",
        True,
        3,
    )


def test_operands_written_as_instructions_are_left_to_the_grammar():
    """`compare(%indvar, s32[] constant(16))` defines two instructions on one line: never one."""
    assert scan(NESTED_OPERANDS) is None
    lines = scan(OPCODE_NAMED_OPERANDS)  # operands named `constant` and `pad` are plain
    assert lines is not None and _fast_view(lines) == _grammar_view(OPCODE_NAMED_OPERANDS)


def test_fast_path_equals_the_grammar_on_every_syntax_example():
    # left to the grammar: a header over several lines, a buffer-shaped instruction, nested operands
    unsure = [ORIGINS, ELEMENT_TYPES, NESTED_OPERANDS]
    for text in SYNTAX_EXAMPLES:
        lines = scan(text)
        assert (lines is None) == any(text is t for t in unsure)
        assert lines is None or _fast_view(lines) == _grammar_view(text)


def _without_origin(text: str) -> list[tuple]:
    """The grammar's model of `text` less what says where the program came from (metadata, frames)."""
    return [
        (c.name, i.name, i.opcode, i.shape, i.operands, {k: v for k, v in i.attributes.items() if k != "metadata"})
        for module in parse_hlo(text)
        for c in module.computations
        for i in c.instructions
    ]


def test_program_lines_are_the_program_less_its_origin():
    """What hosts compare (`program_lines`) parses to the same model as the text, metadata and stack
    frames aside, on every fixture file (the jax 0.11 ones print stack-frame tables)."""
    compared = with_origin = 0
    for path in hlo_fixture_files((DUMPS, JAX011)):
        text = read_text(path)
        stripped = b"\n".join(program_lines(text.encode())).decode()
        assert "metadata={" not in stripped and "\nStackFrames" not in stripped, path
        assert _without_origin(stripped) == _without_origin(text), path
        assert all(not m.stack_frames for m in parse_hlo(stripped)), path
        compared += 1
        with_origin += "metadata={" in text
    assert compared > 300 and with_origin > 200


def test_canonical_names_compare_names_by_their_place_in_the_module():
    """jit_scan_layers lowered for an H200 and for the CPU (gpu_loop_twins, loop_twins): the lines up to
    16 differ only in XLA's per-module numbers (`%constant.10` vs `%constant.9`); canonical, they are
    equal up to the first real difference. fleet_divergence's hosts 0 and 2 (another program) differ
    where the clip computation is."""
    gpu, cpu = (
        program_lines((DUMPS / scenario / "module_0000.jit_scan_layers.before_optimizations.txt").read_bytes())
        for scenario in ("gpu_loop_twins", "loop_twins")
    )
    assert (gpu[10], cpu[10]) == (b"  %constant.10 = s32[] constant(0)", b"  %constant.9 = s32[] constant(0)")
    canonical_gpu, canonical_cpu = canonical_names(gpu), canonical_names(cpu)
    first = next(n for n, (a, b) in enumerate(zip(canonical_gpu, canonical_cpu), 1) if a != b)
    assert first == 16 and canonical_gpu[10] == canonical_cpu[10] == b"  %3 = s32[] constant(0)"
    usual, odd = (
        canonical_names(
            program_lines(
                (DUMPS / "fleet_divergence" / host / "module_0000.jit_train_step.before_optimizations.txt").read_bytes()
            )
        )
        for host in ("host_0", "host_2")
    )
    assert next(n for n, (a, b) in enumerate(zip(usual, odd), 1) if a != b) == 14
    assert odd[13] == b"%4 (%5: f32[8,1], %6: f32[], %7: f32[]) -> f32[8,1] {"
