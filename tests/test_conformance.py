"""Corpus conformance: every module in ../shared/corpus parses to exactly as many instructions as its text
has instruction lines, and every XLA negative test is either rejected with a located HloParseError or
accepted for a reason written down here (skipped when the corpus is absent).

`tests/test_corpus.py` checks that valid files parse at all; this file checks what they parse *to*.
Run `pytest -rA tests/test_conformance.py -s` to see the table of rejected files and their messages.
"""

from __future__ import annotations

import re

import pytest
from conftest import corpus_files, requires_corpus
from test_corpus import EXPECTED_FAILURES, SPARSE_2019

from xlainspect import HloParseError, parse_hlo

pytestmark = requires_corpus

#: `name = ...` or `ROOT name = ...` at the start of a line (long and short dialect).
INSTRUCTION_LINE = re.compile(r"^\s*(ROOT\s+)?%?[\w.\-]+\s*=\s*")
STACK_TABLES = {"FileNames", "FunctionNames", "FileLocations", "StackFrames"}
BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)

#: One line defining several instructions: XLA's parser accepts nested instructions as operands
#: (`add(f32[10] parameter(0), multiply(...))`), each a separate instruction in the module.
#: Value: instructions the parser must build (counted by hand from each file's single ROOT line).
NESTED_INSTRUCTIONS = {
    "xla_parser_tests_2021/0131_L2078_no_test.hlo": 5,  # root add + multiply + 3 parameters
    "xla_parser_tests_2021/0133_L2096_no_test.hlo": 5,
    "xla_parser_tests_2021/0135_L2114_no_test.hlo": 4,
    "xla_parser_tests_2021/0137_L2133_no_test.hlo": 5,
}

#: XLA negative tests that a syntax-level parser accepts, and why each is not a syntax error.
ACCEPTED_INVALID = {
    "LiteralDimensionsMismatch_1": "constant literal nesting vs shape rank: semantic (literal/shape check)",
    "LiteralDimensionsMismatch_2": "literal element count vs dimensions: semantic",
    "LiteralDimensionsMismatch_3": "literal element count vs dimensions: semantic",
    "ConstantF16Overflow": "value out of f16 range: a numeric check, not syntax",
    "ConstantBf16Overflow": "value out of bf16 range: numeric check",
    "ConstantUnsignedUnderflow": "negative literal for an unsigned type: numeric check",
    "ConstantUnsignedOverflow": "literal out of the unsigned range: numeric check",
    "UnexpectedAttribute": "an attribute the opcode does not take: kept raw (newer XLA adds attributes)",
    "MissingAttribute": "an opcode's required attribute absent: per-opcode semantic check",
    "PredecessorUndefined": "operand names an instruction that does not exist: name resolution",
    "PaddingConfigIsNotWindowPad": "pad= with 3 numbers in a window: attribute decoding, the value is kept raw",
    "ComputationShapeDoesNotMatchRootShape": "signature vs ROOT shape: shape check",
    "MultipleEntries": "two ENTRY computations: module structure check",
    "MultipleRoots": "two ROOT instructions: computation structure check",
    "ComputationExists": "duplicate computation name: name resolution",
    "CrossComputationLookup": "operand from another computation: name resolution",
    "NontupleInfeed": "infeed with a non-tuple shape: shape check",
    "CustomCallWrongNumberofOperandConstraints": "operand_layout_constraints count: semantic",
    "CustomCallIncompatibleOperandConstraints": "layout constraint vs operand shape: semantic",
    "CustomCallWithNonexistentVersion": "unknown api_version enum: kept raw (newer XLA adds versions)",
    "CustomCallWithUnspecifiedVersion": "API_VERSION_UNSPECIFIED: rejected by XLA's enum check, not its syntax",
    "ShapeMismatchInOperand": "typed operand shape vs the operand's shape: shape check",
    "CheckPredicatedConditionalRequiresTrueAndFalse": "conditional attribute combination: semantic",
    "AliasingShapeIndexNotNumerical": "input_output_alias value is kept raw text (decoded on demand)",
    "AliasingWrongFormatNoColon": "input_output_alias value is kept raw text; decode_input_output_alias rejects it",
    "AliasingWrongFormatTwoColons": "input_output_alias value is kept raw text; decode_input_output_alias rejects it",
    "AliasingWrongFormatAlphaParam": "input_output_alias value is kept raw text; decode_input_output_alias rejects it",
}


def _id(path):
    return f"{path.parts[-3]}/{path.name}"


def instruction_lines(text: str) -> int:
    """Instruction lines of HLO text: outside /* */ comments and stack-frame tables, and not the
    continuation of an instruction whose attributes go on over several lines (the previous line ends
    with a comma, as in multiple_gemm_fusions.hlo and CheckIndexedConditional*)."""
    count, in_table, continued = 0, False, False
    for line in BLOCK_COMMENT.sub("", text).splitlines():
        stripped = line.strip()
        if stripped in STACK_TABLES:
            in_table = True
        elif in_table:
            in_table = bool(stripped)
        elif not continued and not stripped.startswith("//") and INSTRUCTION_LINE.match(line):
            count += 1
        if stripped and not stripped.startswith("//"):
            continued = stripped.endswith(",")
    return count


def _valid_files():
    return [
        p
        for p in corpus_files("xla_parser_tests_*/valid/*.hlo") + corpus_files("models/*")
        if not any(name in p.name for name in EXPECTED_FAILURES) and p.name not in SPARSE_2019
    ]


@pytest.mark.parametrize("path", _valid_files(), ids=_id)
def test_instruction_count_matches_the_text(path):
    text = path.read_text(encoding="utf-8")
    modules = parse_hlo(text, str(path))
    expected = NESTED_INSTRUCTIONS.get(_id(path), instruction_lines(text))
    assert sum(m.instruction_count for m in modules) == expected


def test_multi_line_instructions_count_once():
    (gemm,) = corpus_files("models/openxla__xla__multiple_gemm_fusions.hlo")
    (module,) = parse_hlo(gemm.read_text(), str(gemm))
    assert module.instruction_count == instruction_lines(gemm.read_text()) == 26
    assert [c.name for c in module.computations] == ["f1", "f2", "f3", "fa", "e"]


@pytest.mark.parametrize("path", corpus_files("xla_parser_tests_*/invalid/*.hlo"), ids=_id)
def test_invalid_is_rejected_with_a_place_or_accepted_for_a_stated_reason(path):
    test_name = path.stem.split("HloParserTest.")[-1]
    try:
        parse_hlo(path.read_text(encoding="utf-8"), str(path))
    except HloParseError as error:
        assert error.path == str(path) and error.line >= 1 and error.column >= 1
        assert error.render().startswith(f"{path}:{error.line}:{error.column}: ")
        assert test_name not in ACCEPTED_INVALID, f"{test_name} is listed as accepted but was rejected"
        return
    assert test_name in ACCEPTED_INVALID, f"{_id(path)} parsed, but XLA expects a failure: say why here"


def test_invalid_summary(capsys):
    """The table a reviewer reads: how many negative tests are rejected, with their messages."""
    rows = []
    for path in corpus_files("xla_parser_tests_*/invalid/*.hlo"):
        try:
            parse_hlo(path.read_text(encoding="utf-8"), str(path))
            rows.append((_id(path), "accepted", ACCEPTED_INVALID.get(path.stem.split("HloParserTest.")[-1], "?")))
        except HloParseError as error:
            rows.append((_id(path), "rejected", f"{error.line}:{error.column}: {error.message}"))
    rejected = sum(1 for _, verdict, _ in rows if verdict == "rejected")
    with capsys.disabled():
        print(f"\nXLA parser negative tests: {rejected} of {len(rows)} rejected")
        for name, verdict, why in rows:
            print(f"  {verdict:8} {name:80} {why}")
    assert len(rows) == 55 and rejected == 8  # 2 unterminated comments, 5 sparse-array (2019), AliasingWrongIndex
