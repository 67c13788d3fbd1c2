"""The speed layer (xlainspect.hlo.fast) against the definition (grammars/hlo.lark alone): equal
models on every fixture file, every corpus module and every syntax example of the test suite, the
same errors on bad text, and the speed layer reading nearly every computation of real dumps itself
(a speed layer that quietly hands everything to the grammar would pass the rest and be slow)."""

from __future__ import annotations

import pytest

from tests.conftest import corpus_files, hlo_fixture_files, model_summary
from tests.test_syntax_forms import SYNTAX_EXAMPLES
from xlainspect import HloParseError, parse_hlo
from xlainspect.dump.files import read_text
from xlainspect.hlo import parser

_CORPUS = corpus_files("models/*") + corpus_files("xla_parser_tests_20*/valid/*.hlo")


def _outcome(text: str, fast: bool):
    try:
        return model_summary(parse_hlo(text, "x.hlo", fast=fast))
    except HloParseError as error:
        return ("error", error.line, error.column, error.message)


def _assert_equal(text: str) -> None:
    definition = _outcome(text, fast=False)
    assert _outcome(text, fast=True) == definition


@pytest.mark.parametrize("path", hlo_fixture_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_file(path):
    _assert_equal(read_text(path))


@pytest.mark.parametrize("path", _CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_module(path):
    _assert_equal(read_text(path))


@pytest.mark.parametrize("text", SYNTAX_EXAMPLES, ids=range(len(SYNTAX_EXAMPLES)))
def test_syntax_example(text):
    _assert_equal(text)


_LINE = '  %add.3 = f32[8]{0} add(f32[8]{0} %a, %b#1), metadata={op_name="x"}\n'
_BROKEN = [
    _LINE.replace("add(", "add(("),  # unbalanced operand list
    _LINE.replace("f32[8]{0} add", "f33[8]{0} add"),  # unknown element type
    _LINE.replace("{0} add", "{0,1} add"),  # layout of the wrong rank
    _LINE.replace('"x"}', '"x"'),  # metadata never closed
    _LINE.replace("%b#1", "%b#"),  # tuple index without a number
    _LINE.replace(" = ", " "),  # no `=`
]


@pytest.mark.parametrize("line", _BROKEN, ids=range(len(_BROKEN)))
def test_same_error_from_both(line):
    text = (
        "HloModule m\n\nENTRY %e (a: f32[8], b: (f32[], f32[8])) -> f32[8] {\n  %a = f32[8]{0} parameter(0)\n"
        + line
        + "}\n"
    )
    outcome = _outcome(text, fast=True)
    assert outcome[0] == "error"
    assert outcome == _outcome(text, fast=False)


def test_speed_layer_reads_real_dumps_itself():
    """Every computation of every fixture dump is read by the speed layer, not handed back."""
    reader = parser._line_reader()
    handed_back = []
    for path in hlo_fixture_files():
        text = read_text(path)
        line = 1
        for start, end in parser._computation_spans(text):
            if reader.read(text, start, end, line) is None:
                handed_back.append(f"{path.name}:{line}")
            line += text.count("\n", start, end)
    assert handed_back == []
