"""The public HLO corpus in ../shared/corpus (read in place; skipped when absent)."""

from __future__ import annotations

import pytest
from conftest import corpus_files, requires_corpus

from xlainspect import HloParseError, parse_hlo

pytestmark = requires_corpus

#: XLA parser tests the corpus files as valid/ but whose C++ expects a failure (see its README),
#: plus the 2019 sparse-array syntax that XLA has since removed and that we deliberately reject.
EXPECTED_FAILURES = {
    "HloParserTest.WrongShape",
    "HloParserTest.InvalidDimLabels",
}
SPARSE_2019 = {"0057_L845_no_test.hlo", "0058_L856_no_test.hlo", "0059_L867_no_test.hlo", "0060_L878_no_test.hlo"}


def _id(path):
    return f"{path.parts[-3]}/{path.name}"


@pytest.mark.parametrize("path", corpus_files("xla_parser_tests_*/valid/*.hlo") + corpus_files("models/*"), ids=_id)
def test_valid_corpus_module_parses(path):
    if any(name in path.name for name in EXPECTED_FAILURES) or path.name in SPARSE_2019:
        with pytest.raises(HloParseError):
            parse_hlo(path.read_text(encoding="utf-8"), str(path))
        return
    modules = parse_hlo(path.read_text(encoding="utf-8"), str(path))
    assert modules and all(m.computations for m in modules)


@pytest.mark.parametrize("path", corpus_files("xla_parser_tests_*/invalid/*.hlo"), ids=_id)
def test_invalid_corpus_module_never_crashes(path):
    try:
        parse_hlo(path.read_text(encoding="utf-8"), str(path))
    except HloParseError as error:
        assert error.line >= 1 and error.column >= 1


def test_corpus_model_facts():
    (llama,) = corpus_files("models/openxla__xla__hlo_llama31_8b_bf16_1x8.hlo")
    (module,) = parse_hlo(llama.read_text(), str(llama))
    opcodes = [i.opcode for i in module.instructions()]
    assert opcodes.count("all-reduce") == 1197 and opcodes.count("all-gather") == 450
    assert module.entry.name == "main.37670_spmd"
    (layouts,) = corpus_files("models/openxla__xla__layouts_and_names.hlo")
    assert len(parse_hlo(layouts.read_text())) == 3
