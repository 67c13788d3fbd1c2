"""The grammar and the model it builds, on real dump files and on XLA's own syntax corners."""

from __future__ import annotations

import pytest
from conftest import DUMPS, corpus_files, hlo_fixture_files

from xlainspect import HloParseError, parse_hlo
from xlainspect.dump.files import read_text
from xlainspect.hlo.parser import split_computations


def test_every_fixture_file_parses():
    files = hlo_fixture_files()
    assert len(files) > 200
    for path in files:
        modules = parse_hlo(read_text(path), str(path))
        assert modules and modules[0].computations, path


def test_cpu_after_optimizations_module():
    path = DUMPS / "clean_run" / "module_0000.jit_train_step.cpu_after_optimizations.txt"
    (module,) = parse_hlo(path.read_text(), str(path))
    assert module.name == "jit_train_step"
    assert module.is_scheduled
    params, result = module.entry_computation_layout
    assert [str(p) for p in params] == ["f32[8,1]{1,0}", "f32[1]{0}", "f32[32,8]{1,0}", "f32[32,1]{1,0}"]
    assert str(result) == "(f32[8,1]{1,0}, f32[1]{0}, f32[])"
    assert module.entry.is_entry
    assert module.stack_frames  # long text with metadata carries the StackFrames table
    assert {f.file for f in module.stack_frames.values()} >= {"fixtures/generate.py"}
    opcodes = {i.opcode for i in module.instructions()}
    assert {"parameter", "fusion", "tuple"} <= opcodes
    fusion = next(i for i in module.instructions() if i.name == "reduce_multiply_fusion")
    assert fusion.called_computations == ("fused_computation",)
    assert fusion.metadata.source is None and fusion.metadata.stack_frame_id  # jax 0.10.2: frames only
    file, line = module.source_of(fusion).rsplit(":", 1)
    assert file == "fixtures/generate.py" and int(line) > 0


def test_long_text_instruction_fields():
    text = """HloModule jit_f, is_scheduled=true, entry_computation_layout={(bf16[8,128]{1,0:T(8,128)(2,1)}, f32[128]{0:T(128)})->f32[8,128]{1,0:T(8,128)}}, num_partitions=2

%fused_computation (param_0: bf16[8,128], param_1.1: f32[128]) -> f32[8,128] {
  %param_0 = bf16[8,128]{1,0:T(8,128)(2,1)} parameter(0)
  %convert.1 = f32[8,128]{1,0:T(8,128)} convert(bf16[8,128]{1,0:T(8,128)(2,1)} %param_0)
  %param_1.1 = f32[128]{0:T(128)} parameter(1)
  %broadcast.2 = f32[8,128]{1,0:T(8,128)} broadcast(f32[128]{0:T(128)} %param_1.1), dimensions={1}
  ROOT %add.3 = f32[8,128]{1,0:T(8,128)} add(f32[8,128]{1,0:T(8,128)} %convert.1, f32[8,128]{1,0:T(8,128)} %broadcast.2)
}

%region_0.4 (Arg_0.5: f32[], Arg_1.6: f32[]) -> f32[] {
  %Arg_0.5 = f32[] parameter(0)
  %Arg_1.6 = f32[] parameter(1)
  ROOT %add.7 = f32[] add(f32[] %Arg_0.5, f32[] %Arg_1.6)
}

ENTRY %main.9 (Arg_0.1: bf16[8,128], Arg_1.2: f32[128]) -> f32[8,128] {
  %Arg_0.1 = bf16[8,128]{1,0:T(8,128)(2,1)} parameter(0), sharding={replicated}, metadata={op_name="x"}
  %Arg_1.2 = f32[128]{0:T(128)} parameter(1)
  %add_fusion = f32[8,128]{1,0:T(8,128)} fusion(bf16[8,128]{1,0:T(8,128)(2,1)} %Arg_0.1, f32[128]{0:T(128)} %Arg_1.2), kind=kLoop, calls=%fused_computation, metadata={op_name="jit(f)/jit(main)/add" source_file="/t.py" source_line=3}
  ROOT %all-reduce = f32[8,128]{1,0:T(8,128)} all-reduce(f32[8,128]{1,0:T(8,128)} %add_fusion), channel_id=1, replica_groups=[1,2]<=[2], use_global_device_ids=true, to_apply=%region_0.4
}
"""
    (module,) = parse_hlo(text)
    assert module.num_partitions == 2
    assert [c.name for c in module.computations] == ["fused_computation", "region_0.4", "main.9"]
    fused = module.computations_by_name["fused_computation"]
    assert fused.parameter_shapes[1][0] == "param_1.1"
    assert fused.root.name == "add.3"
    assert fused.root.operands == ("convert.1", "broadcast.2")
    entry = module.entry
    fusion = entry.instructions[2]
    assert fusion.opcode == "fusion" and fusion.attributes["kind"] == "kLoop"
    assert fusion.called_computations == ("fused_computation",)
    assert fusion.op_name == "jit(f)/jit(main)/add"
    assert fusion.metadata.source == "/t.py:3"
    assert fusion.line == 20
    reduce = entry.root
    assert reduce.attributes["replica_groups"] == "[1,2]<=[2]"
    assert reduce.called_computations == ("region_0.4",)
    assert entry.instructions[0].attributes["sharding"] == "{replicated}"
    assert reduce.shape.padded_bytes == 8 * 128 * 4


def test_short_dialect_constants_and_comments():
    text = """/* licence */
// a comment line
HloModule m:

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY e {
  p = f32[4]{0} parameter(0)
  c = f32[4]{0} constant({1, 2, 3, -inf})
  big = f32[100]{0} constant({...})
  t = (f32[4]{0}, /*index=1*/s32[]) tuple(p, c)
  w = f32[4]{0} custom-call(p), custom_call_target="foo", backend_config={"a": {"b": [1, "}"]}}
  ROOT r = f32[] reduce(w, c), dimensions={0}, to_apply=add
}
"""
    (module,) = parse_hlo(text)
    assert module.name == "m"
    instructions = {i.name: i for i in module.instructions()}
    assert instructions["c"].operands == ("{1, 2, 3, -inf}",)
    assert instructions["big"].operands == ("{...}",)
    assert instructions["t"].shape.tuple_shapes[1].dtype == "s32"
    assert instructions["w"].attributes["backend_config"] == '{"a": {"b": [1, "}"]}}'
    assert module.entry.root.name == "r"


def test_headerless_computations_and_several_modules():
    (module,) = parse_hlo(
        "e {\n  a = u4[1024,512]{1,0:E(4)} parameter(0)\n  b = u4[1024,4096]{1,0:E(4)} all-gather(a), dimensions={1}\n}\n"
    )
    assert module.name == "module_e" and not module.has_header
    assert module.entry.root.name == "b"  # no ROOT: the last instruction
    assert module.entry.root.shape.padded_bytes == 1024 * 4096 // 2
    modules = parse_hlo(
        "HloModule a\nENTRY e {\n ROOT p = f32[] parameter(0)\n}\n// -----\nHloModule b\nENTRY e {\n ROOT p = f32[] parameter(0)\n}\n"
    )
    assert [m.name for m in modules] == ["a", "b"]


def test_calls_with_several_computations_and_nested_operands():
    text = 'HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT a = add(f32[2] parameter(1), multiply(f32[2] p, f32[2] p)), calls=%x, %y, metadata={op_name="z"}\n}\n'
    (module,) = parse_hlo(text)
    root = module.entry.root
    assert root.attributes["calls"] == "%x, %y"
    assert root.called_computations == ("x", "y")
    assert [i.opcode for i in module.entry.instructions] == ["parameter", "parameter", "multiply", "add"]
    assert [i.name for i in module.entry.instructions] == ["p", "parameter.anon", "multiply.anon", "a"]
    assert root.operands == ("parameter.anon", "multiply.anon")


@pytest.mark.parametrize(
    ("text", "line", "column", "words"),
    [
        (
            "HloModule m\nENTRY e {\n  p = f32[2]{0} parameter(0)\n  q = f32[2]{0} add(p p)\n}\n",
            4,
            23,
            "unexpected name 'p'",
        ),
        ("HloModule m\nENTRY e {\n  p = f32[2]{0} parameter(0)\n", 3, 29, "ends too early"),
        ("HloModule m\nENTRY e {\n  p = f33[2]{0} parameter(0)\n}\n", 3, 7, "unknown element type 'f33'"),
        ("HloModule m\nENTRY e {\n  p = f32[2,3]{1,1} parameter(0)\n}\n", 3, 16, "not a permutation"),
        ("HloModule m, x={a\nENTRY e {\n}\n", 1, 16, "unbalanced '{'"),
        ("HloModule m\n/* never closed\nENTRY e {\n}\n", 2, 1, "unterminated /* comment"),
    ],
)
def test_errors_name_the_place(text, line, column, words):
    with pytest.raises(HloParseError) as info:
        parse_hlo(text, "bad.hlo")
    error = info.value
    assert (error.path, error.line, error.column) == ("bad.hlo", line, column)
    assert words in error.message
    rendered = error.render().splitlines()
    assert rendered[0].startswith(f"bad.hlo:{line}:{column}: ")
    assert rendered[2] == " " * (column - 1) + "^"


def test_a_broken_line_deep_in_a_long_computation_fails_fast():
    """Guard against regex backtracking that is exponential in the number of lines (once: 2^lines)."""
    import signal

    lines = [f'  %b.{i} = f32[8,1]{{1,0}} broadcast(%c), dimensions={{}}, metadata={{op_name="x"}}' for i in range(200)]
    text = "HloModule m\n\nENTRY %e () -> f32[] {\n  %c = f32[] constant(1)\n" + "\n".join(lines)
    text += "\n  %bad = f32[8,1]{1,0} broadcast(%c), dimens)ons={}\n  ROOT %r = f32[] constant(2)\n}\n"

    def give_up(*_):
        raise AssertionError("parse_hlo backtracked for 20 s on a 200-line computation")

    previous = signal.signal(signal.SIGALRM, give_up)
    signal.alarm(20)  # a hang guard, not a timing assert: the linear parse takes milliseconds
    try:
        with pytest.raises(HloParseError) as info:
            parse_hlo(text)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert (info.value.line, info.value.column) == (205, 45)


@pytest.mark.parametrize("source", ["fixtures", "corpus models"])
def test_split_computations_gives_pieces_that_parse_alone(source):
    """count-recompiles parses only the computations whose text differs between compiles: each piece
    of real XLA output must parse alone to exactly the computation the whole text has there."""
    paths = hlo_fixture_files() if source == "fixtures" else corpus_files("models/*")
    if not paths:
        pytest.skip("../shared/corpus is absent")
    for path in paths:
        text = read_text(path)
        pieces = split_computations(text)
        assert "".join(pieces) == text
        whole = [c.name for module in parse_hlo(text) for c in module.computations]
        alone = [[c.name for module in parse_hlo(piece) for c in module.computations] for piece in pieces]
        assert alone == [[name] for name in whole], path
