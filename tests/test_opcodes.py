"""Opcodes from a newer XLA parse, are kept as written, and get a note (not an error)."""

from __future__ import annotations

from conftest import hlo_fixture_files
from typer.testing import CliRunner

from xlainspect.cli import app
from xlainspect.dump.files import read_text
from xlainspect.hlo.opcodes import is_known_opcode, name_opcode, unknown_opcodes
from xlainspect.hlo.parser import parse_hlo


def test_every_fixture_opcode_is_known():
    opcodes = {i.opcode for path in hlo_fixture_files() for m in parse_hlo(read_text(path)) for i in m.instructions()}
    assert {"fusion", "all-reduce", "collective-permute-start", "copy-start", "while"} <= opcodes
    assert unknown_opcodes(opcodes) == []


def test_sugared_async_forms_are_known():
    assert is_known_opcode("reduce-scatter-start") and is_known_opcode("custom-call-done")
    assert not is_known_opcode("warp-shuffle") and not is_known_opcode("warp-shuffle-start")


def test_unknown_opcode_and_attribute_parse_with_a_note(tmp_path):
    text = (
        "HloModule future\n\nENTRY %main (p: f32[8]) -> f32[8] {\n  %p = f32[8]{0} parameter(0)\n"
        "  ROOT %w = f32[8]{0} warp-shuffle(%p), lane_mask={0xff}, new_knob=fast\n}\n"
    )
    (module,) = parse_hlo(text)
    root = module.entry.root
    assert (root.opcode, root.attributes) == ("warp-shuffle", {"lane_mask": "{0xff}", "new_knob": "fast"})
    path = tmp_path / "future.hlo"
    path.write_text(text)
    result = CliRunner().invoke(app, ["parse", str(path), "--format", "csv"])
    assert result.exit_code == 0
    assert f"{path},future,1,2,main" in result.stdout
    assert "note: opcodes unknown to xlainspect" in result.stderr and "warp-shuffle" in result.stderr


def test_the_opcode_a_default_instruction_name_says():
    # XLA's default names: the opcode, made unique with `.N` (names as jax 0.11's GPU dumps print them)
    assert name_opcode("all-reduce-start.2") == "all-reduce-start"
    assert name_opcode("fusion") == "fusion"
    assert name_opcode("loop_add_fusion.1") == "loop_add_fusion"  # a name XLA's passes gave: itself
