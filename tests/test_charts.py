"""The report's charts read as people read them (issue 39 item 6): bytes in KiB/MiB/GiB, rates with an SI
prefix, every op kind named whole in the step chart's legend, the roofline's ceilings labelled with the
chip's own figures. Real inputs: the committed gpu_profile (H200) and tpu_v5e dumps, and the shared GPU
corpus' cnn_profile where it is present."""

from __future__ import annotations

import re

import pytest
from conftest import DUMPS, FIXTURES, GPU_CORPUS

from xlainspect.analysis.chips import get_chip
from xlainspect.analysis.commands.report import report_of
from xlainspect.report.cost_html import Point, roofline_svg
from xlainspect.report.dump_report import dump_report
from xlainspect.report.page import render_html
from xlainspect.report.units import byte_size, rate

CNN = GPU_CORPUS / "cnn_profile"


@pytest.mark.parametrize(
    ("count", "said"),
    [(512, "512 bytes"), (1023, "1,023 bytes"), (57_860, "56.5 KiB"), (1023 * 1024, "1023 KiB"), (3 << 30, "3 GiB")],
)
def test_bytes_are_said_in_powers_of_1024(count, said):
    assert byte_size(count) == said


def test_rates_take_an_si_prefix_and_never_e_notation():
    assert rate(989.5e12, "FLOP/s") == "990 TFLOP/s"
    assert rate(4.8e12, "B/s") == "4.8 TB/s"
    assert rate(999.7e9, "B/s") == "1000 GB/s"


def test_the_roofline_labels_its_ceilings_with_the_chips_figures():
    svg = roofline_svg(get_chip("h200"), [Point(1.0, 1e12, 1.0, "op memory", "an op")])
    labels = re.findall(r"<text class='ceiling'[^>]*>([^<]*)</text>", svg)
    assert labels == [
        "bf16 peak 990 TFLOP/s",
        "bf16 ridge 206 FLOP/B",  # 989.5e12 / 4.8e12
        "f32 peak 494 TFLOP/s",
        "f32 ridge 103 FLOP/B",
        "HBM 4.8 TB/s",
    ]


def test_memory_curves_read_in_binary_units():
    page = render_html(dump_report(report_of(DUMPS / "tpu_v5e")))
    curve = page[page.index("<section id='memory-module_0219.jit_dots'>") :]
    curve = curve[: curve.index("</svg>")]
    axis = re.findall(r"<text class='label' x='2'[^>]*>([^<]*)</text>", curve)
    assert len(axis) == 2 and all(re.fullmatch(r"[\d.]+ (KiB|MiB|GiB)|\d+ bytes", a) for a in axis), axis


@pytest.mark.skipif(not CNN.is_dir(), reason="../shared/gpu-corpus not present")
def test_the_step_legend_names_each_cudnn_kind_whole():
    """cnn_profile's convolutions run as cuDNN custom calls whose kinds share their first 17 characters."""
    report = dump_report(report_of(CNN / "dump", profile=CNN / "trace"))
    page = render_html(report)
    svg = re.search(r"<svg class='chart' data-chart='step-breakdown'.*?</svg>", page, re.S)
    assert svg is not None
    legend = re.findall(r"<text class='legend'[^>]*>([^<]*)</text>", svg[0])
    assert {"__cudnn$convBackwardFilter", "__cudnn$convBackwardInput", "__cudnn$convForward"} <= set(legend)
    assert len(legend) == len(set(legend))


def test_a_long_function_name_keeps_its_whole_name_as_a_tooltip():
    page = render_html(dump_report(report_of(DUMPS / "gpu_profile", profile=FIXTURES / "profiles" / "gpu_profile")))
    labels = re.findall(r"<text class='label' x='4'[^>]*><title>([^<]*)</title>([^<]*)</text>", page)
    assert labels and all(
        shown == name or shown.endswith("…") and name.startswith(shown[:-1]) for name, shown in labels
    )
