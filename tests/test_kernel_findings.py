"""Issue 45 items 2-4: the kernels that leave an H200's SMs short of work or its tensor cores unused, as
findings ranked with the others; each allocator's bytes in use over the run drawn with the steps; device
time by source line in the report. On the committed H200 traces (fixtures/gpu_corpus)."""

from __future__ import annotations

import re

import pytest
from conftest import FIXTURES

from xlainspect.analysis.commands.report import report_of
from xlainspect.analysis.profile import profile
from xlainspect.analysis.profile.kernels import LATENCY_WARPS, SM_LIMITS, contraction
from xlainspect.dump.directory import load_dump
from xlainspect.dump.xplane import read_trace
from xlainspect.report.dump_report import dump_report
from xlainspect.report.page import render_html, render_markdown
from xlainspect.report.profile_html import write_profile_html
from xlainspect.report.sections import A_STEP, MemoryCurve
from xlainspect.report.views.kernels import KERNELS_FOUND, kernel_findings, thinned

CORPUS = FIXTURES / "gpu_corpus"
CNN = CORPUS / "cnn_profile"
WGRAD = "sm90_xmma_wgrad_indexed_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64x32_warpgroupsize1x1x1_g1_execute_segment_k_on_kernel__5x_cudnn"  # noqa: E501
CONV = "module_9285.jit_train_step"


@pytest.fixture(scope="module")
def cnn():
    return profile(read_trace(CNN / "trace"), load_dump(CNN / "dump"))


@pytest.fixture(scope="module")
def mixer():
    run = CORPUS / "mixer_profile"
    return profile(read_trace(run / "trace"), load_dump(run / "dump"))


@pytest.fixture(scope="module")
def cnn_report():
    return dump_report(report_of(CNN / "dump", profile=CNN / "trace"))


def test_latency_warps_is_a_quarter_of_an_sm90_and_a_third_of_an_sm89():
    """16 warps (4 schedulers x 4 cycles) of the SM's 64 on sm80/sm90, of 48 on sm86/sm89."""
    assert LATENCY_WARPS * 32 / SM_LIMITS[(9, 0)].threads == 0.25
    assert LATENCY_WARPS * 32 / SM_LIMITS[(8, 9)].threads == pytest.approx(1 / 3)


def test_cnn_launches_short_of_warps_or_of_a_wave(cnn):
    """The costliest launch, cuDNN's tf32 wgrad kernel: 18.75% occupancy (12 of 64 warps an SM, held by
    168 registers a thread and 226 KiB of shared memory a block) and 126 blocks on the H200's 132 SMs at
    one block an SM; the same kernel at 128 threads a block holds 25% (16 warps: not short of warps) and
    fills a quarter of a wave."""
    assert len(cnn.kernels) == 67 and len(cnn.kernels_idle) == 57
    top = cnn.kernels_idle[0]
    assert (top.kernel.kernel, top.kernel.module, top.kernel.op) == (WGRAD, CONV, "cudnn-conv-bw-filter.4")
    assert top.resident_warps == 12.0 and top.waves == pytest.approx(126 / 132)
    assert top.kernel.limited_by == ["registers", "shared_memory"]
    small = next(k for k in cnn.kernels_idle if k.kernel.op == top.kernel.op and k.kernel.block == [128, 1, 1])
    assert small.kernel.kernel.startswith("sm90_xmma_wgrad_indexed_implicit_gemm_f32f32_tf32f32_f32_")
    assert (small.kernel.occupancy, small.resident_warps) == (0.25, None)
    assert small.waves == pytest.approx(126 / (132 * 4))
    full = [k for k in cnn.kernels if k.kernel == "loop_pad_fusion"]
    assert full[0].waves == pytest.approx(4356 / (132 * 16)) and full[0] not in [k.kernel for k in cnn.kernels_idle]


def test_the_convolution_on_cuda_cores_is_the_forward_conv_of_both_modules(cnn, mixer):
    """The first conv, `cudnn-conv.3`, ran cuDNN's FFMA direct kernel in both compiles; every other
    convolution and the Triton GEMM fusions have a tensor-core kernel; the mixer's matmuls all do."""
    found = [(c.op.module, c.op.name, c.op.kind, c.kernels) for c in cnn.cuda_core_contractions]
    kernel = next(k.kernel for k in cnn.kernels if k.op == "cudnn-conv.3" and k.module == CONV)
    assert kernel.startswith("void convolve_common_engine_float_NHWC<float, float, 1024")
    assert found == [
        (CONV, "cudnn-conv.3", "__cudnn$convForward", [kernel]),
        ("module_146159.jit_train_step", "cudnn-conv.3", "__cudnn$convForward", [kernel]),
    ]
    assert cnn.cuda_core_contractions[0].op.seconds_per_step == pytest.approx(59.3e-6, rel=1e-3)
    assert mixer.cuda_core_contractions == []
    assert len(mixer.kernels_idle) == len(mixer.kernels) == 414  # a small model: every grid under a wave


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("__cublas$gemm", True),
        ("__cublas$lt$matmul", True),
        ("__cudnn$convBackwardFilter", True),
        ("__cudnn$fusion", True),
        ("__triton_nested_gemm_fusion", True),
        ("dot", True),
        ("convolution", True),
        ("__triton", False),
        ("kLoop", False),
        (None, False),
    ],
)
def test_contractions_in_xlas_vocabulary(kind, expected):
    assert contraction(kind) is expected


def test_kernel_findings_cost_their_device_time_a_step(cnn):
    """The launches short of work, the costliest `KERNELS_FOUND`, and both CUDA-core convolutions; each
    costed at its device time a step, the run's at its time in the trace, with the op's source line."""
    found = kernel_findings(cnn)
    assert len(found) == KERNELS_FOUND + 2 and all(f.unit == A_STEP and f.section == "kernels" for f in found)
    first = found[0]
    assert first.cost == pytest.approx(80.65e-6, rel=1e-3) and first.run_seconds == pytest.approx(403e-6, rel=1e-3)
    assert first.source.endswith("shared_programs/cnn_profile.py:21")
    assert first.text.startswith(f"{CONV} cudnn-conv-bw-filter.4: kernel sm90_xmma_wgrad_indexed_implicit_gemm")
    assert (
        "holds 12 warps an SM (occupancy 18.8%, limited by registers (168 a thread) and shared memory (231,424 "
        "bytes a block)), under the 16 that hide arithmetic latency; its grid of 126 blocks fills 95% of what "
        "the GPU's SMs hold at once (under one wave)" in first.text
    )
    conv = [f for f in found if "on CUDA cores" in f.text]
    assert [round(f.cost * 1e6, 1) for f in conv] == [59.3, 48.4]
    assert conv[0].text.startswith(f"{CONV} cudnn-conv.3 (__cudnn$convForward): a matmul or convolution on CUDA")


def test_report_ranks_kernel_findings_with_the_others(cnn_report):
    """The summary ranks the kernels section's findings by the run's seconds among the time section's:
    the wgrad launch (403 us a run) after the op losses of 600 and 550 us, before the dgrad op's 323 us."""
    ranked = [(f.section, round((f.run_seconds or 0.0) * 1e6)) for f in cnn_report.findings()][:8]
    assert ranked[3:8] == [("time", 600), ("time", 550), ("kernels", 403), ("kernels", 386), ("time", 323)]
    assert [s.key for s in cnn_report.sections if s.key in ("kernels", "source", "memory-over-time")] == [
        "kernels",
        "source",
        "memory-over-time",
    ]
    markdown = render_markdown(cnn_report)
    assert "**80.7 us a step (403 us a run)** (kernels): module_9285.jit_train_step cudnn-conv-bw-filter.4" in markdown


def test_memory_curve_is_thinned_with_its_peak_exact(cnn):
    """GPU_0_bfc's 2,072 events: 400 spans of time keep 213 points (most spans hold none), the peak of
    252,540,160 bytes in use among them at its time; 10 spans keep at most 22 (with the first and last)."""
    bfc = next(a for a in cnn.memory if a.name == "GPU_0_bfc")
    assert len(bfc.timeline) == bfc.events == 2072
    points = thinned(bfc.timeline)
    assert len(points) == 213 and set(points) <= set(bfc.timeline) and points == sorted(points)
    assert max(p[1] for p in points) == bfc.peak_bytes_in_trace == 252_540_160
    assert (bfc.peak_time_seconds, bfc.peak_bytes_in_trace) in points
    few = thinned(bfc.timeline, 10)
    assert len(few) <= 22 and (bfc.peak_time_seconds, bfc.peak_bytes_in_trace) in few
    assert few[0] == bfc.timeline[0] and few[-1] == bfc.timeline[-1]
    host = next(a for a in cnn.memory if a.name == "xla_gpu_host_bfc")
    assert thinned(host.timeline) == host.timeline and len(host.timeline) == 14


def test_report_page_draws_memory_over_the_run_and_source_lines(cnn_report):
    """A curve per allocator with the six steps as bands and its peak's bytes and time; the source
    section's rows, most device time first: the two conv lines, 46.4% of the device time on line 21."""
    section = next(s for s in cnn_report.sections if s.key == "memory-over-time")
    curves = [c for c in section.charts if isinstance(c, MemoryCurve)]
    assert [(c.allocator, len(c.points), c.peak[1]) for c in curves] == [
        ("GPU_0_bfc", 213, 252_540_160),
        ("xla_gpu_host_bfc", 14, 1280),
    ]
    page = render_html(cnn_report)
    svg = re.search(r"<svg[^>]*data-chart='memory'.*?</svg>", page, re.S)
    assert svg is not None
    assert re.findall(r"data-step='(\d+)'", svg[0]) == ["0", "1", "2", "3", "4", "5"]
    assert "data-points='213'" in svg[0] and "data-peak-bytes='252540160'" in svg[0]
    assert "data-peak-seconds='1.185129365'" in svg[0] and "peak 241 MiB in use at 1.19 s" in svg[0]
    assert "GPU_0_bfc: bytes in use over the run, 213 of its 2,072 events drawn" in page
    source = next(s for s in cnn_report.sections if s.key == "source")
    rows = source.tables[0].rows
    assert len(rows) == 8 and [r[0].rpartition(":")[2] for r in rows[:3]] == ["21", "20", "22"]
    assert rows[0][0].endswith("cnn_profile.py:21") and rows[0][4] == "46.4%"


def test_trace_alone_page_has_the_findings_the_curves_and_the_source_lines(tmp_path):
    """Item 5: without --dump the trace's embedded HLO still names the ops' kinds and source lines."""
    alone = profile(read_trace(CNN / "trace"))
    page = tmp_path / "profile.html"
    write_profile_html(alone, page)
    text = page.read_text()
    assert text.count("data-chart='memory'") == 2 and "data-peak-bytes='252540160'" in text
    assert text.count("on CUDA cores") == 2 and "id='source'" in text
    assert re.search(r"<ol>(.*?)</ol>", text, re.S)[0].count("<li>") == KERNELS_FOUND + 2
