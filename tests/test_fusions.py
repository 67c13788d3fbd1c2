"""Fusions: kinds, backend kinds, contents and bytes on the fixtures and the corpus."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import DUMPS, corpus_files

from xlainspect.analysis.fusions import fusion_kind_totals, fusions, unfused_contractions, unfused_ops
from xlainspect.dump.directory import load_dump
from xlainspect.dump.files import read_text
from xlainspect.dump.selection import select_modules
from xlainspect.hlo.parser import parse_hlo


def _module(scenario: str, function: str, dumps=DUMPS):
    (module,), _ = select_modules(load_dump(dumps / scenario), function=function)
    return module


def test_cpu_ring_body_fusions_and_unfused_ops(jax_version):
    module = _module("collectives_cpu", "jit_ring_body", jax_version.dumps)
    rows = {r.name: r for r in fusions(module)}
    assert len(rows) == read_text(module.path).count(" fusion(")
    fused = rows["multiply_add_fusion"]
    assert (fused.kind, fused.root, fused.fused_computation) == ("kLoop", "add", "fused_computation")
    assert fused.ops == {"add": 1, "broadcast": 1, "constant": 1, "multiply": 1}
    assert (fused.output_bytes, fused.operand_bytes) == (128, 256)  # f32[8,4] out, two f32[8,4] in
    scope = "closed_call" if jax_version.version == "0.10.2" else "eval_jaxpr"  # jax 0.11 names the loop body so
    assert fused.op_name == f"jit(ring_body)/shard_map/while/body/{scope}/add"
    assert unfused_ops(module) == {"copy": 2}  # the two copies feeding the while tuple


def test_unfused_dots_are_named_with_their_flops(jax_version):
    module = _module("clean_run", "jit_train_step", jax_version.dumps)
    named = [(c.name, c.opcode, c.shape, c.flops) for c in unfused_contractions(module)]
    assert named == [("dot.2", "dot", "f32[32,1]{1,0}", 512), ("dot.3", "dot", "f32[1,8]{1,0}", 512)]
    assert len(named) == unfused_ops(module)["dot"]


def test_cpu_collectives_body_kind_totals(jax_version):
    module = _module("collectives_cpu", "jit_collectives_body", jax_version.dumps)
    rows = fusions(module)
    assert Counter(r.kind for r in rows) == {"kLoop": 10}
    (total,) = fusion_kind_totals(rows)
    assert (total.kind, total.count, total.output_bytes) == ("kLoop", 10, 176)
    assert unfused_ops(module) == {"concatenate": 1}


def test_tpu_dots_has_output_fusions():
    rows = fusions(_module("tpu_v5e", "jit_dots"))
    assert Counter(r.kind for r in rows) == {"kLoop": 8, "kOutput": 4}
    assert all(r.backend_kind is None for r in rows)  # TPU backend_config has no fusion_backend_config


@pytest.mark.parametrize("path", corpus_files("models/*multiple_gemm_fusions.hlo"), ids=lambda p: p.name)
def test_triton_gemm_fusions(path):
    rows = fusions(parse_hlo(read_text(path), str(path))[0])
    assert len(rows) == read_text(path).count(" fusion(")
    assert Counter((r.kind, r.backend_kind) for r in rows) == {("kCustom", "__triton_gemm"): 3, ("kLoop", None): 1}
    gemm = rows[0]
    assert (gemm.root, gemm.ops, gemm.output_bytes) == ("dot", {"convert": 1, "dot": 1}, 64 * 64 * 64 * 4)
    assert {t.kind: t.count for t in fusion_kind_totals(rows)} == {"__triton_gemm": 3, "kLoop": 1}


@pytest.mark.parametrize(
    "path", corpus_files("models/rudrite__kernels__hlo-after-optimizations.txt"), ids=lambda p: p.name
)
def test_rudrite_three_loop_fusions(path):
    module = parse_hlo(read_text(path), str(path))[0]
    rows = fusions(module)
    assert [(r.name, r.kind, r.root) for r in rows] == [
        ("multiply_reduce_fusion", "kLoop", "reduce"),
        ("subtract_exponential_fusion", "kLoop", "exponential"),
        ("broadcast_divide_fusion", "kLoop", "divide"),
    ]
    assert rows[0].op_name == "jit(block)/jit(main)/reduce_max"
    assert unfused_ops(module) == Counter({"dot": 5, "reduce": 1})


def test_custom_call_targets_inside_a_fusion_are_reported():
    # Inline snippet (hand-written): a kCustom fusion whose body calls a library kernel.
    text = """HloModule m

%fused (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %c = f32[4]{0} custom-call(%p), custom_call_target="__cublas$gemm"
}

ENTRY %e (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %f = f32[4]{0} fusion(%x), kind=kCustom, calls=%fused, backend_config={"fusion_backend_config":{"kind":"__custom_fusion"}}
}
"""
    (row,) = fusions(parse_hlo(text)[0])
    assert (row.kind, row.backend_kind, row.custom_call_targets) == ("kCustom", "__custom_fusion", ("__cublas$gemm",))


def test_cpu_ynnpack_fusions_are_read_as_backend_kinds(jax_version):
    """XLA:CPU wraps YNNPACK library calls as kCustom fusions, backend_config {"fusion_config":{"kind":"__ynn_fusion"}}."""
    (module,), _ = select_modules(load_dump(jax_version.dumps / "shape_branch"), module_re="module_0004")
    rows = fusions(module)
    assert [(r.name, r.kind, r.backend_kind) for r in rows if r.kind == "kCustom"] == [
        ("ynn_fusion", "kCustom", "__ynn_fusion")
    ]
    assert "__ynn_fusion" in {t.kind for t in fusion_kind_totals(rows)}


def test_largest_fusions_rank_by_bytes_moved(jax_version):
    from xlainspect.analysis.fusions import largest_fusions

    rows = [f for m in select_modules(load_dump(jax_version.dumps / "ragged_batch"))[0] for f in fusions(m)]
    top = largest_fusions(rows, 5)
    assert len(rows) == 20
    assert [r.output_bytes + r.operand_bytes for r in top] == [1204, 1204, 1204, 1204, 420]
    assert (top[4].module, top[4].name) == ("module_0000.jit_train_step", "wrapped_reduce-window")
