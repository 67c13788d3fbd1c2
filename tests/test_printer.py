"""print_hlo: every committed fixture module, every ../shared/corpus module (skipped when absent) and
every syntax example parses, prints and parses again to an equal model; XLA's own parser (jaxlib's,
when jax is installed) reads the printed text of every module whose original text it reads."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections import Counter

import pytest
from conftest import corpus_files, hlo_fixture_files, model_summary
from test_corpus import EXPECTED_FAILURES, SPARSE_2019
from test_syntax_forms import NESTED_OPERANDS, SYNTAX_EXAMPLES

from xlainspect import parse_hlo, print_hlo
from xlainspect.dump.files import read_text
from xlainspect.hlo import print_hlo as hlo_print_hlo
from xlainspect.hlo.attributes import (
    decode_dim_labels,
    decode_int_list,
    decode_integer_literal,
    decode_window,
    print_dim_labels,
    print_int_list,
    print_window,
)

#: The corpus modules our parser reads (test_corpus.py names the ones it rightly rejects).
_CORPUS = [
    p
    for p in corpus_files("models/*") + corpus_files("xla_parser_tests_20*/valid/*.hlo")
    if p.name not in SPARSE_2019 and not any(name in p.name for name in EXPECTED_FAILURES)
]


def _printed(text: str, canonical: bool = False) -> tuple[list, list[str]]:
    """The modules of `text` and each one's printed text, which must parse to the same model."""
    modules = parse_hlo(text, "original.hlo")
    printed = [print_hlo(m) for m in modules]
    again = [m for t in printed for m in parse_hlo(t, "printed.hlo")]
    assert model_summary(again, lines=False) == model_summary(modules, lines=False)
    _assert_attributes_print_back(modules, canonical)
    return modules, printed


#: The integer-list attributes the analyses decode (hlo_instruction.cc prints each as `{1,0}`).
_INT_LISTS = (
    "dimensions",
    "lhs_contracting_dims",
    "rhs_contracting_dims",
    "lhs_batch_dims",
    "rhs_batch_dims",
    "rhs_group_dims",
    "fft_length",
)
_TYPED = [(key, decode_int_list, print_int_list) for key in _INT_LISTS] + [
    ("window", decode_window, print_window),
    ("dim_labels", decode_dim_labels, print_dim_labels),
]


def _assert_attributes_print_back(modules, canonical: bool) -> Counter:
    """Every typed attribute the analyses decode prints back (as XLA's printer does) to a text that decodes
    to the same value; to the very text the grammar read where XLA printed it (`canonical`: the fixtures,
    where hand-written corpus text may order a window's fields otherwise, as XLA's parser allows)."""
    seen: Counter = Counter()
    for module in modules:
        for instruction in module.instructions():
            for key, decode, print_back in _TYPED:
                text = instruction.attributes.get(key)
                if text is not None:
                    value = decode(text)
                    assert decode(print_back(value)) == value, instruction.line
                    assert not canonical or print_back(value) == text, instruction.line
                    seen[key] += 1
            shape = instruction.shape
            if instruction.opcode == "constant" and shape is not None and shape.rank == 0 and shape.dtype[0] in "su":
                literal = instruction.operands[0]
                assert str(decode_integer_literal(literal)) == literal, instruction.line
                seen["integer literal"] += 1
    return seen


def test_typed_attributes_are_met_on_the_fixtures():
    """The print-back check above is not vacuous: the fixture dumps hold every attribute it decodes."""
    seen: Counter = Counter()
    for path in hlo_fixture_files():
        seen += _assert_attributes_print_back(parse_hlo(read_text(path), str(path)), canonical=True)
    assert set(seen) >= {"dimensions", "lhs_contracting_dims", "window", "dim_labels", "integer literal"}


@pytest.mark.parametrize("path", hlo_fixture_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_module_prints_back(path):
    _printed(read_text(path), canonical=True)


@pytest.mark.parametrize("path", _CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_module_prints_back(path):
    _printed(read_text(path))


@pytest.mark.parametrize("text", SYNTAX_EXAMPLES, ids=range(len(SYNTAX_EXAMPLES)))
def test_syntax_example_prints_back(text):
    _printed(text)


def test_printed_text():
    """Short text keeps bare names, long text `%` names and the signature; a nested instruction gets
    its own line, under the name the parser gave it."""
    assert print_hlo is hlo_print_hlo
    (module,), (text,) = _printed(NESTED_OPERANDS)
    assert text.splitlines()[:9] == [
        "HloModule single_all_reduce_dus",
        "",
        "reduction {",
        "  parameter.anon = f32[] parameter(0)",
        "  parameter.anon.1 = f32[] parameter(1)",
        "  ROOT max = f32[] maximum(parameter.anon, parameter.anon.1)",
        "}",
        "",
        "while_condition {",
    ]
    assert "  ROOT result = pred[] compare(indvar, constant.anon), direction=LT" in text
    assert text.endswith(
        "ENTRY test {\n  parameter.anon.2 = f32[32] parameter(0)\n  reshape.anon = f32[8,4] reshape(parameter.anon.2)\n"
        "  constant.anon.1 = f32[] constant(0)\n"
        "  ROOT reduce = f32[8] reduce(reshape.anon, constant.anon.1), dimensions={1}, to_apply=add_f32\n}\n"
    )
    _, (long_text,) = _printed(
        "HloModule m, entry_computation_layout={((f32[2]{0}, s32[]))->f32[2]{0}}\n\n"
        "ENTRY %e (p: (f32[2], s32[])) -> f32[2] {\n  %p = (f32[2]{0}, s32[]) parameter(0)\n"
        '  ROOT %n = f32[2]{0} negate(%p#0), metadata={op_name="n"}\n}\n'
    )
    assert long_text == (
        "HloModule m, entry_computation_layout={((f32[2]{0}, s32[]))->f32[2]{0}}\n\n"
        "ENTRY %e (p: (f32[2], s32[])) -> f32[2] {\n  %p = (f32[2]{0}, s32[]) parameter(0)\n"
        '  ROOT %n = f32[2]{0} negate(%p#0), metadata={op_name="n"}\n}\n'
    )


def test_stack_frame_tables_print_back():
    # the tables as jax >= 0.8.2 prints them, with a file name outside ASCII and a quote in it
    text = (
        'HloModule m\n\nFileNames\n1 "caf\\303\\251.py"\n2 "a\\"b.py"\n\nFunctionNames\n1 "f"\n2 "<module>"\n\n'
        "FileLocations\n1 {file_name_id=1 function_name_id=1 line=8 end_line=8 column=2 end_column=9}\n"
        "2 {file_name_id=2 function_name_id=2 line=3 end_line=3 column=0 end_column=0}\n\n"
        "StackFrames\n1 {file_location_id=2 parent_frame_id=0}\n2 {file_location_id=1 parent_frame_id=1}\n\n"
        'ENTRY e {\n  ROOT p = f32[] parameter(0), metadata={op_name="x" stack_frame_id=2}\n}\n'
    )
    (module,), (printed,) = _printed(text)
    assert module.source_of(module.entry.root) == "café.py:8"
    assert module.stack_frames[1].file == 'a"b.py'
    assert printed.splitlines()[2:5] == ["FileNames", '1 "a\\"b.py"', '2 "caf\\303\\251.py"']


def test_header_less_text_prints_header_less():
    (module,), (text,) = _printed("e {\n  a = f32[] parameter(0)\n  b = f32[] negate(a)\n}\n")
    assert not module.has_header and text == "e {\n  a = f32[] parameter(0)\n  b = f32[] negate(a)\n}\n"


#: jaxlib's parser (the binding jax 0.10.2 ships) in a child process, as tests/test_cost.py runs it:
#: texts as JSON on stdin; per text, null where it parses, else the error's first line. One line a
#: text, so a text that aborts the child costs only that text.
XLA_PARSE = """
import json, sys
from jax._src.lib import hlo
for text in json.load(sys.stdin):
    try:
        hlo.hlo_module_from_text(text)
        print("null", flush=True)
    except Exception as error:
        print(json.dumps(str(error).splitlines()[0]), flush=True)
"""


def _xla_errors(texts: list[str]) -> list[str | None]:
    errors: list[str | None] = []
    while len(errors) < len(texts):
        child = subprocess.run(
            [sys.executable, "-c", XLA_PARSE], input=json.dumps(texts[len(errors) :]), capture_output=True, text=True
        )
        errors += [json.loads(line) for line in child.stdout.splitlines()]
        if len(errors) < len(texts):
            errors.append("aborted")
    return errors


_SAMPLE_BYTES = 64 << 10


def _sampled(paths: list) -> list[str]:
    """The texts of the files under 64 KB (all but 18 fixture files, 70% of their bytes, and 4 corpus
    models): the larger ones print back above, and XLA takes seconds to read them here."""
    return [read_text(p) for p in paths if p.stat().st_size < _SAMPLE_BYTES]


#: Each a test of its own, so that `pytest -n` runs them side by side.
_XLA_READS = {
    "fixtures": lambda: _sampled(hlo_fixture_files()),
    "corpus": lambda: _sampled(_CORPUS),
    "syntax examples": lambda: list(SYNTAX_EXAMPLES),
}


@pytest.mark.parametrize("source", _XLA_READS)
def test_xla_parses_the_printed_text(source):
    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed")
    originals = _XLA_READS[source]()
    if not originals:
        pytest.skip(f"no {source} (../shared/corpus absent)")
    pairs, compact = [], []
    for original in originals:
        modules, printed = _printed(original)
        if len(modules) == 1:  # XLA reads one module a text; header-less text gets a header line
            header = "" if modules[0].has_header else "HloModule m\n\n"
            pairs += [(header + original, header + printed[0])]
            compact.append(any(i.operand_shape_indices for i in modules[0].instructions()))
    errors = _xla_errors([text for pair in pairs for text in pair])
    rejected = [(e, p) for e, p in zip(errors[0::2], errors[1::2], strict=True) if e is None and p is not None]
    assert rejected == []
    if source == "fixtures":
        # XLA reads every fixture, but jaxlib 0.10.2 predates the compact get-tuple-element operands of
        # jax 0.11's (`%call.1#0`, XLA 2026-06)
        unread = [e for e, c in zip(errors[0::2], compact, strict=True) if e is not None and not c]
        assert unread == []
