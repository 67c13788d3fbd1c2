"""Every form XLA prints, 2019 to 2026, with its decoded values.

These are test strings, not dumps: each quotes the syntax of XLA's own parser and printer tests
(xla/hlo/parser/hlo_parser_test.cc and the pass tests named beside them) or of the jax 0.10.2 CPU
output an issue quoted. tests/test_differential.py parses each one with the grammar alone and with
the speed layer and requires the same model. README's "HLO text" section names the XLA change that
brought each form.
"""

from __future__ import annotations

import re

import pytest

from xlainspect import parse_hlo
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


@pytest.mark.parametrize("text", SYNTAX_EXAMPLES, ids=range(len(SYNTAX_EXAMPLES)))
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
