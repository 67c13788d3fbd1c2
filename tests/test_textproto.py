"""dump.textproto: top-level fields of the protobuf text files beside a dump, on committed real ones."""

from __future__ import annotations

from conftest import DUMPS

from xlainspect.dump.files import read_text
from xlainspect.dump.textproto import fields, int_field, text_field


def test_fields_of_real_side_files():
    target = read_text(DUMPS / "gpu_loop_twins" / "module_0000.jit_scan_layers.gpu_target_config.pbtxt")
    assert text_field([target], "device_description_str") == "NVIDIA H200"  # quoted: unquoted
    assert text_field(["", target], "device_description_str") == "NVIDIA H200"  # the first text that has it
    assert text_field([target], "no_such_field") is None
    options = read_text(DUMPS / "dump_cap" / "module_0002.jit_step.debug_options")
    assert int_field(options, "xla_dump_max_hlo_modules") == 3
    config = read_text(DUMPS / "gpu_profile" / "module_11932.jit_multiply.config.pbtxt")
    assert int_field(config, "xla_dump_max_hlo_modules") == -1  # nested in debug_options, indented
    assert int_field(target, "device_description_str") is None  # not an integer


def test_every_field_of_a_real_debug_options_file():
    options = fields(read_text(DUMPS / "dump_cap" / "module_0002.jit_step.debug_options"))
    assert options["xla_dump_max_hlo_modules"] == "3"
    assert options["xla_dump_to"].startswith('"') and options["xla_dump_to"].endswith('"')  # a string keeps its quotes
    assert all(name == name.strip() and ":" not in name for name in options)
