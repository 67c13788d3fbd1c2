"""The `fusions`, `copies`, `collectives`, `ops` and `graph` commands end to end (CliRunner)."""

from __future__ import annotations

import json
import shutil

import networkx as nx
from conftest import DUMPS
from typer.testing import CliRunner

from xlainspect.cli.app import app

runner = CliRunner()
RING = DUMPS / "collectives_cpu" / "module_0002.jit_ring_body.cpu_after_optimizations.txt"


def _json(*args: str) -> dict:
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_collectives_json_has_the_documented_keys():
    document = _json("collectives", str(DUMPS / "tpu_v5e"), "--function", "jit_collectives_body")
    rows = document["collectives"]
    assert len(rows) == 4
    permute = next(r for r in rows if r["kind"] == "collective-permute")
    assert (permute["opcode"], permute["async"]) == ("collective-permute-start", True)
    assert {"module", "name", "opcode", "kind", "async", "group_size", "num_groups", "payload_bytes"} <= set(rows[0])
    assert {t["kind"]: t["count"] for t in document["totals"]} == {
        "collective-permute": 1,
        "all-reduce": 1,
        "all-to-all": 1,
        "all-gather": 1,
    }


def test_fusions_and_copies_json_and_module_regex():
    fusions = _json("fusions", str(DUMPS / "collectives_cpu"), "--module-re", "ring")
    assert [f["name"] for f in fusions["fusions"]] == ["wrapped_add", "multiply_add_fusion", "wrapped_compare"]
    assert fusions["fusions"][1]["ops"] == {"add": 1, "broadcast": 1, "constant": 1, "multiply": 1}
    assert fusions["unfused_ops"] == {"module_0002.jit_ring_body": {"copy": 2}}
    copies = _json("copies", str(DUMPS / "tpu_v5e"), "--function", "jit_offload")
    (row,) = copies["copies"]
    assert (row["opcode"], row["from_layout"], row["to_layout"], row["bytes"]) == (
        "copy-start",
        "{1,0:T(8,128)}",
        "{1,0:T(8,128)S(5)}",
        4096,
    )


def test_before_stage_and_csv(jax_version):
    result = runner.invoke(
        app,
        [
            "collectives",
            str(jax_version.dumps / "collectives_cpu"),
            "--function",
            "jit_collectives_body",
            "--stage",
            "before",
            "--format",
            "csv",
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("module,computation,name,opcode,kind,is_async")
    assert len(lines) == 1 + 5  # one of each kind before optimizations too


def test_ops_markdown_per_function():
    result = runner.invoke(
        app, ["ops", str(DUMPS / "tpu_v5e"), "--function", "jit_offload", "--per-function", "--format", "markdown"]
    )
    assert result.exit_code == 0, result.output
    assert "| function | opcode | variants | total |" in result.stdout
    assert "| jit_offload | copy-start | 1 | 1 |" in result.stdout


def test_skipped_file_is_named_on_stderr(tmp_path):
    dump = tmp_path / "dump"
    shutil.copytree(DUMPS / "collectives_cpu", dump)
    damaged = dump / RING.name
    damaged.write_text(RING.read_text()[:2000])
    result = runner.invoke(app, ["collectives", str(dump), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert {r["module"] for r in json.loads(result.stdout)["collectives"]} == {
        "module_0000.jit_collectives_body",
        "module_0004.jit_auto_sharded",
    }
    assert f"skipped {damaged}" in result.stderr


def test_graph_around_in_three_formats(tmp_path):
    dot = runner.invoke(app, ["graph", str(RING), "--around", "psum_invariant.7", "--depth", "1"])
    assert dot.exit_code == 0, dot.output
    assert dot.stdout.startswith("digraph neighbourhood {")
    assert dot.stdout.count(" -> ") == 2 and "psum_invariant.7\\nall-reduce f32[8,4]{1,0}" in dot.stdout
    mermaid = runner.invoke(app, ["graph", str(RING), "--around", "%psum_invariant.7", "--format", "mermaid"])
    assert mermaid.stdout.startswith("flowchart TD") and "style" in mermaid.stdout
    graphml = runner.invoke(
        app, ["graph", str(RING), "--around", "psum_invariant.7", "--depth", "2", "--format", "graphml"]
    )
    path = tmp_path / "n.graphml"
    path.write_text(graphml.stdout)
    graph = nx.read_graphml(path)
    names = {data["name"] for _, data in graph.nodes(data=True)}
    assert {"psum_invariant.7", "get-tuple-element.19", "multiply_add_fusion", "ppermute.3"} <= names
    assert [d["name"] for _, d in graph.nodes(data=True) if d["center"] == "true"] == ["psum_invariant.7"]


def test_graph_unknown_instruction_is_a_usage_error():
    result = runner.invoke(app, ["graph", str(RING), "--around", "nosuch"])
    assert result.exit_code == 2
    assert "no instruction named 'nosuch'" in result.stderr
