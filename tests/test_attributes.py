"""Generic attribute decoders: replica groups in every spelling, permute pairs, backend configs."""

from __future__ import annotations

import pytest

from xlainspect.hlo.attributes import (
    backend_config_kind,
    decode_replica_groups,
    decode_source_target_pairs,
    known_trip_count,
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
