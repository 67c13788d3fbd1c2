"""Every form XLA prints, 2019 to 2026, with its decoded values.

These are test strings, not dumps: each quotes the syntax of XLA's own parser and printer tests
(xla/hlo/parser/hlo_parser_test.cc and the pass tests named beside them) or of the jax 0.10.2 CPU
output an issue quoted. tests/test_differential.py parses each one with the grammar alone and with
the speed layer and requires the same model. README's "HLO text" section names the XLA change that
brought each form.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

import pytest

from xlainspect import HloParseError, parse_hlo
from xlainspect.analysis.lookup import instruction_index, operand_shapes
from xlainspect.graph import module_graph
from xlainspect.hlo.opcodes import unknown_opcodes

# Compact get-tuple-element operands (XLA 5f2c21bebe, printed by default since 0b695bff57, jax 0.11):
# the syntax of hlo_parser_test.cc's compact-GTE case, long text.
COMPACT_GTE = """HloModule compact_gte, entry_computation_layout={((f32[10]{0}, (f32[20]{0}, f32[30]{0})))->((f32[20]{0}, f32[30]{0}), f32[20]{0})}

ENTRY %main (p0: (f32[10], (f32[20], f32[30]))) -> ((f32[20], f32[30]), f32[20]) {
  %p0 = (f32[10]{0}, (f32[20]{0}, f32[30]{0})) parameter(0)
  ROOT %root = ((f32[20]{0}, f32[30]{0}), f32[20]{0}) tuple(%p0#1, %p0#1#0)
}
"""

# The same operands in short text, inside a while body, a condition and a fusion's caller, and a
# ROOT get-tuple-element line (the one kind XLA still prints).
COMPACT_GTE_SHORT = """HloModule compact_gte_while

body {
  p = (s32[], f32[8]{0}) parameter(0)
  one = s32[] constant(1)
  i = s32[] add(p#0, one)
  x = f32[8]{0} negate(p#1)
  ROOT t = (s32[], f32[8]{0}) tuple(i, x)
}

cond {
  p = (s32[], f32[8]{0}) parameter(0)
  n = s32[] constant(4)
  ROOT lt = pred[] compare(p#0, n), direction=LT
}

fused {
  param_0 = f32[8]{0} parameter(0)
  ROOT exp = f32[8]{0} exponential(param_0)
}

ENTRY main {
  a = f32[8]{0} parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[8]{0}) tuple(zero, a)
  w = (s32[], f32[8]{0}) while(init), condition=cond, body=body
  f = f32[8]{0} fusion(w#1), kind=kLoop, calls=fused
  ROOT g = s32[] get-tuple-element(w), index=0
}
"""

# XLA's parser takes blanks between a shape's dimensions and its layout (ParseShape looks past them).
SPACED_LAYOUT = """HloModule spaced_layout

ENTRY %e (p: bf16[1,128]) -> bf16[1,128] {
  %p = bf16[1,128] {1,0} parameter(0)
  ROOT %c = bf16[1,128] {1,0:T(8,128)(2,1)} copy(bf16[1,128] {1,0} %p)
}
"""

# origin= (hlo_parser_test.cc "OriginalValue"), and the header's multi-line origin_recovery_table
# and debug_attributes (hlo_original_value_grouper_test.cc's printing).
ORIGINS = """HloModule module, entry_computation_layout={()->s32[1,3]{1,0}}, origin_recovery_table={
  {"c2"} : {"c2"},
  "
    ENTRY %identity1 (p: s32[1,3]) -> s32[1,3] {
      ROOT %p = s32[1,3]{1,0} parameter(0)
    }
  "
},
debug_attributes={
  {"c2"}:({log_mode=default,callback_id=1,op_id=0,partitioned=false})
}

ENTRY %test () -> s32[1,3] {
  %c1 = s32[1,3]{1,0} constant({ {1, 2, 3} }), origin={{"c1"}}
  ROOT %v1 = s32[1,3]{1,0} copy(%c1), origin={[synthetic_call]}
}
"""

# result_accuracy (hlo_parser_test.cc "UnaryOpWithResultAccuracy"), metadata_payload in metadata,
# statistics= ("ConstantS32WithStatistics"), frontend_attributes.
ATTRIBUTES_2024_2026 = """HloModule attributes

ENTRY %e (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %exp = f32[4]{0} exponential(%x), result_accuracy={mode=highest}
  %log = f32[4]{0} log(%exp), result_accuracy={tolerance={rtol=0.5, atol=1.0, ulps=2}}
  %c = s32[] constant(-42), statistics={visualizing_index=1,stat-1=33,stat-2=44}
  ROOT %t = f32[4]{0} tanh(%log), frontend_attributes={_xla_compute_type="host"}, metadata={op_name="jit(f)/tanh" metadata_payload="cGF5bG9hZA=="}
}
"""

# Opcodes added 2024-2026 (hlo_opcode.h).
NEW_OPCODES = """HloModule new_opcodes

ENTRY %e (x: f32[4], i: s32[4], u: u32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %i = s32[4]{0} parameter(1)
  %u = u32[4]{0} parameter(2)
  %erf = f32[4]{0} erf(%x)
  %acos = f32[4]{0} acos(%erf)
  %acosh = f32[4]{0} acosh(%acos)
  %asin = f32[4]{0} asin(%acosh)
  %asinh = f32[4]{0} asinh(%asin)
  %atanh = f32[4]{0} atanh(%asinh)
  %sinh = f32[4]{0} sinh(%atanh)
  %cosh = f32[4]{0} cosh(%sinh)
  %mulhi = u32[4]{0} mulhi(%u, %u)
  %cb = f32[4]{0} collective-broadcast(%cosh), replica_groups={{0,1}}
  ROOT %r = f32[4]{0} add(%cb, %x)
}
"""

# The element types of 2026-06 and buffer shapes (XLA 2025-05), in a parameter list.
ELEMENT_TYPES = """HloModule element_types

ENTRY %e (a: s1[8], b: u1[8], c: s2[8], d: u2[8], e: f8e4m3[8], f: f8e3m4[8], g: f4e2m1fn[8], h: f8e8m0fnu[8], i: f6e3m2fn[8], j: f6e2m3fn[8], k: b(f32[8])) -> (s1[8]) {
  %a = s1[8]{0} parameter(0)
  %b = u1[8]{0} parameter(1)
  %c = s2[8]{0} parameter(2)
  %d = u2[8]{0} parameter(3)
  %e = f8e4m3[8]{0} parameter(4)
  %f = f8e3m4[8]{0} parameter(5)
  %g = f4e2m1fn[8]{0:E(4)} parameter(6)
  %h = f8e8m0fnu[8]{0} parameter(7)
  %i = f6e3m2fn[8]{0} parameter(8)
  %j = f6e2m3fn[8]{0} parameter(9)
  %k = b(f32[8]{0}) parameter(10)
  ROOT %t = (s1[8]{0}) tuple(%a)
}
"""

# Shardings over a named mesh (hlo_sharding_test.cc's NamedSharding printing, with the quoted axis
# names hlo_parser_test.cc uses) and mesh replica groups: the form without device ids (XLA's
# async_collective_custom_call_rewriter_test.cc) and the one with device_ids that jax 0.10.2 prints
# for sharded jits on 8 CPU devices.
MESH_FORMS = """HloModule mesh_forms, num_partitions=8

add {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT add = f32[] add(lhs, rhs)
}

ENTRY main {
  p = f32[16,8]{1,0} parameter(0), sharding={mesh['x'=2,'y'=2], [{'x'}, {}], unreduced={'y'}}
  ar = f32[16,8]{1,0} all-reduce(p), channel_id=1, replica_groups=mesh['axis_0'=2,'axis_1'=4] {'axis_1'}, use_global_device_ids=true, to_apply=add
  ROOT ag = f32[16,8]{1,0} all-reduce(ar), channel_id=2, replica_groups=mesh['axis_0'=2,'axis_1'=4], device_ids=([4,2]T(1,0)) {'axis_0'}, use_global_device_ids=true, to_apply=add
}
"""

# Braces nested 12 deep in a backend config (JSON); the old grammar stopped at 8.
DEEP_BRACES = """HloModule deep

ENTRY %e () -> f32[] {
  ROOT %c = f32[] custom-call(), custom_call_target="x", backend_config={"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":{"j":{"k":1}}}}}}}}}}}
}
"""

# Operands written as instructions, a form only XLA's parser reads (ParseOperands, XLA a8cd0c78ea,
# 2021-12): the reduction and the loop condition of while_loop_all_reduce_code_motion_test.cc
# (SingleAllReduceDUS), then algebraic_simplifier_test.cc's
# ReduceOfReshapeOfContractingAndNoncontractingDims (two deep, over two lines), both 2026.
NESTED_OPERANDS = """HloModule single_all_reduce_dus

%reduction {
  ROOT %max = f32[] maximum(f32[] parameter(0), f32[] parameter(1))
}

%while_condition {
  %param = (s32[], f32[256,256], f32[16]) parameter(0)
  %indvar = s32[] get-tuple-element(%param), index=0
  ROOT %result = pred[] compare(%indvar, s32[] constant(16)), direction=LT
}

add_f32 {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT r = f32[] add(p0, p1)
}

ENTRY test {
  ROOT reduce = f32[8] reduce(
    f32[8,4] reshape(f32[32] parameter(0)), f32[] constant(0)),
    dimensions={1}, to_apply=add_f32
}
"""

# Operands named like opcodes (`constant`, `pad`): algebraic_simplifier_test.cc's SliceOfPadLow (2026).
OPCODE_NAMED_OPERANDS = """HloModule module

ENTRY test {
  param = f32[3,4] parameter(0)
  constant = f32[] constant(0.0)
  pad = f32[8,10] pad(f32[3,4] param, f32[] constant), padding=3_2x1_5
  ROOT slice = f32[1,1] slice(f32[8,10] pad), slice={[2:3],[0:1]}
}
"""

SYNTAX_EXAMPLES = [
    COMPACT_GTE,
    COMPACT_GTE_SHORT,
    SPACED_LAYOUT,
    ORIGINS,
    ATTRIBUTES_2024_2026,
    NEW_OPCODES,
    ELEMENT_TYPES,
    MESH_FORMS,
    DEEP_BRACES,
    NESTED_OPERANDS,
    OPCODE_NAMED_OPERANDS,
]


def _instructions(text):
    (module,) = parse_hlo(text)
    return module, {i.name: i for i in module.instructions()}


def test_compact_get_tuple_element_operands_keep_instruction_and_path():
    module, by_name = _instructions(COMPACT_GTE)
    root = by_name["root"]
    assert root.operands == ("p0", "p0")
    assert root.operand_shape_indices == ((1,), (1, 0))
    shapes = operand_shapes(root, instruction_index(module.entry))
    assert [str(s) for s in shapes] == ["(f32[20]{0}, f32[30]{0})", "f32[20]{0}"]
    assert len(module.entry.instructions) == 2  # one instruction per instruction line
    edge = module_graph(module).edges[("main", "p0"), ("main", "root")]
    assert edge["shape_index"] in ((1,), (1, 0))


def test_compact_operands_in_while_bodies_and_fusion_callers():
    module, by_name = _instructions(COMPACT_GTE_SHORT)
    assert by_name["i"].operands == ("p", "one") and by_name["i"].operand_shape_indices == ((0,), ())
    assert by_name["lt"].operand_shape_indices == ((0,), ())
    fusion = by_name["f"]
    assert fusion.operands == ("w",) and fusion.operand_shape_indices == ((1,),)
    assert [str(s) for s in operand_shapes(fusion, instruction_index(module.entry))] == ["f32[8]{0}"]
    assert by_name["g"].opcode == "get-tuple-element" and by_name["g"].operand_shape_indices == ()
    assert by_name["x"].operand_shape_indices == ((1,),)
    assert module.instruction_count == 5 + 3 + 2 + 6


def test_space_between_shape_and_layout():
    _, by_name = _instructions(SPACED_LAYOUT)
    assert str(by_name["p"].shape) == "bf16[1,128]{1,0}"
    assert by_name["c"].shape.layout.tiles[1].dims == (2, 1)


def test_origins_and_multi_line_header_values():
    module, by_name = _instructions(ORIGINS)
    assert module.attributes["origin_recovery_table"].startswith('{\n  {"c2"} : {"c2"},')
    assert "ENTRY %identity1" in module.attributes["origin_recovery_table"]
    assert module.attributes["debug_attributes"].endswith("partitioned=false})\n}")
    assert by_name["c1"].attributes["origin"] == '{{"c1"}}'
    assert by_name["v1"].attributes["origin"] == "{[synthetic_call]}"
    assert module.entry.name == "test" and [i.name for i in module.entry] == ["c1", "v1"]


def test_result_accuracy_statistics_and_metadata_payload():
    _, by_name = _instructions(ATTRIBUTES_2024_2026)
    assert by_name["exp"].attributes["result_accuracy"] == "{mode=highest}"
    assert by_name["log"].attributes["result_accuracy"] == "{tolerance={rtol=0.5, atol=1.0, ulps=2}}"
    assert by_name["c"].attributes["statistics"] == "{visualizing_index=1,stat-1=33,stat-2=44}"
    assert by_name["t"].op_name == "jit(f)/tanh"
    assert by_name["t"].attributes["frontend_attributes"] == '{_xla_compute_type="host"}'


def test_new_opcodes_are_known():
    module, by_name = _instructions(NEW_OPCODES)
    opcodes = [i.opcode for i in module.instructions()]
    assert opcodes[3:13] == [
        "erf",
        "acos",
        "acosh",
        "asin",
        "asinh",
        "atanh",
        "sinh",
        "cosh",
        "mulhi",
        "collective-broadcast",
    ]
    assert unknown_opcodes(opcodes + ["ragged-all-to-all", "ragged-dot", "scaled-dot", "scan"]) == []


def test_new_element_types_and_buffer_shapes():
    module, by_name = _instructions(ELEMENT_TYPES)
    dtypes = [by_name[n].shape.dtype for n in "abcdefghij"]
    assert dtypes == ["s1", "u1", "s2", "u2", "f8e4m3", "f8e3m4", "f4e2m1fn", "f8e8m0fnu", "f6e3m2fn", "f6e2m3fn"]
    assert by_name["g"].shape.logical_bytes == 4  # E(4): 8 elements of 4 bits
    assert by_name["a"].shape.logical_bytes == 8  # without E(n) each s1 element takes a byte (ShapeUtil)
    assert str(by_name["k"].shape) == "f32[8]{0}"  # b(...) wraps the buffer's array shape
    assert dict(module.entry.parameter_shapes)["k"].dims == (8,)


def test_mesh_shardings_and_replica_groups():
    _, by_name = _instructions(MESH_FORMS)
    assert by_name["p"].attributes["sharding"] == "{mesh['x'=2,'y'=2], [{'x'}, {}], unreduced={'y'}}"
    assert by_name["ar"].attributes["replica_groups"] == "mesh['axis_0'=2,'axis_1'=4] {'axis_1'}"
    assert (
        by_name["ag"].attributes["replica_groups"] == "mesh['axis_0'=2,'axis_1'=4], device_ids=([4,2]T(1,0)) {'axis_0'}"
    )
    assert by_name["ag"].attributes["use_global_device_ids"] == "true"
    assert by_name["ag"].called_computations == ("add",)


def test_braces_nested_deeper_than_eight():
    _, by_name = _instructions(DEEP_BRACES)
    assert by_name["c"].attributes["backend_config"].endswith('{"k":1}}}}}}}}}}}')


_ONE_PER_LINE = [t for t in SYNTAX_EXAMPLES if t is not NESTED_OPERANDS]  # nested: several a line


@pytest.mark.parametrize("text", _ONE_PER_LINE, ids=range(len(_ONE_PER_LINE)))
def test_one_instruction_per_instruction_line(text):
    """Lines indented two blanks that define a name (recovery computations inside strings are deeper)."""
    (module,) = parse_hlo(text)
    lines = [line for line in text.splitlines() if re.match(r"  (ROOT )?%?[\w.\-]+ = ", line)]
    assert module.instruction_count == len(lines)


# COMPACT_GTE_SHORT with its get-tuple-element lines written out, as XLA printed before 2026-07.
SPELLED_OUT_GTE = (
    COMPACT_GTE_SHORT.replace(
        "  i = s32[] add(p#0, one)", "  p.0 = s32[] get-tuple-element(p), index=0\n  i = s32[] add(p.0, one)"
    )
    .replace(
        "  x = f32[8]{0} negate(p#1)", "  p.1 = f32[8]{0} get-tuple-element(p), index=1\n  x = f32[8]{0} negate(p.1)"
    )
    .replace(
        "  ROOT lt = pred[] compare(p#0, n)",
        "  c.0 = s32[] get-tuple-element(p), index=0\n  ROOT lt = pred[] compare(c.0, n)",
    )
    .replace(
        "  f = f32[8]{0} fusion(w#1)", "  w.1 = f32[8]{0} get-tuple-element(w), index=1\n  f = f32[8]{0} fusion(w.1)"
    )
)


def test_cost_reads_compact_operands_as_their_elements():
    """XLA counts a get-tuple-element as free: the compact text costs what the spelled-out text does."""
    from xlainspect.analysis.cost import module_cost

    (compact,) = parse_hlo(COMPACT_GTE_SHORT)
    (spelled,) = parse_hlo(SPELLED_OUT_GTE)
    a, b = module_cost(compact, None), module_cost(spelled, None)
    assert (a.flops, a.transcendentals, a.bytes_accessed) == (b.flops, b.transcendentals, b.bytes_accessed)
    assert a.transcendentals == 8  # the fusion's exponential over f32[8]


def _names_and_operands(module) -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """Per computation, each instruction's name and its operands' names, in the computation's order
    (a constant's and a parameter's operands are their literal and number, not instructions)."""
    return {
        c.name: [(i.name, () if i.opcode in ("constant", "parameter") else i.operands) for i in c.instructions]
        for c in module.computations
    }


#: NESTED_OPERANDS as XLA's parser builds it (checked against jaxlib below): each instruction written
#: as an operand is an instruction of its computation, added before the one it is written in, in
#: operand order and innermost first, named `<opcode>.anon` made unique across the module.
NESTED_MODEL = {
    "reduction": [("parameter.anon", ()), ("parameter.anon.1", ()), ("max", ("parameter.anon", "parameter.anon.1"))],
    "while_condition": [
        ("param", ()),
        ("indvar", ("param",)),
        ("constant.anon", ()),
        ("result", ("indvar", "constant.anon")),
    ],
    "add_f32": [("p0", ()), ("p1", ()), ("r", ("p0", "p1"))],
    "test": [
        ("parameter.anon.2", ()),
        ("reshape.anon", ("parameter.anon.2",)),
        ("constant.anon.1", ()),
        ("reduce", ("reshape.anon", "constant.anon.1")),
    ],
}

# A name taken before the parser needs it (a test string written here, in the syntax above): XLA's
# NameUniquer then skips it, and a `.N` suffix of a named instruction is an id it will not give again.
NAME_TAKEN = """HloModule m

ENTRY e {
  constant.anon = s32[] constant(3)
  add.anon.1 = s32[] add(constant.anon, constant.anon)
  ROOT c = s32[] add(add(s32[] constant(1), s32[] constant(2)), add(add.anon.1, s32[] constant(4)))
}
"""


@pytest.mark.parametrize("fast", [True, False])
def test_operands_written_as_instructions_are_instructions(fast):
    (module,) = parse_hlo(NESTED_OPERANDS, fast=fast)
    assert _names_and_operands(module) == NESTED_MODEL
    by_name = {i.name: i for i in module.instructions()}
    assert by_name["constant.anon"].operands == ("16",) and str(by_name["constant.anon"].shape) == "s32[]"
    assert by_name["parameter.anon.2"].parameter_number == 0 and module.entry.parameters == [
        by_name["parameter.anon.2"]
    ]
    assert by_name["reshape.anon"].line == 21 and by_name["reduce"].line == 20
    assert by_name["reduce"].attributes == {"dimensions": "{1}", "to_apply": "add_f32"}
    assert not by_name["reshape.anon"].attributes and not by_name["reshape.anon"].is_root
    graph = module_graph(module)  # the analyses' view: edges into the instruction written in place
    assert graph.has_edge(("while_condition", "constant.anon"), ("while_condition", "result"))
    assert graph.has_edge(("test", "reshape.anon"), ("test", "reduce"))


def test_nested_names_skip_names_taken():
    (module,) = parse_hlo(NAME_TAKEN)
    assert _names_and_operands(module)["e"] == [
        ("constant.anon", ()),
        ("add.anon.1", ("constant.anon", "constant.anon")),
        ("constant.anon.1", ()),
        ("constant.anon.2", ()),
        ("add.anon", ("constant.anon.1", "constant.anon.2")),
        ("constant.anon.3", ()),
        ("add.anon.2", ("add.anon.1", "constant.anon.3")),
        ("c", ("add.anon", "add.anon.2")),
    ]


def test_each_module_names_its_own_nested_instructions():
    two = NAME_TAKEN + "\n" + NAME_TAKEN.replace("HloModule m", "HloModule n")
    first, second = parse_hlo(two)
    assert _names_and_operands(first) == _names_and_operands(second)


@pytest.mark.parametrize("fast", [True, False])
def test_operands_named_like_opcodes(fast):
    (module,) = parse_hlo(OPCODE_NAMED_OPERANDS, fast=fast)
    assert _names_and_operands(module)["test"] == [
        ("param", ()),
        ("constant", ()),
        ("pad", ("param", "constant")),
        ("slice", ("pad",)),
    ]
    assert module.entry.instructions[1].operands == ("0.0",)


#: jaxlib's parser (the binding jax 0.10.2 ships) in a child process, as tests/test_cost.py runs it:
#: texts as JSON on stdin; per text, per computation, each instruction's name and operands' names.
XLA_NAMES = """
import json, sys
from jax._src.lib import hlo
out = []
for text in json.load(sys.stdin):
    module = hlo.hlo_module_from_text(text)
    out.append({c.name: [[i.name, [o.name for o in i.operands()]] for i in c.instructions()] for c in module.computations()})
print(json.dumps(out))
"""


def test_names_and_order_equal_xlas_parser():
    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed")
    texts = [NESTED_OPERANDS, OPCODE_NAMED_OPERANDS, NAME_TAKEN]
    child = subprocess.run(
        [sys.executable, "-c", XLA_NAMES], input=json.dumps(texts), capture_output=True, text=True, check=True
    )
    xla = [{c: [(n, tuple(o)) for n, o in rows] for c, rows in module.items()} for module in json.loads(child.stdout)]
    assert xla == [_names_and_operands(parse_hlo(text)[0]) for text in texts]
    assert xla[0] == NESTED_MODEL


@pytest.mark.parametrize(
    ("text", "line", "column", "words"),
    [
        # a nested instruction takes no attributes (ParseOperands: a comma would be ambiguous)
        ("  ROOT r = pred[] compare(%i, s32[] constant(16), direction=LT)\n", 5, 60, "unexpected text '=LT)'"),
        ("  ROOT r = pred[] compare(%i, s32[] add(%i %i))\n", 5, 44, "unexpected text '%i))'"),
        ("  ROOT r = pred[] compare(%i, s32[] constant(16)\n", 6, 1, "unexpected '}'"),
    ],
)
def test_errors_inside_nested_instructions_name_the_place(text, line, column, words):
    text = "HloModule m\n\nENTRY e {\n  %i = s32[] parameter(0)\n" + text + "}\n"
    for fast in (True, False):
        with pytest.raises(HloParseError) as info:
            parse_hlo(text, "bad.hlo", fast=fast)
        error = info.value
        assert (error.path, error.line, error.column, error.message) == ("bad.hlo", line, column, words)
        source = text.splitlines()[line - 1]
        assert str(error).splitlines()[:3] == [f"bad.hlo:{line}:{column}: {words}", source, " " * (column - 1) + "^"]
