"""Tile math (reference section 2.4), layout round trips, parse_shape and the `layout` command."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from xlainspect import parse_shape
from xlainspect.analysis.layouts import explain_shape
from xlainspect.cli.app import app
from xlainspect.errors import HloParseError
from xlainspect.layout import decode_layout, format_layout, memory_space_name
from xlainspect.report.views.layouts import layout_notes, tile_picture


@pytest.mark.parametrize(
    ("text", "padded"),
    [
        ("bf16[3,5]{1,0:T(8,128)(2,1)}", 2048),
        ("f32[3,5]{1,0:T(2,2)}", 96),
        ("s32[]{:T(128)}", 512),
        ("bf16[]{:T(256)}", 512),
        ("f32[64]{0:T(128)}", 512),
        ("bf16[4096]{0:T(1024)(128)(2,1)}", 8192),
        ("s4[1000]{0:E(4)}", 500),
        ("s4[1000]{0}", 1000),
        ("s4[3,5]{1,0:T(8,128)E(4)}", 512),
        ("f32[5]{0:T(4)L(16)}", 64),
        ("f32[5]{0:L(16)}", 20),
        ("f32[1024,128]{1,0:T(8,128)SC(0:256,768)}", 262144),
        ("F32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}", 112 * 111 * 4),  # TILEDOC: F32[112,110] tiled by (2,3)
    ],
)
def test_padded_bytes_follow_array_size(text, padded):
    assert parse_shape(text).padded_bytes == padded


def test_logical_bytes_and_tuples():
    assert parse_shape("bf16[3,5]{1,0:T(8,128)(2,1)}").logical_bytes == 30
    pair = parse_shape("(f32[2]{0}, bf16[3,5]{1,0:T(8,128)(2,1)})")
    assert (pair.logical_bytes, pair.padded_bytes) == (38, 2056)
    assert [a.padded_bytes for a in explain_shape(pair)] == [8, 2048]


def test_tpu_backend_size_for_untiled_scalars():
    assert parse_shape("f32[]").backend_bytes("tpu") == 4096
    assert parse_shape("s16[]").backend_bytes("tpu") == 2048
    assert parse_shape("u32[]{:S(2)}").backend_bytes("tpu") == 4
    assert parse_shape("f32[]").backend_bytes("cpu") == 4


@pytest.mark.parametrize(
    "layout",
    [
        "{1,0}",
        "{}",
        "{:T(128)}",
        "{1,0:T(8,128)(2,1)}",
        "{4,3,2,1,0:T(*,*,2,*,3)}",
        "{0:T(4)L(16)}",
        "{1,0:D(D,C)}",
        "{0:#(u32)}",
        "{0:*(u32)}",
        "{0:E(4)}",
        "{1,0:T(8,128)S(1)}",
        "{1,0:T(8,128)SC(0:256,768)(1:64)}",
        "{1,0:P(f32[4]{0})}",
        "{0:M(8)}",
    ],
)
def test_format_layout_round_trips(layout):
    assert format_layout(decode_layout(layout)) == layout


def test_explain_names_padded_dims_and_memory_space():
    (array,) = explain_shape(parse_shape("bf16[3,5]<1,0:T(8,128)(2,1)S(1)>"), "tpu")
    assert (array.padded_dims, array.logical_bytes, array.padded_bytes, array.expansion) == ((8, 128), 30, 2048, 68.27)
    assert layout_notes(array)[:2] == (
        "dim 0 (physical position 0): 3 -> 8 by tile extent 8",
        "dim 1 (physical position 1): 5 -> 128 by tile extent 128",
    )
    assert array.memory_space_name == "VMEM"
    picture = tile_picture(array.padding)
    assert picture[1] == "##" + "." * 30 and picture[4] == "." * 32
    combined = explain_shape(parse_shape("f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}"))[0]
    assert [(p.logical_dims, p.size, p.padded) for p in combined.padding if p.logical_dims] == [
        ((0, 1, 2), 112, 112),
        ((3, 4), 110, 111),
    ]


def test_memory_space_names_follow_tpu_reports():
    assert [memory_space_name(s, "tpu").split()[0] for s in (0, 1, 2)] == ["HBM", "VMEM", "SMEM"]
    assert memory_space_name(1, "gpu") == "collective memory"
    assert memory_space_name(5) == "host memory"


def test_dynamic_and_sub_byte_shapes_decode():
    assert parse_shape("f32[<=8,4]").padded_bytes == 128
    assert parse_shape("f32[<=8,4]<1,0>").dynamic == (True, False)
    assert parse_shape("u4[7]{0:E(4)S(5)}").padded_bytes == 4


@pytest.mark.parametrize(
    ("text", "column", "message"),
    [
        ("bf16[3,5]{1,0:T(8,128)", 23, "never closed"),
        ("f33[3]", 1, "unknown element type 'f33'"),
        ("{1,0}", 1, "a layout alone is not a shape"),
        ("f32[3,5]{1,1}", 10, "not a permutation"),
        ("f32[3]{0:T(8,128)}", 10, "more dimensions than the shape"),
    ],
)
def test_bad_shapes_raise_with_column(text, column, message):
    with pytest.raises(HloParseError) as caught:
        parse_shape(text)
    assert caught.value.column == column and message in caught.value.message


def test_dump_shapes_accept_tiles_longer_than_rank():
    from xlainspect.hlo.shape import array_shape

    assert array_shape("f32[3]{0:T(8,128)}").padded_bytes == 8 * 128 * 4  # ArraySize counts the missing dim as 1


runner = CliRunner()


def test_layout_cli_alias_gives_identical_json():
    braces = runner.invoke(app, ["layout", "bf16[3,5]{1,0:T(8,128)(2,1)}", "--format", "json"])
    angles = runner.invoke(app, ["layout", "bf16[3,5]<1,0:T(8,128)(2,1)>", "--format", "json"])
    assert braces.exit_code == angles.exit_code == 0 and braces.stdout == angles.stdout
    documents = json.loads(braces.stdout)
    assert len(documents) == 1  # a list whatever the shape holds: one entry per array
    document = documents[0]
    assert {
        k: document[k]
        for k in (
            "dtype",
            "dims",
            "minor_to_major",
            "tiles",
            "memory_space",
            "element_size_bits",
            "logical_bytes",
            "padded_dims",
            "padded_bytes",
            "expansion",
        )
    } == {
        "dtype": "bf16",
        "dims": [3, 5],
        "minor_to_major": [1, 0],
        "tiles": ["(8,128)", "(2,1)"],
        "memory_space": 0,
        "element_size_bits": 16,
        "logical_bytes": 30,
        "padded_dims": [8, 128],
        "padded_bytes": 2048,
        "expansion": 68.27,
    }


def test_layout_cli_table_shows_waste():
    result = runner.invoke(app, ["layout", "bf16[3,5]{1,0:T(8,128)(2,1)S(6)}", "--platform", "tpu"])
    assert result.exit_code == 0
    assert "30 of data in 2,048 bytes: 2,018 wasted, 68.27x" in result.stdout


@pytest.mark.parametrize("text", ["bf16[3,5]{1,0:T(8,128)", "f33[3]", "{1,0}", "f32[3,5]{1,1}", "f32[3]{0:T(8,128)}"])
def test_layout_cli_bad_input_exits_2_with_caret(text):
    result = runner.invoke(app, ["layout", text])
    assert result.exit_code == 2
    assert "^" in result.output and text in result.output


def test_a_shape_less_its_element_type_as_a_layout_change_shows_it():
    # XLA's printed shapes (shape_util.cc HumanStringWithLayout): TPU tiling and memory space kept
    assert parse_shape("f32[8,128]{0,1}").dims_and_layout_text() == "[8,128]{0,1}"
    assert parse_shape("bf16[8,128]{1,0:T(8,128)(2,1)S(1)}").dims_and_layout_text() == "[8,128]{1,0:T(8,128)(2,1)S(1)}"
    assert parse_shape("f32[<=4,?]").dims_and_layout_text() == "[<=4,?]"
