"""Copies, async copies, transposes and relayout fusions: layouts, memory spaces, bytes."""

from __future__ import annotations

from collections import Counter

from conftest import DUMPS

from xlainspect.analysis.copies import copies, copy_totals
from xlainspect.dump.directory import load_dump
from xlainspect.dump.files import read_text
from xlainspect.dump.selection import select_modules
from xlainspect.hlo.parser import parse_hlo


def _module(scenario: str, function: str):
    (module,), _ = select_modules(load_dump(DUMPS / scenario), function=function)
    return module


def test_host_offload_copy_start_to_s5():
    (row,) = copies(_module("tpu_v5e", "jit_offload"), "tpu")
    assert (row.opcode, row.kind, row.from_layout, row.to_layout) == (
        "copy-start",
        "async copy",
        "{1,0:T(8,128)}",
        "{1,0:T(8,128)S(5)}",
    )
    assert row.memory_space_change.startswith("S(0)->S(5) (host memory")
    assert (row.bytes, row.producer, row.consumers) == (4096, "tanh_multiply_fusion (fusion)", ())


def test_tpu_relayout_into_vmem_and_prefetch():
    rows = {r.name: r for r in copies(_module("tpu_v5e", "jit_collectives_body"), "tpu")}
    relayout = rows["copy.9"]
    assert (relayout.from_layout, relayout.to_layout) == ("{0,1:T(4,128)(2,1)}", "{1,0:T(8,128)(2,1)S(1)}")
    assert (relayout.relayout, relayout.layout_only, relayout.memory_space_change) == (True, False, "S(0)->S(1) (VMEM)")
    assert relayout.bytes == 2048 and relayout.consumers == ("all-reduce.1", "bitcast.4")
    prefetch = rows["copy-start"]  # (dest, src, context) tuple: destination from copy-done
    assert (prefetch.to_shape, prefetch.bytes, prefetch.relayout) == ("bf16[8,3]{0,1:T(4,128)(2,1)S(1)}", 1024, False)
    assert prefetch.consumers == ("all-reduce.1", "bitcast.5")  # users of copy-done
    totals = {t.kind: t for t in copy_totals(list(rows.values()))}
    assert (totals["copy"].count, totals["copy"].bytes, totals["copy"].relayout) == (3, 4096, 2)


def test_every_copy_opcode_is_listed_once():
    for dump_module in load_dump(DUMPS / "tpu_v5e").modules:
        text = read_text(dump_module.hlo_file().path)
        found = Counter(r.opcode for r in copies(dump_module.module()) if r.kind in ("copy", "async copy", "transpose"))
        expected = Counter(
            {
                "copy": text.count(" copy("),
                "copy-start": text.count(" copy-start("),
                "transpose": text.count(" transpose("),
            }
        )
        assert found == +expected, dump_module.label


def test_cpu_copies_resolve_operand_shapes_in_long_text():
    rows = {r.name: r for r in copies(_module("collectives_cpu", "jit_ring_body"))}
    assert (rows["copy.8"].from_shape, rows["copy.8"].bytes, rows["copy.8"].relayout) == ("f32[8,4]{1,0}", 128, False)
    assert rows["copy.9"].producer == "constant.8.clone.1 (constant)"


def test_layout_only_copy():
    # Inline snippet (hand-written): a transposing relayout in one memory space.
    text = """HloModule m

ENTRY %e (x: f32[8,4]) -> f32[8,4] {
  %x = f32[8,4]{1,0} parameter(0)
  ROOT %c = f32[8,4]{0,1} copy(%x)
}
"""
    (row,) = copies(parse_hlo(text)[0])
    assert (row.from_layout, row.to_layout, row.relayout, row.layout_only, row.bytes) == (
        "{1,0}",
        "{0,1}",
        True,
        True,
        128,
    )
