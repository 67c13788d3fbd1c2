"""Attribute decoders: replica groups in every spelling, permute pairs, backend configs, integer lists, windows,
convolution dim_labels and integer literals."""

from __future__ import annotations

import pytest

from xlainspect.hlo.attributes import (
    ConvolutionDimensionNumbers,
    WindowDimension,
    backend_config_kind,
    decode_channel_id,
    decode_dim_labels,
    decode_group_count,
    decode_int_list,
    decode_integer_literal,
    decode_replica_groups,
    decode_source_target_pairs,
    decode_window,
    known_trip_count,
    op_name_scopes,
    print_dim_labels,
    print_integer,
    print_window,
    sequence_element,
    single_literal_value,
)
from xlainspect.hlo.parser import parse_hlo


@pytest.mark.parametrize(
    ("text", "groups"),
    [
        ("[4,2]<=[8]", ((0, 1), (2, 3), (4, 5), (6, 7))),  # reference §1.8 examples
        ("[2,4]<=[4,2]T(1,0)", ((0, 2, 4, 6), (1, 3, 5, 7))),
        ("[1,8]<=[8]", ((0, 1, 2, 3, 4, 5, 6, 7),)),  # llama 1x8 corpus file
        ("[2,4]<=[2,2,2]T(2,1,0)", ((0, 4, 2, 6), (1, 5, 3, 7))),
        ("{{0,1},{2,3}}", ((0, 1), (2, 3))),
        ("{{0,1,2,3}}", ((0, 1, 2, 3),)),
    ],
)
def test_replica_groups_expand_lists_and_iota(text, groups):
    decoded = decode_replica_groups(text)
    assert decoded.groups == groups
    assert (decoded.num_groups, decoded.group_size) == (len(groups), len(groups[0]))


def test_empty_replica_groups_mean_one_group_of_unknown_size():
    decoded = decode_replica_groups("{}")
    assert (decoded.form, decoded.groups, decoded.num_groups, decoded.group_size) == ("empty", None, 1, None)


def test_mesh_axes_stay_opaque_but_give_the_group_size():
    decoded = decode_replica_groups("mesh['axis_0'=8,'axis_1'=1] {'axis_0'}")  # CPU fixture jit_auto_sharded
    assert (decoded.form, decoded.groups, decoded.num_groups, decoded.group_size) == ("mesh", None, 1, 8)
    two_axes = decode_replica_groups("mesh['x'=2,'y'=4] {'y'}")
    assert (two_axes.num_groups, two_axes.group_size) == (2, 4)
    assert decode_replica_groups("mesh['x'=2,'y'=4] {'x':(1)2}").group_size is None


def test_mesh_groups_with_device_ids_give_the_group_size():
    # jax 0.10.2's CPU fixture sharded_mesh, module_0002 all-gather: the mesh's devices in a transposed order
    decoded = decode_replica_groups("mesh['axis_0'=1,'axis_1'=4,'axis_2'=2], device_ids=([2,4]T(1,0)) {'axis_1'}")
    assert (decoded.form, decoded.num_groups, decoded.group_size) == ("mesh", 2, 4)


@pytest.mark.parametrize("text", ["{{0,a}}", "{0,1}", "{{0,1},{2,3}", "[2,2]<[4]"])
def test_replica_groups_xla_would_reject_are_a_value_error_not_zero_groups(text):
    with pytest.raises(ValueError, match="expected replica groups"):
        decode_replica_groups(text)


def test_source_target_pairs():
    assert decode_source_target_pairs("{{0,1},{1,2},{2,3},{3,0}}") == ((0, 1), (1, 2), (2, 3), (3, 0))
    assert decode_source_target_pairs(None) == ()


def test_backend_config_kind_and_trip_count():
    assert backend_config_kind('{"fusion_backend_config":{"kind":"__triton_gemm"}}') == "__triton_gemm"
    assert backend_config_kind('{"operation_queue_id":"0"}') is None
    assert backend_config_kind('"tpu proto text"') is None
    assert known_trip_count('{"known_trip_count":{"n":"5"},"known_init_step":{"init":"0","step":"1"}}') == 5
    assert known_trip_count(None) is None


def test_custom_call_target_is_unquoted_once_for_every_analysis():
    # Test string in XLA's HloInstruction::ToString syntax (a GPU library call), not a dump.
    text = """HloModule m

ENTRY e {
  p = f32[4]{0} parameter(0)
  c = f32[4]{0} custom-call(p), custom_call_target="__cublas$gemm"
  ROOT n = f32[4]{0} negate(c)
}
"""
    (module,) = parse_hlo(text)
    assert [i.custom_call_target for i in module.entry.instructions] == [None, "__cublas$gemm", None]


def test_integer_lists_and_literals():
    # `dimensions={1,0}` as hlo_instruction.cc prints it (StrJoin(dimensions(), ",") in braces).
    assert decode_int_list("{1,0}") == (1, 0)
    assert decode_int_list("{}") == ()
    assert decode_int_list(None) == ()
    with pytest.raises(ValueError, match="invalid literal"):
        decode_int_list("{a}")
    assert [decode_integer_literal(t) for t in ("5", "-3", "1.5", "true", "--1")] == [5, -3, None, None, None]


def test_window_fields_as_window_util_prints_them():
    # window_util.cc ToString(const Window&): size always, the rest only where a dimension is not the default.
    text = "{size=3x3 stride=2x1 pad=1_1x0_2 lhs_dilate=1x2 rhs_dilate=2x1 rhs_reversal=0x1}"
    assert decode_window(text) == (
        WindowDimension(size=3, stride=2, padding_low=1, padding_high=1, window_dilation=2),
        WindowDimension(size=3, padding_high=2, base_dilation=2, window_reversal=True),
    )
    assert print_window(decode_window(text)) == text
    assert decode_window("{pad=1_1 size=1}") == (WindowDimension(size=1, padding_low=1, padding_high=1),)  # any order
    assert print_window(decode_window("{pad=1_1 size=1}")) == "{size=1 pad=1_1}"
    assert decode_window("{}") == decode_window(None) == ()
    bad = {
        "{size=3x3 stride=2}": "unequal",
        "{stride=2}": "no size",
        "{size=3 pad=1}": "low_high",
        "{size=3 c=2}": "unknown",
    }
    for text, reason in bad.items():
        with pytest.raises(ValueError, match=reason):
            decode_window(text)


def test_dim_labels_as_convolution_dimension_numbers_print():
    # hlo_instruction.cc ConvolutionDimensionNumbersToString: b/f, o/i, b/f and digit k for spatial dim k.
    numbers = decode_dim_labels("b01f_01io->b01f")
    assert numbers == ConvolutionDimensionNumbers(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2))
    transposed = decode_dim_labels("f10b_i01o->01bf")  # spatial dim 0 after dim 1 in the input
    assert (transposed.input_spatial, transposed.kernel_spatial, transposed.output_spatial) == ((2, 1), (1, 2), (0, 1))
    assert print_dim_labels(transposed) == "f10b_i01o->01bf"
    assert print_dim_labels(decode_dim_labels("bf_io->bf")) == "bf_io->bf"  # no spatial dims
    with pytest.raises(ValueError, match="spatial dimensions differ"):
        decode_dim_labels("b0f_io->b0f")
    with pytest.raises(ValueError, match="substring not found"):  # no batch dimension in the input
        decode_dim_labels("0f_0io->b0f")


def test_op_name_scopes():
    # jax's name stacks as dumps print them: jax's dispatch of one primitive, and a traced user function.
    assert op_name_scopes("jit(sin)/jit(main)/sin") == ("jit(sin)", "jit(main)", "sin")
    assert op_name_scopes("jit(train_step)/transpose(jvp(dense))/dot_general") == (
        "jit(train_step)",
        "transpose(jvp(dense))",
        "dot_general",
    )
    assert op_name_scopes(None) == op_name_scopes("") == ()


def test_tuple_index_of_get_tuple_element():
    # Test string in XLA's HloInstruction::ToString syntax (`index=` of a get-tuple-element), not a dump.
    text = """HloModule m

ENTRY e {
  p = (f32[4]{0}, s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=1
  ROOT n = s32[] negate(i)
}
"""
    (module,) = parse_hlo(text)
    assert [i.tuple_index for i in module.entry.instructions] == [None, 1, None]  # only a get-tuple-element's


def test_single_literal_value():
    # Constant literals as LiteralBase::ToString prints them: a scalar, a one-element array, more values.
    assert single_literal_value("-0.05") == "-0.05"
    assert single_literal_value("{-0.05}") == "-0.05"
    assert single_literal_value("{1, 2}") is None
    assert single_literal_value("{ { 1 }, { 2 } }") is None


@pytest.mark.parametrize("text", ["2", "1", "128"])
def test_group_counts_round_trip_and_default_to_one(text):
    # `feature_group_count=2` as HloConvolutionInstruction prints it (hlo_instruction.cc)
    assert decode_group_count(text) == int(text)
    assert print_integer(decode_group_count(text)) == text
    assert decode_group_count(None) == 1  # hlo_instruction.h: feature_group_count_ = 1, omitted when 1
    for bad in ("0", "-2", "x"):
        with pytest.raises(ValueError, match="positive group count"):
            decode_group_count(bad)


def test_channel_id_round_trips_and_absent_is_none():
    # `channel_id=5` as HloChannelInstruction prints it (hlo_instruction.cc)
    assert decode_channel_id("5") == 5
    assert print_integer(decode_channel_id("5") or 0) == "5"
    assert decode_channel_id(None) is None  # std::optional channel_id_, printed only when set
    with pytest.raises(ValueError, match="integer channel id"):
        decode_channel_id("five")


def test_sequence_element_of_a_pytree_path():
    # jax's keystr of a list leaf, as a parameter's op_name carries it (test strings)
    assert sequence_element("data[3]") == ("data", 3)
    assert sequence_element("state['opt'][0]") == ("state['opt']", 0)
    assert sequence_element("data") is None
    assert sequence_element("data[x]") is None
