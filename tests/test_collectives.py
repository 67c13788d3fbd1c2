"""Collectives on the committed CPU and TPU dumps and the corpus, cross-checked with the raw text."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import DUMPS, corpus_files, twins
from typer.testing import CliRunner

from xlainspect.analysis.collectives import collective_totals, collectives, execution_counts
from xlainspect.cli.app import app
from xlainspect.dump.directory import load_dump
from xlainspect.dump.files import read_text
from xlainspect.dump.selection import select_modules
from xlainspect.hlo.parser import parse_hlo

SYNC_KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")


def _rows(scenario: str, function: str, dumps=DUMPS) -> list:
    (module,), _ = select_modules(load_dump(dumps / scenario), function=function)
    return collectives(module)


def _raw_counts(path) -> Counter:
    text = read_text(path)
    return Counter({kind: text.count(f" {kind}(") + text.count(f" {kind}-start(") for kind in SYNC_KINDS})


def test_cpu_collectives_body_has_one_of_each_with_exact_bytes(jax_version):
    rows = {r.kind: r for r in _rows("collectives_cpu", "jit_collectives_body", jax_version.dumps)}
    assert sorted(rows) == sorted(SYNC_KINDS)
    assert (rows["all-gather"].payload_bytes, rows["all-gather"].bytes_per_device) == (1024, 896)  # f32[64,4], 7/8
    assert (rows["all-reduce"].payload_bytes, rows["all-reduce"].bytes_per_device) == (128, 224)  # 2*7/8
    assert (rows["reduce-scatter"].payload_bytes, rows["reduce-scatter"].bytes_per_device) == (128, 112)
    assert rows["all-to-all"].payload_bytes == 128  # eight f32[1,4] operands
    assert rows["collective-permute"].source_target_pairs == 8
    # jax 0.11.2's XLA prints the groups in mesh form (`replica_groups=mesh['x'=8] {'x'}`), 0.10.2's as a list
    form = "list" if jax_version.version == "0.10.2" else "mesh"
    assert {(r.num_groups, r.group_size, r.group_form) for k, r in rows.items() if k != "collective-permute"} == {
        (1, 8, form)
    }
    assert all(r.channel_id == 1 and not r.is_spmd_generated and not r.is_async for r in rows.values())


def test_collectives_in_a_while_body_are_multiplied_by_the_known_trip_count(jax_version):
    rows = {r.kind: r for r in _rows("collectives_cpu", "jit_ring_body", jax_version.dumps)}
    assert sorted(rows) == ["all-reduce", "collective-permute"]
    assert {r.executions for r in rows.values()} == {5}
    assert rows["all-reduce"].bytes_per_step == 5 * 224
    assert rows["collective-permute"].bytes_per_step == 5 * 128
    totals = {t.kind: t for t in collective_totals(list(rows.values()))}
    assert totals["all-reduce"].bytes_per_step == 1120


def test_partitioner_inserted_all_reduce_with_mesh_axes_groups(jax_version):
    (row,) = _rows("collectives_cpu", "jit_auto_sharded", jax_version.dumps)
    assert (row.kind, row.group_form, row.group_size, row.payload_bytes, row.is_spmd_generated) == (
        "all-reduce",
        "mesh",
        8,
        16,
        True,
    )


def test_tpu_collectives_after_optimization():
    rows = _rows("tpu_v5e", "jit_collectives_body")
    assert Counter(r.kind for r in rows) == {"all-reduce": 1, "all-to-all": 1, "all-gather": 1, "collective-permute": 1}
    by_kind = {r.kind: r for r in rows}
    merged = by_kind["all-reduce"]  # reduce-scatter + psum became one tuple all-reduce
    assert merged.shape.startswith("(bf16[8,3]") and merged.payload_bytes == 96
    assert (merged.replica_groups, merged.num_groups, merged.group_size) == ("{{0,1,2,3}}", 1, 4)
    permute = by_kind["collective-permute"]
    assert (permute.opcode, permute.is_async, permute.done, permute.payload_bytes) == (
        "collective-permute-start",
        True,
        "collective-permute-done",
        48,
    )


def test_tpu_while_without_known_trip_count_has_unknown_executions():
    rows = _rows("tpu_v5e", "jit_ring_body")
    assert len(rows) == 2 and {r.executions for r in rows} == {None}


@pytest.mark.parametrize(("jax_version", "scenario"), twins("collectives_cpu", "tpu_v5e"))
def test_counts_match_the_opcodes_in_the_text(jax_version, scenario):
    dump = load_dump(jax_version.dumps / scenario)
    for dump_module in dump.modules:
        path = dump_module.hlo_file().path
        found = Counter(r.kind for r in collectives(dump_module.module()))
        assert found == _raw_counts(path), path


def test_async_wrapped_collective_is_counted_once():
    # Inline snippet (hand-written, unsugared async form as reference §4.2 describes), not a dump.
    text = """HloModule m, replica_count=4

%wrapped (p: f32[8]) -> f32[32] {
  %p = f32[8]{0} parameter(0)
  ROOT %ag = f32[32]{0} all-gather(%p), replica_groups={}, dimensions={0}
}

ENTRY %e (x: f32[8]) -> f32[32] {
  %x = f32[8]{0} parameter(0)
  %s = ((f32[8]{0}), f32[32]{0}) async-start(%x), calls=%wrapped
  ROOT %d = f32[32]{0} async-done(%s)
}
"""
    (row,) = collectives(parse_hlo(text)[0])
    assert (row.kind, row.is_async, row.done, row.group_form, row.group_size) == ("all-gather", True, "d", "empty", 4)
    assert (row.payload_bytes, row.bytes_per_device) == (128, 96)


def test_execution_counts_follow_nested_calls():
    (module,), _ = select_modules(load_dump(DUMPS / "collectives_cpu"), function="jit_ring_body")
    counts = execution_counts(module)
    assert counts[module.entry.name] == 1
    assert counts["region_0.2_spmd"] == 5


@pytest.mark.parametrize("path", corpus_files("models/*llama31_8b*.hlo"), ids=lambda p: p.name)
def test_llama_corpus_iota_groups(path):
    rows = collectives(parse_hlo(read_text(path), str(path))[0])
    assert Counter(r.kind for r in rows) == {"all-reduce": 1197, "all-gather": 450}
    assert Counter(r.kind for r in rows) == +_raw_counts(path)
    assert {(r.group_form, r.num_groups, r.group_size) for r in rows} == {("iota", 1, 8)}
    embedding = rows[0]
    assert (embedding.shape, embedding.payload_bytes) == ("bf16[128256,4096]{1,0}", 128256 * 4096 * 2)
    assert embedding.bytes_per_device == 128256 * 4096 * 2 * 7 // 8


def test_a_program_on_one_device_is_one_sentence_not_empty_tables():
    """clean_run compiled for one CPU device: no collective. A terminal (or a pipe) reads one sentence;
    Markdown writes it over the table's header; JSON and CSV keep their shape."""

    def run(*args: str) -> str:
        result = CliRunner().invoke(app, ["collectives", str(DUMPS / "clean_run"), *args])
        assert result.exit_code == 0, result.output
        return result.stdout

    assert run() == "no collectives in the modules read\n"
    assert run("--format", "markdown").startswith("**no collectives in the modules read**\n\n| module | name | kind |")
    assert run("--format", "json") == '{\n  "collectives": [],\n  "totals": []\n}\n'
    assert (
        run("--format", "csv").startswith("module,computation,name,opcode,kind,")
        and run("--format", "csv").count("\n") == 1
    )
