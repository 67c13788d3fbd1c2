"""`profile`'s kernel stats and allocators' memory against XProf's own numbers on the same GPU traces.

XProf 2.24.2's converters (kernel_stats, memory_profile, framework_op_stats) were run on the committed
traces by `fixtures/xprof_truth.py`, which wrote what they said into `fixtures/gpu_corpus/<run>/xprof.json`
(the command and the version are in the file). XProf is not needed to run these tests."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from conftest import FIXTURES

from xlainspect.analysis.profile import profile
from xlainspect.analysis.profile.kernels import (
    SM_LIMITS,
    device_limits,
    kernel_stats,
    read_details,
    resident_blocks,
    tensor_cores,
)
from xlainspect.analysis.profile.ops import op_events
from xlainspect.dump.directory import load_dump
from xlainspect.dump.xplane import read_trace

CORPUS = FIXTURES / "gpu_corpus"
RUNS = ("cnn_profile", "mixer_profile")
WGRAD = "sm90_xmma_wgrad_indexed_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64x32_warpgroupsize1x1x1_g1_execute_segment_k_on"  # noqa: E501


@pytest.fixture(scope="module")
def traces():
    return {name: read_trace(CORPUS / name / "trace") for name in RUNS}


@pytest.fixture(scope="module")
def reports(traces):
    return {name: profile(traces[name], load_dump(CORPUS / name / "dump")) for name in RUNS}


def _xprof(name: str) -> dict:
    return json.loads((CORPUS / name / "xprof.json").read_text())


def _xprof_launches(name: str) -> dict[tuple, list[float]]:
    """XProf's kernel_stats rows summed per launch (its rows are per launch and TensorFlow op)."""
    table = _xprof(name)["kernel_stats"]
    found: dict[tuple, list[float]] = {}
    for row in table["rows"]:
        item = dict(zip(table["columns"], row, strict=True))
        key = (item["kernel_name"], int(item["registers_per_thread"]), int(item["shmem_bytes"]))
        key += (item["block_dim"], item["grid_dim"], item["occupancy_pct"])
        total = found.setdefault(key, [0, 0.0])
        total[0] += int(item["occurrences"])
        total[1] += item["total_duration_us"]
    return found


def _launch(row) -> tuple:
    shared = row.static_shared_bytes + row.dynamic_shared_bytes
    block, grid = ",".join(map(str, row.block)), ",".join(map(str, row.grid))
    return (row.kernel, row.registers_per_thread, shared, block, grid, row.occupancy * 100)


def _per_launch(rows) -> dict[tuple, list[float]]:
    found: dict[tuple, list[float]] = {}
    for row in rows:
        total = found.setdefault(_launch(row), [0, 0.0])
        total[0] += row.count
        total[1] += row.total_seconds * 1e6
    return found


@pytest.mark.parametrize("name", RUNS)
def test_every_launch_equals_xprof_kernel_stats(name, traces, reports):
    """The profile's kernels and those it leaves to autotuning, per launch, are XProf's rows: the same
    launches (kernel, registers, shared memory, block, grid, occupancy), counts and durations."""
    trace, report = traces[name], reports[name]
    events = trace.events
    kernels = np.flatnonzero(events.on_device() & events.has("kernel_details"))
    others = np.setdiff1d(kernels, report.op_events.rows)
    tuning, skipped = kernel_stats(trace, op_events(events, others), [])
    ours = _per_launch(report.kernels)
    for launch, (count, micros) in _per_launch(tuning).items():
        ours.setdefault(launch, [0, 0.0])
        ours[launch][0] += count
        ours[launch][1] += micros
    xprof = _xprof_launches(name)
    assert not skipped and not report.kernels_skipped
    assert set(ours) == set(xprof)
    assert len(xprof) == {"cnn_profile": 265, "mixer_profile": 863}[name]
    for launch, (count, micros) in xprof.items():
        assert ours[launch][0] == count, launch
        assert ours[launch][1] == pytest.approx(micros, abs=1e-3), launch


def test_a_launch_only_the_program_runs(reports):
    """cnn_profile's weight-gradient convolution (cuDNN's sm90 tf32 xmma kernel on 126 blocks): XProf's
    row, 20 runs, 403.263 us, occupancy 18.75%, is the profile's, on its HLO op."""
    [row] = [k for k in reports["cnn_profile"].kernels if k.kernel.startswith(WGRAD) and k.grid == [126, 1, 1]]
    assert (row.count, round(row.total_seconds * 1e6, 3), row.module) == (20, 403.263, "module_9285.jit_train_step")
    assert (row.registers_per_thread, row.static_shared_bytes, row.dynamic_shared_bytes) == (168, 0, 231424)
    assert (row.op, row.block, row.occupancy, row.tensor_cores) == ("cudnn-conv-bw-filter.4", [384, 1, 1], 0.1875, True)
    assert row.limited_by == ["registers", "shared_memory"]


@pytest.mark.parametrize("name", RUNS)
def test_kernel_counts_sum_to_the_placed_kernels(name, traces, reports):
    """Every kernel execution of the compiled functions is in one row (memcpys and memsets are no kernels),
    and with the dump every one sits on an HLO op, none on a command buffer."""
    report = reports[name]
    kernels = traces[name].events.has("kernel_details")[report.op_events.rows]
    assert (
        sum(k.count for k in report.kernels) == int(kernels.sum()) == {"cnn_profile": 630, "mixer_profile": 2010}[name]
    )
    assert report.placed[0] == report.placed[1]
    assert not [k for k in report.kernels if k.op.startswith("command_buffer")]


def test_without_the_dump_graph_kernels_stay_on_their_command_buffer(traces):
    """No dump, no thunk sequence: a CUDA graph's kernels keep their `command_buffer_N` op, the rest
    their own; every kernel execution is still counted once."""
    report = profile(traces["cnn_profile"])
    assert sum(k.count for k in report.kernels) == 630
    buffers = sum(k.count for k in report.kernels if k.op.startswith("command_buffer"))
    assert (buffers, report.placed[1] - report.placed[0]) == (120, 121)  # and one memcpy of a graph


@pytest.mark.parametrize("name", RUNS)
def test_occupancy_recomputed_from_the_sm_limits_is_the_traces(name, traces):
    """The CUDA occupancy calculator's rules with the H200's limits (compute capability 9.0, 132 SMs, as
    the trace's GPU plane says) give every launch's `occ_pct`."""
    trace = traces[name]
    limits, sms = device_limits(trace)
    assert (limits, sms) == (SM_LIMITS[(9, 0)], 132)
    events = trace.events
    codes = np.unique(events.codes("kernel_details")[events.on_device()])
    launches = [read_details(events.strings[c]) for c in codes.tolist() if c >= 0]
    assert len(launches) == {"cnn_profile": 224, "mixer_profile": 547}[name]
    for launch in launches:
        blocks = min(resident_blocks(launch, limits).values())
        assert blocks * int(np.prod(launch.block)) / limits.threads == pytest.approx(launch.occupancy)


@pytest.mark.parametrize(
    ("details", "reason"),
    [
        ("regs:16 static_shared:0 dynamic_shared:0 grid:1,1 block:1,1,1 occ_pct:1", "three dimensions"),
        ("regs:x static_shared:0 dynamic_shared:0 grid:1,1,1 block:1,1,1 occ_pct:1", "not a number"),
        ("regs:16 grid:1,1,1 block:1,1,1", "no static_shared, dynamic_shared, occ_pct"),
        ("", "no regs"),
    ],
)
def test_a_malformed_kernel_details_is_skipped_with_its_reason(details, reason):
    assert reason in read_details(details)


@pytest.mark.parametrize(
    ("kernel", "expected"),
    [
        (
            "sm90_xmma_wgrad_indexed_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64x32_warpgroupsize1x1x1_g1_execute_segment_k_on_kernel__5x_cudnn",
            True,
        ),  # noqa: E501
        (
            "sm80_xmma_wgrad_implicit_gemm_indexed_f32f32_f32f32_f32_nhwckrsc_nhwc_tilesize32x32x8_stage3_warpsize1x2x1_g1_ffma_execute_kernel__5x_cudnn",
            False,
        ),  # noqa: E501
        (
            "sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
            False,
        ),  # noqa: E501
        (
            "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize64x32x64_stage5_warpsize2x1x1_g1_tensor16x8x8_execute_kernel__5x_cudnn",
            True,
        ),  # noqa: E501
        ("sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel", True),
        (
            "void cutlass__5x_cudnn::Kernel<cutlass_tensorop_s1688wgrad_optimized_tf32_256x64_16x4_nhwc_align4>(Params)",
            True,
        ),
        (
            "void cask_plugin__5x_cudnn::xmma__5x_cudnn::init_device_workspace_kernel<xmma__5x_cudnn::Params>(Params)",
            False,
        ),
        ("void convolve_common_engine_float_NHWC<float, float, 1024, 5, 5, 3, 3, 3, true, false>(int)", False),
        ("nvjet_sm90_tss_128x32_64x10_1x2_h_bz_NTT", True),
        ("ampere_sgemm_128x64_nn", False),
        ("gemm_fusion_dot_4", True),
        ("loop_add_fusion", False),
    ],
)
def test_tensor_cores_by_the_kernels_names(kernel, expected):
    """XProf says false for cuDNN's sm90 tf32 xmma kernels and true for sm80 FFMA xmma GEMMs; the names'
    own instruction classes say otherwise."""
    assert tensor_cores(kernel, None) is expected


def test_triton_gemm_fusions_by_their_kind():
    assert tensor_cores("fusion_17", "__triton_nested_gemm_fusion") is True
    assert tensor_cores("fusion_17", "kLoop") is False


def test_allocators_equal_xprof_memory_profile(traces, reports):
    """cnn_profile: each allocator's lifetime peak, its peak in the trace, when, the bytes and
    fragmentation there, and the capacity, as XProf's memory_profile; its allocations live at the peak
    hold XProf's (those made in its peak step), and the others with those made before the trace are what
    XProf calls "unused preallocated device memory"."""
    xprof = _xprof("cnn_profile")["memory_profile"]
    memory = {a.name: a for a in reports["cnn_profile"].memory}
    assert set(memory) == set(xprof) == {"GPU_0_bfc", "xla_gpu_host_bfc"}
    for name, theirs in xprof.items():
        ours, summary = memory[name], theirs["profileSummary"]
        assert ours.peak_bytes_in_use == int(summary["peakBytesUsageLifetime"])
        assert ours.peak_bytes_in_trace == int(summary["peakStats"]["peakBytesInUse"])
        assert ours.bytes_allocated == int(summary["peakStats"]["heapAllocatedBytes"])
        assert ours.bytes_reserved == int(summary["peakStats"]["stackReservedBytes"])
        assert ours.fragmentation == pytest.approx(summary["peakStats"]["fragmentation"])
        assert ours.capacity_bytes == int(summary["memoryCapacity"])
    gpu = memory["GPU_0_bfc"]
    assert (gpu.peak_bytes_in_use, gpu.peak_bytes_in_trace, gpu.peak_step) == (272_711_424, 252_540_160, 4)
    # XProf's peakStatsTimePs (1,185,100,711,000) counts from the event's line (62,751 ns after the
    # trace's clock base; the trace's first event is at 34,097 ns)
    assert gpu.peak_time_seconds == pytest.approx((1_185_100_711 + 62_751 - 34_097) / 1e9, abs=1e-9)
    assert memory["xla_gpu_host_bfc"].peak_bytes_in_use == 1280
    theirs = Counter(xprof["GPU_0_bfc"]["activeAllocationBytes"])
    ours = Counter(a.bytes for a in gpu.live)
    assert theirs <= ours and sum(theirs.values()) == 7 and len(gpu.live) == 12
    unmapped = int(xprof["GPU_0_bfc"]["specialAllocations"][0]["allocationBytes"])
    assert sum((ours - theirs).elements()) + gpu.made_before_trace_bytes == unmapped == 6_636_288
    assert sum(ours.elements()) + gpu.made_before_trace_bytes == gpu.bytes_allocated


def test_no_allocations_no_memory(reports):
    assert reports["mixer_profile"].memory == []
    assert _xprof("mixer_profile")["memory_profile"] == {}
