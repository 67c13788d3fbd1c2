"""`cost`: FLOPs, transcendentals and bytes equal to XLA's HloCostAnalysis (jaxlib's, when installed), the
roofline on a chip, the chip table, and the command's output."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from conftest import DUMPS, corpus_files, hlo_fixture_files, requires_corpus
from typer.testing import CliRunner

from xlainspect.analysis.chips import DTYPE_CLASSES, chip_table, default_chip_key, dtype_class, get_chip
from xlainspect.analysis.cost import TRANSCENDENTAL, module_cost
from xlainspect.analysis.cost.convolution import valid_positions
from xlainspect.cli.app import app
from xlainspect.hlo.attributes import WindowDimension
from xlainspect.hlo.parser import parse_hlo

CLEAN = DUMPS / "clean_run" / "module_0000.jit_train_step.cpu_after_optimizations.txt"
DOTS = DUMPS / "tpu_v5e" / "module_0219.jit_dots.cl_933746096.after_optimizations.txt"
OFFLOAD = DUMPS / "tpu_v5e" / "module_0254.jit_offload.cl_933746096.after_optimizations.txt"


def _module(path):
    return parse_hlo(path.read_text(), str(path))[0]


#: jaxlib's HloCostAnalysis on the CPU client (the binding jax 0.10.2 ships), run in a child process:
#: jax starts threads, and later tests fork (pty). Paths on stdin; JSON [flops, transcendentals, bytes]
#: or null where XLA's parser rejects the text.
XLA_COST = """
import json, sys
import jax
from jax._src.lib import _jax, hlo
client = jax.devices("cpu")[0].client
costs = {}
for path in sys.stdin.read().split("\\n"):
    try:
        cost = _jax.hlo_module_cost_analysis(client, hlo.hlo_module_from_text(open(path).read()))
    except Exception:
        costs[path] = None
        continue
    costs[path] = [cost.get("flops", 0), cost.get("transcendentals", 0), cost.get("bytes accessed", 0)]
print(json.dumps(costs))
"""


@pytest.fixture(scope="module")
def xla_costs() -> dict:
    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed")
    files = [*hlo_fixture_files(), *corpus_files("models/*"), *corpus_files("xla_parser_tests_20*/valid/*")]
    child = subprocess.run(
        [sys.executable, "-c", XLA_COST], input="\n".join(map(str, files)), capture_output=True, text=True, check=True
    )
    return json.loads(child.stdout)


def _assert_equals_xla(path, xla_costs) -> None:
    if xla_costs[str(path)] is None:
        pytest.skip("jaxlib's parser rejects the text (a newer XLA's syntax): nothing to compare")
    ours = module_cost(_module(path), None)
    # XLA sums in float32: equal within 1%, exactly for small modules.
    assert (ours.xla_flops, ours.xla_transcendentals, ours.xla_bytes_accessed) == pytest.approx(
        xla_costs[str(path)], rel=0.01, abs=0.5
    ), path.name


@pytest.mark.parametrize("path", hlo_fixture_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fixture_module_equals_xla_cost_analysis(path, xla_costs):
    """Every committed module, CPU and TPU, before and after optimizations: none differs."""
    _assert_equals_xla(path, xla_costs)


@requires_corpus
@pytest.mark.parametrize(
    "path", [p for p in corpus_files("models/*") if "layouts_and_names" not in p.name], ids=lambda p: p.name
)
def test_corpus_models_equal_xla_cost_analysis(path, xla_costs):
    """Convolutions (resnet50, mobilenet), while loops and big dots (llama 8B); layouts_and_names is
    left out because XLA's own parser rejects it."""
    _assert_equals_xla(path, xla_costs)


def test_clean_run_totals_and_dot_rows():
    cost = module_cost(_module(CLEAN), get_chip("h100"))
    assert (cost.flops, cost.transcendentals, cost.bytes_accessed) == (1393, 0, 3468)
    dot = next(op for op in cost.ops if op.name == "dot.2")  # f32[32,1] = f32[32,8] . f32[8,1]: 2 x 32 x 8
    assert (dot.flops, dot.bytes_read, dot.bytes_written) == (512, 1056, 128)
    assert dot.bound == "memory"
    assert dot.memory_seconds == pytest.approx((1056 + 128) / 3.35e12)
    assert cost.roofline_seconds == pytest.approx(sum(op.roofline_seconds for op in cost.ops))


def test_tpu_convolutions_and_padding():
    """A dot lowered to `convolution` with no spatial dims, a base-dilated one and a 3x3 conv."""
    cost = module_cost(_module(DOTS), get_chip("tpu-v5e"))
    assert cost.flops == 89140
    assert (cost.bytes_accessed, cost.padded_bytes_accessed) == (77336, 348388)
    conv = next(op for op in cost.ops if op.name == "fusion.3")
    assert (conv.kind, conv.flops, conv.op_name) == ("kOutput", 14520, "jit(dots)/conv_general_dilated")


def test_transcendentals_and_host_offload_bytes():
    cost = module_cost(_module(OFFLOAD), get_chip("tpu-v5e"))
    assert (cost.flops, cost.transcendentals) == (1024, 1024)  # 2 x f32[8,128]/4 devices: tanh, multiply
    copy_start = next(op for op in cost.ops if op.name == "copy-start")  # writes every tuple element
    assert (copy_start.bytes_read, copy_start.bytes_written) == (4096, 4096 + 4096 + 4)


def test_convolution_valid_positions():
    """The (output, tap) pairs whose input index lies inside the input (hlo_cost_analysis.cc GetConvolutionFlops)."""
    padded = WindowDimension(size=3, padding_low=1, padding_high=1)
    assert valid_positions(8, 3, 8, padded) == 22  # 3 taps x 8 outputs, 2 fall in padding
    dilated = WindowDimension(size=2, base_dilation=2)
    assert valid_positions(4, 2, 7, dilated) == 7  # holes of lhs dilation skipped


def test_collective_time_uses_bytes_per_device():
    path = DUMPS / "collectives_cpu" / "module_0000.jit_collectives_body.cpu_after_optimizations.txt"
    cost = module_cost(_module(path), get_chip("h100"))
    gather = next(op for op in cost.ops if op.name == "all_gather.3")
    assert gather.bound == "collective"
    assert gather.collective_seconds == pytest.approx(gather.collective_bytes / 450e9)


def test_chip_table_has_sources_and_every_dtype():
    table = chip_table()
    assert {"h100", "h200", "b200", "a100", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e"} <= set(table)
    for key, entry in table.items():
        assert set(entry["peak_flops"]) == set(DTYPE_CLASSES), key
        figures = {"peak_flops", "hbm_bandwidth", "ici_bandwidth"} | ({"launch_seconds"} & set(entry))
        assert set(entry["sources"]) == figures, key  # every figure cites its source
        assert all("https://" in source for source in entry["sources"].values()), key
    assert get_chip("tpu-v5e").peak_flops("f32") == 197e12  # no f32 unit: the bf16 figure
    assert get_chip("h100", peak_flops=1e15).peak_flops("s8") == 1e15
    assert (get_chip("h200").launch_seconds, get_chip("tpu-v5e").launch_seconds) == (1e-6, 0.0)  # no TPU figure


def test_dtype_classes_and_default_chips():
    assert [dtype_class(d) for d in ("bf16", "f16", "f32", "f8e4m3fn", "s8", "s32", "pred")] == [
        "bf16",
        "bf16",
        "f32",
        "fp8",
        "int8",
        "int8",
        "int8",
    ]
    assert default_chip_key("gpu", "sm_9.0a") == "h100"
    assert default_chip_key("gpu", "sm_8.0") == "a100"
    assert default_chip_key("tpu", None) is None


runner = CliRunner()


def test_cli_json_schema():
    result = runner.invoke(
        app,
        [
            "cost",
            str(DUMPS / "tpu_v5e"),
            "--chip",
            "tpu-v5e",
            "--function",
            "jit_dots",
            "--top",
            "2",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert [m["module"] for m in document["modules"]] == ["module_0219.jit_dots"]
    assert set(document["modules"][0]) >= {
        "module",
        "function",
        "flops",
        "transcendentals",
        "bytes_accessed",
        "padded_bytes_accessed",
        "roofline_seconds",
        "bound",
        "chip",
    }
    assert len(document["ops"]) == 2
    assert set(document["ops"][0]) >= {
        "module",
        "name",
        "opcode",
        "kind",
        "flops",
        "transcendentals",
        "bytes_read",
        "bytes_written",
        "arithmetic_intensity",
        "compute_seconds",
        "memory_seconds",
        "roofline_seconds",
        "bound",
        "op_name",
        "source",
    }


def test_cli_figures_without_a_chip_to_complete_them_are_a_usage_error():
    result = runner.invoke(app, ["cost", str(CLEAN.parent), "--peak-flops", "1e12"])
    assert result.exit_code == 2
    assert "--hbm-bandwidth" in result.output and "tpu-v5e" in result.output


def test_cli_cpu_dump_without_chip_counts_without_times():
    result = runner.invoke(app, ["cost", str(CLEAN.parent), "--format", "csv", "--top", "1"])
    assert result.exit_code == 0, result.output
    header, row = result.stdout.splitlines()[:2]
    assert header.startswith("module,name,opcode,kind,executions,trip_count,flops")
    assert row.startswith("module_0000.jit_train_step,dot.2,dot,dot,1,1,512,")
    assert (
        json.loads(runner.invoke(app, ["cost", str(CLEAN.parent), "--format", "json"]).stdout)["modules"][0][
            "roofline_seconds"
        ]
        is None
    )


def test_cli_overrides_and_unknown_chip(tmp_path):
    result = runner.invoke(
        app, ["cost", str(CLEAN), "--peak-flops", "1e12", "--hbm-bandwidth", "1e9", "--format", "json", "--top", "1"]
    )
    op = json.loads(result.stdout)["ops"][0]
    assert op["memory_seconds"] == pytest.approx((op["bytes_read"] + op["bytes_written"]) / 1e9)
    assert runner.invoke(app, ["cost", str(CLEAN), "--chip", "tpu-v9"]).exit_code == 2


def test_cli_html_roofline_is_self_contained(tmp_path):
    page = tmp_path / "roofline.html"
    result = runner.invoke(
        app, ["cost", str(DUMPS / "tpu_v5e"), "--chip", "tpu-v5e", "--function", "jit_dots", "--html", str(page)]
    )
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert text.count("<circle class='op") >= 3 and "class='roof bf16'" in text
    assert "http" not in text and "<script src" not in text


@requires_corpus
def test_xla_parser_test_modules_equal_xla_cost_analysis(xla_costs):
    """XLA's own parser tests (convolutions, while, conditional, sort, scatter, infeed/outfeed...): every
    module both parsers read counts the same FLOPs, transcendentals and bytes; those that leave shapes
    for XLA to infer are refused with the place (we do not infer shapes)."""
    from xlainspect.errors import HloParseError

    compared, refused, differ = 0, [], []
    for path in corpus_files("xla_parser_tests_20*/valid/*"):
        if xla_costs[str(path)] is None:  # XLA rejects it (another version's syntax): nothing to compare
            continue
        text = path.read_text()
        try:
            ours = module_cost(parse_hlo(text, str(path))[0], None)
        except HloParseError as error:
            refused.append((path.name, error.line))
            continue
        compared += 1
        if (ours.xla_flops, ours.xla_transcendentals, ours.xla_bytes_accessed) != pytest.approx(
            xla_costs[str(path)], rel=0.01, abs=0.5
        ):
            differ.append(path.name)
    assert compared >= 280 and differ == []
    assert ("0208_L3878_HloParserTest.InferDotShape.hlo", 5) in refused
    assert ("0209_L3892_HloParserTest.InferTupleShape.hlo", 5) in refused


def test_elementwise_opcodes_split_as_xla_splits_them(tmp_path):
    """One tiny module per elementwise opcode, in XLA's HLO text syntax (`name = shape opcode(operands)`,
    reference §1.5), counted by us and by jaxlib: one FLOP or one transcendental per element each."""
    if importlib.util.find_spec("jax") is None:
        pytest.skip("jax is not installed")
    unary = sorted(TRANSCENDENTAL - {"power", "atan2"}) + [
        "abs",
        "negate",
        "sign",
        "floor",
        "ceil",
        "round-nearest-even",
        "copy",
        "is-finite",
    ]
    binary = ["power", "atan2", "add", "divide", "maximum", "remainder", "compare"]
    paths = []
    for opcode in unary + binary:
        out = "pred" if opcode in ("is-finite", "compare") else "f32"
        operands = "p0" if opcode in unary else "p0, p1"
        extra = ", direction=LT" if opcode == "compare" else ""
        path = tmp_path / f"{opcode}.hlo"
        path.write_text(
            f"HloModule m_{opcode.replace('-', '_')}\nENTRY e {{\n  p0 = f32[4]{{0}} parameter(0)\n"
            f"  p1 = f32[4]{{0}} parameter(1)\n  ROOT r = {out}[4]{{0}} {opcode}({operands}){extra}\n}}\n"
        )
        paths.append(path)
    child = subprocess.run(
        [sys.executable, "-c", XLA_COST], input="\n".join(map(str, paths)), capture_output=True, text=True, check=True
    )
    xla = json.loads(child.stdout)
    for path in paths:
        ours = module_cost(_module(path), None)
        assert [ours.flops, ours.transcendentals, ours.bytes_accessed] == xla[str(path)], path.stem
    assert module_cost(_module(tmp_path / "acos.hlo"), None).transcendentals == 4
    assert module_cost(_module(tmp_path / "copy.hlo"), None).flops == 0


def test_cost_rows_come_out_the_same_whatever_the_string_hashing():
    """Ops of equal time ranked by printed order, not by a set's order (PYTHONHASHSEED varies per run)."""
    outputs = {
        subprocess.run(
            [sys.executable, "-m", "xlainspect", "--no-cache", "cost", str(DUMPS / "keras"), "--chip", "h100"]
            + ["--top", "0", "--format", "json"],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in (1, 2, 3)
    }
    assert len(outputs) == 1
