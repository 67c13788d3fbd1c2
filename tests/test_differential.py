"""The speed layer (xlainspect.hlo.fast) against the definition (grammars/hlo.lark alone): equal
models on every fixture file, every corpus module and every syntax example of the test suite, the
same errors on bad text, and the speed layer reading nearly every computation of real dumps itself
(a speed layer that quietly hands everything to the grammar would pass the rest and be slow)."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import corpus_files, hlo_fixture_files, model_summary
from test_syntax_forms import SYNTAX_EXAMPLES

from xlainspect import HloParseError, parse_hlo
from xlainspect.dump.files import read_text
from xlainspect.hlo import fastpath, parser

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


def _grammar(text: str, start: str):
    from xlainspect.hlo import lalr

    try:
        return lalr.run(text, start, None)
    except HloParseError as error:
        return ("error", error.column, error.message)


def _shape_texts(text: str):
    """The tuple shapes of instruction results and the entry layouts of module headers in `text`."""
    reader = parser._line_reader()
    for line in text.splitlines():
        if line.startswith("HloModule") and "entry_computation_layout={" in line:
            header = reader.read(line, 0, len(line), 1)
            yield "program_shape", header[0][2]["entry_computation_layout"][1:-1]
        elif (match := reader._instruction.match(line)) and (match.group(3) or "").startswith("("):
            yield "shape_text", match.group(3)


_ODD_SHAPES = [
    ("shape_text", "()"),
    ("shape_text", "( f32[2]{0} , /*index=1*/ (s32[], ()) )"),
    ("shape_text", "(f32[2], )"),  # a trailing comma: the grammar's error
    ("shape_text", "(f32[2], f33[3])"),  # an unknown element type inside a tuple
    ("shape_text", "(b(f32[2]), s32[])"),  # a buffer shape: the grammar's alone
    ("program_shape", "(f32[8]{0}, (s32[], u8[4]{0}))->f32[8]{0}"),
    ("program_shape", "() -> ()"),
    ("program_shape", "f32[8]{0} -> f32[8]{0}"),  # parameters are always a tuple
    ("program_shape", "(f32[8]{0}) -> f32[8]{0} extra"),
]


def test_shapes_and_headers_read_as_the_grammar_reads_them():
    """Tuple shapes, entry layouts and header lines of every fixture and corpus module, and odd forms:
    the speed layer's answer is the grammar's, or None where the grammar alone decides."""
    shapes = parser._shape_reader()
    cases, answered = list(_ODD_SHAPES), 0
    for path in [*hlo_fixture_files(), *_CORPUS]:
        text = read_text(path)
        cases += _shape_texts(text)
        for line in (line for line in text.splitlines() if line.startswith("HloModule")):
            fast = parser._line_reader().read(line, 0, len(line), 1)
            assert fast is None or fast == [_grammar(line, "header_line")], line
    for start, text in cases:
        fast = shapes.shape(text) if start == "shape_text" else shapes.program_shape(text)
        expected = _grammar(text, start)
        if fast is not None:
            answered += 1
            assert fast == expected, text
        else:
            assert "b(" in text or expected[0] == "error", text
    assert answered > 200


def test_plain_text_is_read_without_lark(tmp_path):
    """Once a run has saved the grammar's terminals, a dump of plain text parses, headers, shapes and
    entry layouts included, without importing Lark; with the cache off the saved terminals are read."""
    import subprocess
    import sys

    from conftest import DUMPS, REPO

    script = (
        "import sys; import xlainspect; from xlainspect import settings\n"
        "settings.set_cache_enabled(sys.argv[2] == 'on')\n"
        "report = xlainspect.recompiles_report(sys.argv[1])\n"
        "modules = [m for f in xlainspect.load_dump(sys.argv[1]).modules for m in [f.module()]]\n"
        "print(len(report.functions), len(modules), 'lark' in sys.modules)"
    )
    env = {"XLAINSPECT_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(REPO)}
    runs = [
        subprocess.run(
            [sys.executable, "-c", script, str(DUMPS / "ragged_batch"), cache],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stdout.split()
        for cache in ("on", "off", "on")
    ]
    assert runs == [["2", "4", "True"], ["2", "4", "False"], ["2", "4", "False"]]


_FRAMES = (
    'HloModule m\n\nFileNames\n1 "a.py"\n\nFunctionNames\n1 "f"\n\nFileLocations\n'
    "1 {file_name_id=1 function_name_id=1 line=3}\n\nStackFrames\n{frame}\n\n"
    "ENTRY %e (a: f32[8]) -> f32[8] {\n  ROOT %a = f32[8]{0} parameter(0), metadata={stack_frame_id=1}\n}\n"
)


@pytest.mark.parametrize(
    "frame",
    [
        "1 {file_location_id=1 parent_frame_id=0}",
        "1 {file_location_id=1\tparent_frame_id=0}  ",
        "1 {}",
        "1 {file_location_id=1 parent_frame_id=-1}",  # a negative field: no frame entry
        "1 {file_location_id=1parent_frame_id=0}",  # fields run together
        '1 {file_location_id="1" parent_frame_id=0}',
        "1 {file_location_id=1 parent_frame_id=0} /* a comment */",
        "1 {file_location_id=1, parent_frame_id=0}",
    ],
)
def test_stack_frame_table_entries_read_as_the_grammar_reads_them(frame):
    _assert_equal(_FRAMES.replace("{frame}", frame))


def _frames(frames) -> dict:
    return {i: (f.file, f.function, f.line, f.column, f.parent) for i, f in frames.items()}


def _assert_text_readers_agree(text: str) -> None:
    """The one-pass readers of `xlainspect.hlo.fastpath` (opcodes, the entry's opcodes, calls and
    custom-call targets, op_names, stack-frame ids and tables) answer as the grammar's model does on every text of one module that `scan` reads (XLA
    prints no comments and no instructions written as operands): what count-recompiles and the origin
    of a compile read from a text without parsing it."""
    if fastpath.scan(text) is None:
        return
    (module,) = parse_hlo(text, "x.hlo", fast=False)
    instructions = list(module.instructions())
    assert Counter(fastpath.opcodes(text)) == Counter(i.opcode for i in instructions)
    assert fastpath.entry_opcodes(text) == (
        [i.opcode for i in module.entry.instructions] if "\nENTRY " in text else None
    )
    assert fastpath.has_call(text) == any(i.opcode == "call" for i in instructions)
    targets = {t for i in instructions if (t := i.custom_call_target) is not None}
    assert all(fastpath.calls_custom_call_target(text, t) for t in targets if t.isprintable() and '"' not in t)
    assert not fastpath.calls_custom_call_target(text, "no-such-target")
    assert fastpath.op_names(text) == [i.metadata.op_name for i in instructions if i.metadata.op_name is not None]
    ids = [i.metadata.stack_frame_id for i in instructions if i.metadata.stack_frame_id is not None]
    assert list(fastpath.stack_frame_ids(text)) == ids
    assert _frames(fastpath.stack_frames(text)) == _frames(module.stack_frames)


@pytest.mark.parametrize("path", hlo_fixture_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_text_readers_on_fixture_files(path):
    _assert_text_readers_agree(read_text(path))


@pytest.mark.parametrize("path", _CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_text_readers_on_corpus_modules(path):
    _assert_text_readers_agree(read_text(path))


def test_text_readers_find_what_real_dumps_hold():
    """The fixtures give the readers something to agree on: frames, op_names and frame ids."""
    texts = [read_text(p) for p in hlo_fixture_files()]
    assert sum(fastpath.scan(t) is None for t in texts) < len(texts) / 20
    assert sum(bool(fastpath.stack_frames(t)) for t in texts) > 10
    assert sum(len(fastpath.op_names(t)) for t in texts) > 1000
    assert sum(1 for t in texts for _ in fastpath.stack_frame_ids(t)) > 1000
