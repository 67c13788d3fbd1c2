"""`cost` per call as executed: while loops times their trip count, a conditional's most expensive branch,
cuDNN convolutions and fused attention by target, on the loop twins (the same program looped and
unrolled, CPU with jax 0.10.2 and an H200 with jax 0.11.2), with XLA's static figures beside."""

from __future__ import annotations

import json

import pytest
from conftest import DUMPS
from typer.testing import CliRunner

from xlainspect.analysis.chips import dump_chip_key
from xlainspect.analysis.cost import module_cost, op_executions
from xlainspect.analysis.cost.handlers import HANDLERS
from xlainspect.analysis.cost.trip_count import iterations
from xlainspect.cli.app import app
from xlainspect.dump.directory import load_dump
from xlainspect.errors import HloParseError
from xlainspect.hlo.parser import parse_hlo

CPU, GPU = DUMPS / "loop_twins", DUMPS / "gpu_loop_twins"


def _module(folder, function, stage="after"):
    suffix = "before_optimizations.txt" if stage == "before" else "after_optimizations.txt"
    (path,) = [
        p
        for p in folder.glob(f"module_*.{function}.*{suffix}")
        if p.name.endswith(f"_{suffix}") or p.name.endswith(f".{suffix}")
    ]
    return parse_hlo(path.read_text(), str(path))[0]


def _expected(folder) -> dict:
    return json.loads((folder.parent / f"{folder.name}.compiles.json").read_text())["expected"]


def test_fori_loop_executes_what_its_unrolled_twin_counts():
    """3 micro-batches of a CNN: the looped module's executed FLOPs equal XLA's count of the unrolled
    module (cost_analysis() recorded by jax) within 2%; XLA's static count of the loop is a third."""
    expected = _expected(CPU)
    looped = module_cost(_module(CPU, "jit_fori_microbatches"), None)
    unrolled = expected["jit_unrolled_microbatches"]["xla_cost"]["flops"]
    assert looped.flops == pytest.approx(unrolled, rel=0.02)
    assert looped.xla_flops == pytest.approx(expected["jit_fori_microbatches"]["xla_cost"]["flops"], rel=0.01)
    assert [(loop.trip_count, loop.executions) for loop in looped.loops] == [(3, 1)]
    convolutions = [op for op in looped.ops if op.opcode == "convolution"]
    assert len(convolutions) == 4 and {(op.executions, op.trip_count) for op in convolutions} == {(3, 3)}
    assert all(op.flops == 3 * op.flops_per_execution == 3 * op.xla_flops for op in convolutions)


def test_conditional_counts_its_most_expensive_branch():
    expected = _expected(CPU)
    cond = module_cost(_module(CPU, "jit_cond_step"), None)
    assert cond.flops == pytest.approx(expected["jit_heavy_branch"]["xla_cost"]["flops"], abs=1)
    assert cond.transcendentals == expected["jit_heavy_branch"]["xla_cost"]["transcendentals"]
    assert cond.branches == {"cond.3.clone": 1}  # branch_computations={%region_0.1, %region_1.2}
    runs = {(op.computation, op.executions) for op in cond.ops if op.computation.startswith("region_")}
    assert runs == {("region_0.1", 0), ("region_1.2", 1)}


def test_scan_executes_what_its_unrolled_twin_counts():
    """lax.scan over 4 layers, gradients of the weights and the input: forward and backward loops run 4
    times each, 12 matmuls of 2 x 256 x 256 x 8 (forward, weight and input gradient per layer) as in the
    unrolled twin. The executed FLOPs equal XLA's count of the twin within 2% on the CPU (jax 0.10.2) and
    3% on the H200 (jax 0.11.2), where the twin's fusions repeat more elementwise work; the matmuls equal."""
    for folder, within in ((CPU, 0.02), (GPU, 0.03)):
        scan = module_cost(_module(folder, "jit_scan_layers"), None)
        assert [loop.trip_count for loop in scan.loops] == [4, 4]
        unrolled = module_cost(_module(folder, "jit_unrolled_layers"), None)
        big = lambda m: sum(op.flops for op in m.ops if op.flops_per_execution >= 1048576)  # noqa: E731
        assert big(scan) == big(unrolled) == 12 * 1048576
        twin = _expected(folder)["jit_unrolled_layers"]["xla_cost"]["flops"]
        assert scan.flops == pytest.approx(twin, rel=within)
        assert scan.xla_flops == pytest.approx(_expected(folder)["jit_scan_layers"]["xla_cost"]["flops"], rel=0.01)


def _valid_taps(size: int, kernel: int, stride: int, pad: int) -> int:
    """(output position, kernel tap) pairs that land inside the input, by enumeration."""
    outputs = (size + 2 * pad - kernel) // stride + 1
    return sum(0 <= o * stride + k - pad < size for o in range(outputs) for k in range(kernel))


def test_cudnn_convolutions_count_the_convolution_they_compute():
    """On the H200 the CNN's convolutions are cuDNN custom calls. Each counts 2 x batch x in x out
    features x valid taps of the forward convolution, read from its shapes here: conv1 3->16 features,
    3x3 pad 1 on 16x16; conv2 16->32, 3x3 stride 2 on the 17x17 input XLA pads to; backward-input and
    backward-filter the same as the forward they differentiate. Bytes leave out cuDNN's scratch."""
    module = _module(GPU, "jit_fori_microbatches")
    cost = module_cost(module, None)
    conv1 = 2 * 8 * 3 * 16 * _valid_taps(16, 3, 1, 1) ** 2
    conv2 = 2 * 8 * 16 * 32 * _valid_taps(17, 3, 2, 0) ** 2
    calls = {op.name: op for op in cost.ops if op.opcode == "custom-call"}
    assert {name: op.flops_per_execution for name, op in calls.items()} == {
        "cudnn-conv.3": conv1,
        "cudnn-conv-bw-filter.3": conv1,
        "cudnn-conv.4": conv2,
        "cudnn-conv-bw-input.2": conv2,
        "cudnn-conv-bw-filter.4": conv2,
    }
    assert {op.executions for op in calls.values()} == {3}
    assert all(op.xla_flops == -1 for op in calls.values())  # XLA's HloCostAnalysis: unknown
    filter_grad = calls["cudnn-conv-bw-filter.4"]  # reads input f32[8,17,17,16] and f32[8,8,8,32]
    assert filter_grad.bytes_per_execution == 4 * (8 * 17 * 17 * 16 + 8 * 8 * 8 * 32 + 32 * 3 * 3 * 16)
    assert cost.not_counted == {}


def test_cudnn_fused_attention_counts_its_matmuls():
    """jax.nn.dot_product_attention(implementation='cudnn'): B=4, heads 4, 256 x 256 scores, head size 64.
    Forward Q.K^T and P.V; backward recomputes Q.K^T and runs dQ, dK, dP, dV (flash attention)."""
    cost = module_cost(_module(GPU, "jit_attention_cudnn"), None)
    scores = 4 * 4 * 256 * 256
    calls = {op.kind: op for op in cost.ops if op.opcode == "custom-call"}
    assert calls["__cudnn$fmhaSoftmax"].flops == 2 * scores * (64 + 64)
    assert calls["__cudnn$fmhaSoftmaxBackward"].flops == 2 * scores * (3 * 64 + 2 * 64)
    # XLA's unfused attention keeps P for the backward: one Q.K^T fewer than flash attention runs
    twin = _expected(GPU)["jit_attention_xla"]["xla_cost"]["flops"]
    assert cost.flops == pytest.approx(twin + 2 * scores * 64, rel=0.03)


def test_trip_count_from_the_induction_variable_pattern():
    """Before optimizations the while has no backend_config: the count comes from the loop's pattern
    (start 0, compare LT 3, step 1), on CPU and on jax 0.11's compact `%p#0` operands."""
    for folder in (CPU, GPU):
        module = _module(folder, "jit_fori_microbatches", "before")
        assert "known_trip_count" not in "".join(i.attributes.get("backend_config", "") for i in module.instructions())
        assert [loop.trip_count for loop in module_cost(module, None).loops] == [3]


def test_unknown_trip_count_is_counted_once_and_said():
    """The same loop compared against the loop state's other s32 (a bound only known at run time, as a
    fori_loop with a traced bound prints it): no count is known, the body counts once, stderr says so."""
    text = (CPU / "module_0008.jit_fori_microbatches.before_optimizations.txt").read_text()
    module = parse_hlo(text, "x")[0]
    while_ = next(i for i in module.instructions() if i.opcode == "while")
    condition = module.computations_by_name[while_.attributes["condition"].lstrip("%")]
    root = condition.root
    state = condition.instructions[0].name
    loose = text.replace(
        f"%{root.operands[1]}), direction=LT",
        "%bound), direction=LT",
    ).replace(f"  ROOT %{root.name} =", f"  %bound = s32[] get-tuple-element(%{state}), index=1\n  ROOT %{root.name} =")
    cost = module_cost(parse_hlo(loose, "x")[0], None)
    assert [loop.trip_count for loop in cost.loops] == [None]
    assert {op.trip_count for op in cost.ops if op.opcode == "convolution"} == {None}
    assert {op.executions for op in cost.ops if op.opcode == "convolution"} == {1}
    assert cost.flops == pytest.approx(module_cost(module, None).xla_flops, rel=0.01)

    from xlainspect.analysis.commands.cost import CostReport
    from xlainspect.report.views.cost import cost_notes

    assert any("trip count not known for 1 while loop" in n for n in cost_notes(CostReport([cost], [])))


# Custom-call syntax as in XLA's hlo_parser_test.cc (`custom-call(...), custom_call_target="foo"`).
UNKNOWN_TARGET = """HloModule custom
ENTRY %main (p: f32[8,8]) -> f32[8,8] {
  %p = f32[8,8]{1,0} parameter(0)
  ROOT %custom-call = f32[8,8]{1,0} custom-call(%p), custom_call_target="foo\\"bar"
}
"""


def test_unknown_custom_call_target_counts_zero_and_is_listed():
    cost = module_cost(parse_hlo(UNKNOWN_TARGET, "x")[0], None)
    assert (cost.flops, cost.bytes_accessed, cost.not_counted) == (0, 0, {'foo"bar': 1})
    assert (cost.xla_flops, cost.xla_bytes_accessed) == (-1, -1)


def test_a_bug_in_a_rule_is_not_a_damaged_file(monkeypatch):
    """A TypeError in our counting surfaces as itself, not as 'cannot count' (HloParseError)."""

    def broken(*args):
        raise TypeError("a bug")

    monkeypatch.setitem(HANDLERS, "dot", broken)
    with pytest.raises(TypeError, match="a bug"):
        module_cost(_module(CPU, "jit_cond_step"), None)


SHAPELESS_CONVOLUTION = """HloModule m
ENTRY e {
  a = f32[1,4,4,1]{3,2,1,0} parameter(0)
  b = f32[1,1,1,1]{3,2,1,0} parameter(1)
  ROOT c = custom-call(a, b), custom_call_target="__cudnn$convForward"
}
"""
"""A cuDNN convolution whose result shape is left out, as XLA's parser test InferDotShape
(hlo_parser_test.cc) leaves a dot's: a shape XLA cannot infer for a custom call."""


def test_a_custom_call_without_its_shape_is_named_not_a_crash():
    """The rules read the call's result shape: where the text leaves it out, the place is named."""
    with pytest.raises(HloParseError, match="the shape of c is not printed") as raised:
        module_cost(parse_hlo(SHAPELESS_CONVOLUTION, "x")[0], None)
    assert raised.value.line == 5


BAD_WINDOW = """HloModule m
ENTRY e {
  a = f32[1,4,4,1]{3,2,1,0} parameter(0)
  b = f32[3,3,1,1]{3,2,1,0} parameter(1)
  ROOT c = f32[1,2,2,1]{3,2,1,0} convolution(a, b), window={size=3x3 stride=1}, dim_labels=b01f_01io->b01f
}
"""
"""A convolution whose window lists one stride for two dimensions: XLA's parser rejects it (hlo_parser.cc
ParseWindow wants each field per dimension); a test string in XLA's syntax, not a dump."""


def test_a_malformed_window_is_named_not_counted():
    """The typed window decoder rejects what XLA's parser would; the count names the line."""
    with pytest.raises(HloParseError, match="window fields of unequal length") as raised:
        module_cost(parse_hlo(BAD_WINDOW, "x")[0], None)
    assert raised.value.line == 5


def test_op_executions_give_profile_the_runs_per_call():
    runs = op_executions(_module(GPU, "jit_fori_microbatches"))
    executions, cost = runs["cudnn-conv.4"]
    assert executions == 3 and cost.flops == 2 * 8 * 16 * 32 * 64 * 9


def test_chip_is_read_from_the_dump():
    keys = {
        folder: {dump_chip_key(m) for m in load_dump(DUMPS / folder).modules}
        for folder in ("tpu_v4", "tpu_v5e", "tpu_v6e", "gpu_loop_twins", "clean_run")
    }
    assert keys == {
        "tpu_v4": {"tpu-v4"},
        "tpu_v5e": {"tpu-v5e"},
        "tpu_v6e": {"tpu-v6e"},
        "gpu_loop_twins": {"h200"},  # sm_9.0a: H100 or H200; gpu_target_config.pbtxt says "NVIDIA H200"
        "clean_run": {None},
    }


def test_cli_tpu_and_gpu_dumps_need_no_chip():
    runner = CliRunner()
    result = runner.invoke(app, ["cost", str(DUMPS / "tpu_v5e"), "--function", "jit_dots", "--format", "json"])
    assert result.exit_code == 0, result.output
    (module,) = json.loads(result.stdout)["modules"]
    assert module["chip"] == "tpu-v5e" and module["roofline_seconds"] > 0
    # the 10 costliest ops (JSON keeps every op unless --top is given): all in the loop's body
    result = runner.invoke(
        app, ["cost", str(GPU), "--function", "jit_fori_microbatches", "--format", "json", "--top", "10"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    (module,) = data["modules"]
    assert module["chip"] == "h200" and module["loops"][0]["trip_count"] == 3
    assert module["flops"] > 90 * module["xla_flops"]  # XLA counts the convolutions (custom calls) as nothing
    assert {op["executions"] for op in data["ops"]} == {3}


# fixtures/dumps/gpu_cublas: XLA 0.11.2 on an H200 with --xla_gpu_enable_triton_gemm=false
# --xla_gpu_enable_cublaslt=true runs each dot as a `__cublas$lt$matmul` custom call.
CUBLAS = DUMPS / "gpu_cublas"


@pytest.mark.parametrize(
    ("function", "flops", "read", "written"),
    [
        # 2 x 128 x 512 x 256, then the bias add and relu's maximum per output element
        ("jit_gemm_bias_relu", 2 * 128 * 512 * 256 + 2 * 128 * 512, 2 * (128 * 256 + 256 * 512 + 512), 2 * 128 * 512),
        # batch 8 in the dot dimension numbers: 2 x 8 x 64 x 32 x 96
        ("jit_batched_matmul", 2 * 8 * 64 * 32 * 96, 4 * (8 * 64 * 96 + 8 * 96 * 32), 4 * 8 * 64 * 32),
        # beta = 1: C is added (one add per output element) and read
        ("jit_gemm_plus_matrix", 2 * 64 * 64 * 128 + 64 * 64, 4 * (64 * 128 + 128 * 64 + 64 * 64), 4 * 64 * 64),
    ],
    ids=["bias_relu", "batched", "beta"],
)
def test_cublas_gemms_count_their_dot_and_epilogue(function, flops, read, written):
    """`relu(x @ w + b)` (epilogue BIAS_RELU), `einsum("bij,bjk->bik")` (batch dims), `m @ k + a` (beta 1)."""
    cost = module_cost(_module(CUBLAS, function), None)
    (gemm,) = [op for op in cost.ops if op.opcode == "custom-call"]
    assert (gemm.flops, gemm.bytes_read, gemm.bytes_written) == (flops, read, written)  # no workspace
    assert (gemm.xla_flops, cost.not_counted) == (-1, {})


def test_gpu_fori_loop_executes_what_its_unrolled_twin_executes():
    """On the H200 both twins run their convolutions as cuDNN custom calls (XLA's static count misses
    them: 0.19 and 0.55 MFLOP); counted by target, the loop of 3 executes what the unrolled steps do."""
    looped = module_cost(_module(GPU, "jit_fori_microbatches"), None)
    unrolled = module_cost(_module(GPU, "jit_unrolled_microbatches"), None)
    assert [loop.trip_count for loop in looped.loops] == [3] and unrolled.loops == []
    assert looped.flops == pytest.approx(unrolled.flops, rel=0.001)
    expected = _expected(GPU)
    assert unrolled.xla_flops == pytest.approx(expected["jit_unrolled_microbatches"]["xla_cost"]["flops"], rel=0.01)


def test_nested_loops_multiply_their_trip_counts():
    """gpu_profile's train_step: 3 blocks under lax.scan inside a 2-micro-batch lax.fori_loop, so a
    block's ops run 6 times per call, the micro-batch's other ops 2 times, the update once."""
    paths = sorted((DUMPS / "gpu_profile").glob("module_*.jit_train_step.*gpu_after_optimizations.txt"))
    module = parse_hlo(paths[0].read_text(), str(paths[0]))[0]
    cost = module_cost(module, None)
    assert sorted((loop.trip_count, loop.executions) for loop in cost.loops) == [(2, 1), (3, 2), (3, 2)]
    assert {(op.executions, op.trip_count) for op in cost.ops} == {(6, 3), (2, 2), (1, 1)}
    assert cost.flops == sum(op.flops for op in cost.ops)


@pytest.mark.parametrize(
    ("start", "bound", "step", "direction", "trips"),
    [(0, 3, 1, "LT", 3), (0, 10, 3, "LT", 4), (0, 3, 1, "LE", 4), (5, 0, -1, "GT", 5), (5, 0, -2, "GE", 3)]
    + [(0, 6, 2, "NE", 3), (0, 5, 2, "NE", None), (0, 3, -1, "LT", None), (4, 3, 1, "LT", 0)],
)
def test_iterations_of_a_counted_loop(start, bound, step, direction, trips):
    assert iterations(start, bound, step, direction) == trips


# From XLA's GPU AOT compilation test (gpu_aot_compilation_test.cc, ExportAndLoadExecutableWithTriton),
# its backend_config (the kernel's Triton IR) left empty.
TRITON_CALL = """HloModule Test

ENTRY main {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = (f32[],f32[]) custom-call(a, b), custom_call_target="__gpu$xla.gpu.triton", backend_config="{}"
}
"""


def test_triton_kernel_given_as_ir_is_listed_not_counted():
    """A Pallas/Triton kernel names no HLO computation to count: 0, listed (never a skipped file)."""
    cost = module_cost(parse_hlo(TRITON_CALL, "x")[0], None)
    assert (cost.flops, cost.not_counted) == (0, {"__gpu$xla.gpu.triton": 1})
