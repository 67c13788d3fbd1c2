"""The padding ledger and the buffer-assignment reader, checked against the sizes XLA itself wrote."""

from __future__ import annotations

import collections

import pytest
from conftest import DUMPS

from xlainspect.analysis.layouts import LedgerInput, filter_ledger, ledger_totals, padding_ledger
from xlainspect.dump.buffers import read_buffer_assignment
from xlainspect.dump.files import read_text

TPU_DUMPS = ("tpu_v4", "tpu_v5e", "tpu_v6e")


def _tpu_values():
    for scenario in TPU_DUMPS:
        for path in sorted((DUMPS / scenario).glob("*after_optimizations-buffer-assignment.txt")):
            yield from read_buffer_assignment(read_text(path), str(path)).values()


def test_padded_bytes_equal_xla_sizes_for_every_tpu_value():
    """Every single-array value in the TPU buffer assignments: our TPU size == XLA's printed size.

    `padded_bytes` (ShapeUtil::ArraySize) differs only for untiled u32 scalars outside SMEM, which the
    TPU backend puts in a whole (8,128) tile (reference 2.4b); `backend_bytes("tpu")` models that.
    """
    arrays = [(v, v.shape) for v in _tpu_values() if not v.shape.is_tuple]
    assert len(arrays) == 2045 and len({v.shape_text for v, _ in arrays}) == 403
    assert [v.shape_text for v, s in arrays if s.backend_bytes("tpu") != v.size] == []
    exceptions = collections.Counter((v.shape_text, v.size) for v, s in arrays if s.padded_bytes != v.size)
    assert exceptions == {("u32[]{:S(6)}", 4096): 6, ("u32[]", 4096): 5}


def test_buffer_assignment_reader_fields():
    path = DUMPS / "tpu_v5e" / "module_0000.jit_layouts.cl_933746096.after_optimizations-buffer-assignment.txt"
    assignment = read_buffer_assignment(read_text(path), str(path))
    first, second = assignment.allocations[:2]
    assert (first.index, first.size, first.flags) == (0, 512, ("thread-local",))
    assert (first.values[0].instruction, first.values[0].size, first.values[0].shape_text) == (
        "reduce_sum.5",
        512,
        "f32[]{:T(128)}",
    )
    assert (second.size, second.values[0].instruction) == (16384, "copy.18")
    parameter = assignment.allocations[2]
    assert (parameter.parameter, parameter.values[0].shape_text) == (11, "bf16[1000,5]{0,1:T(8,128)(2,1)}")
    sync_flags = [v for v in assignment.values() if v.color == 2]
    assert sync_flags and all(v.size == 4 for v in sync_flags)


def test_buffer_assignment_reader_rejects_other_text():
    from xlainspect.errors import HloParseError

    with pytest.raises(HloParseError) as caught:
        read_buffer_assignment("HloModule m\n", "x.txt")
    assert caught.value.line == 1 and "not an XLA buffer assignment" in caught.value.message


def _ledger(scenario: str, platform: str | None = "tpu"):
    from xlainspect.dump.directory import load_dump

    inputs = []
    for dump_module in load_dump(DUMPS / scenario).modules:
        side = dump_module.file("buffer-assignment", "after")
        buffers = read_buffer_assignment(read_text(side.path), str(side.path)) if side else None
        inputs.append(LedgerInput(dump_module.module("after"), dump_module.name, platform, buffers))
    return padding_ledger(inputs)


def test_tpu_ledger_ranks_by_waste_and_matches_xla():
    rows = _ledger("tpu_v5e")
    assert [r.wasted_bytes for r in rows] == sorted((r.wasted_bytes for r in rows), reverse=True)
    checked = [r for r in rows if r.xla_bytes is not None]
    assert len(checked) > 100 and all(r.padded_bytes == r.xla_bytes for r in checked)
    layouts = [r for r in rows if r.function == "jit_layouts"]
    top = layouts[0]
    assert (top.shape, top.padded_bytes, top.logical_bytes) == ("f32[3,5,2,7]{3,2,1,0:T(2,128)S(1)}", 15360, 840)
    totals = {t.group: t for t in ledger_totals(rows, "function")}
    assert totals["jit_layouts"].wasted_bytes == sum(r.wasted_bytes for r in layouts)
    assert all(r.expansion >= 10 for r in filter_ledger(rows, min_expansion=10))
    assert len(filter_ledger(rows, function="jit_layouts", top=3)) == 3


def test_layouts_cli_json(tmp_path):
    import json

    from typer.testing import CliRunner

    from xlainspect.cli.app import app

    result = CliRunner().invoke(
        app, ["layouts", str(DUMPS / "tpu_v5e"), "--function", "jit_layouts", "--top", "2", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["values"][0]["instruction"] == "bitcast.11" and document["values"][0]["wasted_bytes"] == 14520
    assert document["functions"][0]["group"] == "jit_layouts"


def test_ledger_view_lists_padded_values_and_says_what_it_left_out():
    from xlainspect.analysis.layouts import TABLE_TOP, ledger_view
    from xlainspect.report.views.layouts import ledger_caption

    rows = _ledger("tpu_v5e")
    view = ledger_view(rows)
    assert (len(rows), len(view.values), TABLE_TOP) == (1447, 20, 20)
    assert all(r.wasted_bytes > 0 for r in view.values)
    assert ledger_caption(view) == (
        "padding ledger: 20 of 1,447 values, most wasted bytes first "
        "(119 without padding; 1,308 more beyond --top 20 left out; --all lists every value)"
    )
    assert view.modules[0].group == "module_0029.jit_layouts"  # per module, not per function
    assert {t.group for t in view.functions} >= {"jit_layouts", "jit_dots"}
    everything = ledger_view(rows, every_value=True)
    assert (len(everything.values), len(everything.modules)) == (1447, 18)


def test_layouts_of_a_dump_without_padding_is_one_sentence_and_totals():
    from typer.testing import CliRunner

    from xlainspect.cli.app import app

    result = CliRunner().invoke(app, ["layouts", str(DUMPS / "clean_run")])
    assert result.exit_code == 0
    assert result.stdout.startswith("no padding: none of the 20 values loses bytes to tiles (--all lists them)\n")
    assert "per module" not in result.stdout and "jit_train_step" in result.stdout
