"""The HTML pages (`report --html`, `memory --html`) opened in headless Chromium: no console errors, every
section present, the page's script run to its end (it marks the body `data-ready`), and a screenshot saved
under build/screenshots/ (or $XLAINSPECT_SCREENSHOTS) to look at. Skips, saying why, without Chromium
(Debian's `chromium` package; .ci/run installs it when it runs as root)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import DUMPS, FIXTURES, GPU_CORPUS, REPO
from typer.testing import CliRunner

from xlainspect.cli.app import app

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SHOTS = Path(os.environ.get("XLAINSPECT_SCREENSHOTS", REPO / "build" / "screenshots"))
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium on PATH: apt-get install chromium (.ci/run does this as root) to run the browser tests",
)


def _chromium(page: Path, *args: str) -> subprocess.CompletedProcess:
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--enable-logging=stderr",
        f"--user-data-dir={page.parent / 'chromium-profile'}",
        *args,
        page.as_uri(),
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def _open(page: Path, shot_name: str) -> str:
    """The page's DOM after its scripts ran; fails on any console message or a page that did not load."""
    loaded = _chromium(page, "--dump-dom")
    console = [line for line in loaded.stderr.splitlines() if ":CONSOLE" in line]
    assert not console, "\n".join(console)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / shot_name
    shot.unlink(missing_ok=True)
    taken = _chromium(page, f"--screenshot={shot}", "--window-size=1280,2400")
    assert taken.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", taken.stderr[-2000:]
    return loaded.stdout


def _cli(*args: str) -> None:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output


def test_report_page_opens_with_every_section(tmp_path):
    page = tmp_path / "report.html"
    _cli("report", str(DUMPS / "tpu_v5e"), "--html", str(page))
    dom = _open(page, "report_tpu_v5e.png")
    assert 'data-ready="1"' in dom  # the script ran to its end
    for key in (
        "time",
        "compiles",
        "summary",
        "recompiles",
        "memory",
        "padding",
        "fusions",
        "copies",
        "collectives",
        "modules",
    ):
        assert f'<section id="{key}">' in dom, key
    assert dom.count('<polyline class="curve"') == 7  # the memory curves of the 7 modules with live ranges
    assert '<tr id="function-jit_layouts">' in dom and 'href="#module-module_0029.jit_layouts"' in dom


def test_memory_page_opens_with_a_curve_per_module(tmp_path):
    page = tmp_path / "memory.html"
    _cli("memory", str(DUMPS / "ragged_batch"), "--html", str(page))
    dom = _open(page, "memory_ragged_batch.png")
    assert 'data-ready="1"' in dom
    assert dom.count("<polyline") == 4 and dom.count('<section id="memory-module_') == 4


def test_a_broken_page_fails(tmp_path):
    """The checks above can fail: a script error is a console message, an empty page has no sections."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><script>undefinedFunction();</script></body></html>")
    with pytest.raises(AssertionError, match="Uncaught ReferenceError"):
        _open(page, "broken.png")


def test_a_click_on_a_heading_sorts_the_table(tmp_path):
    """The page's own sortBy, run by the browser as a click would: memory per module by total_bytes, ascending."""
    page = tmp_path / "sorted.html"
    _cli("report", str(DUMPS / "tpu_v5e"), "--html", str(page))
    click = "<script>document.querySelector('#memory thead th:nth-child(3)').click();</script></body>"
    page.write_text(page.read_text().replace("</body>", click))
    dom = _open(page, "report_sorted.png")
    memory = dom[dom.index('<section id="memory">') :]
    body = memory[memory.index("<tbody>") :]
    first_row = body[: body.index("</tr>")]
    assert "module_0244.jit_psum_sum" in first_row and "6,144" in first_row  # the smallest total first


def _json(*args: str) -> dict:
    result = CliRunner().invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _marks(dom: str, tag: str, chart: str) -> list[dict[str, str]]:
    """The `data-*` attributes of each `tag` inside the SVG `data-chart=chart`, as the browser kept them."""
    svg = re.search(rf'<svg[^>]*data-chart="{chart}".*?</svg>', dom, re.S)
    assert svg is not None, chart
    return [dict(re.findall(r'data-([\w-]+)="([^"]*)"', m)) for m in re.findall(rf"<{tag} ([^>]*data-[^>]*)>", svg[0])]


def test_report_with_a_profile_draws_time_charts_whose_numbers_are_the_profiles(tmp_path):
    page = tmp_path / "report.html"
    dump, trace = DUMPS / "profile_steps", FIXTURES / "profiles" / "profile_steps"
    _cli("report", str(dump), "--profile", str(trace), "--html", str(page))
    dom = _open(page, "report_profile_steps.png")
    assert 'data-ready="1"' in dom
    for key in ("time", "compiles", "summary", "recompiles", "memory", "fusions", "copies", "collectives", "modules"):
        assert f'<section id="{key}">' in dom, key
    profiled = _json("profile", str(trace), "--dump", str(dump), "--top", "0")
    per_function = _step_seconds(profiled)
    bars = _marks(dom, "text", "step-breakdown")
    assert {b["function"]: float(b["step-seconds"]) for b in bars} == pytest.approx(per_function)
    pieces = _marks(dom, "rect", "step-breakdown")
    assert sum(float(p["seconds"]) for p in pieces) == pytest.approx(per_function["jit_train_step"])
    compiles = _marks(dom, "rect", "compile-timeline")
    assert [(c["function"], float(c["start"]), float(c["seconds"]), c["recompile"]) for c in compiles] == [
        (c["function"], pytest.approx(c["start_seconds"]), pytest.approx(c["seconds"]), "yes" if i else "no")
        for i, c in enumerate(profiled["compiles"])
    ]
    assert "http://" not in dom and "https://" not in dom


def _step_seconds(profiled: dict) -> dict[str, float]:
    """Per function its mean device time a step, as `profile --format json` lists it."""
    return {f["function"]: f["seconds_per_step"] for f in profiled["functions"]}


GPU_DUMP, GPU_TRACE = DUMPS / "gpu_profile", FIXTURES / "profiles" / "gpu_profile"


def test_gpu_report_with_its_profile_opens_with_every_chart(tmp_path):
    """The H200 run: step time measured, a roofline of the achieved FLOP/s, the compile timeline and the
    memory curves; the dots are the profile's ops (FLOPs per byte, FLOPs over the time of one run)."""
    page = tmp_path / "report.html"
    _cli("report", str(GPU_DUMP), "--profile", str(GPU_TRACE), "--html", str(page))
    assert page.stat().st_size <= 5_000_000
    dom = _open(page, "report_gpu_profile.png")
    for key in ("time", "roofline", "compiles", "summary", "recompiles", "memory", "padding", "modules"):
        assert f'<section id="{key}">' in dom, key
    charts = set(re.findall(r'data-chart="([\w-]+)"', dom))
    assert {"step-breakdown", "roofline", "compile-timeline"} <= charts and dom.count("<svg") >= 4
    profiled = _json("profile", str(GPU_TRACE), "--dump", str(GPU_DUMP), "--top", "0")
    step = {b["function"]: float(b["step-seconds"]) for b in _marks(dom, "text", "step-breakdown")}
    expected = _step_seconds(profiled)
    assert step and all(step[f] == pytest.approx(expected[f]) for f in step)
    ops = {(op["module"], op["name"]): op for op in profiled["ops"]}
    dots = _marks(dom, "circle", "roofline")
    assert dots
    for dot in dots:
        op = ops[(dot["module"], dot["op"])]
        assert float(dot["intensity"]) == pytest.approx(op["flops"] / op["bytes_accessed"])
        # one execution's time (issue 39 item 3: a cuDNN call of several kernels is one execution)
        assert float(dot["flops-per-second"]) == pytest.approx(op["flops"] / op["seconds_per_execution"])


def test_gpu_report_without_a_profile_draws_costs_roofline(tmp_path):
    page = tmp_path / "report.html"
    _cli("report", str(GPU_DUMP), "--html", str(page))
    dom = _open(page, "report_gpu_roofline.png")
    costed = _json("cost", str(GPU_DUMP), "--top", "0")
    assert f"Roofline estimate on {costed['modules'][0]['chip']}, not measured" in dom
    ops = {(op["module"], op["name"]): op for op in costed["ops"]}
    dots = _marks(dom, "circle", "roofline")
    assert dots
    for dot in dots:
        op = ops[(dot["module"], dot["op"])]
        assert float(dot["intensity"]) == pytest.approx(op["arithmetic_intensity"])
        assert float(dot["flops-per-second"]) == pytest.approx(op["flops"] / op["roofline_seconds"])
    step = {b["function"]: float(b["step-seconds"]) for b in _marks(dom, "text", "step-breakdown")}
    last = max((m for m in costed["modules"] if m["function"] == "jit_train_step"), key=lambda m: _id(m["module"]))
    assert step["jit_train_step"] == pytest.approx(last["roofline_seconds"])


def _id(module: str) -> int:
    return int(module.partition(".")[0].removeprefix("module_"))


FIRST_SCREEN = (1400, 900)
"""The window a page's first screen must fit: a laptop's browser (issue 39 item 6)."""
_MEASURE = """<script>(function(){var seen={};
document.querySelectorAll('[data-first]').forEach(function(e){var r=e.getBoundingClientRect();
  seen[e.dataset.first]=[Math.round(r.left),Math.round(r.top),Math.round(r.right),Math.round(r.bottom)];});
document.body.dataset.boxes=JSON.stringify(seen);})();</script></body>"""


def _first_screen(page: Path, shot_name: str) -> tuple[dict[str, list[int]], str]:
    """The page opened in a `FIRST_SCREEN` window: each `data-first` element's box (left, top, right,
    bottom, in CSS pixels from the page's top left) and the DOM; the screenshot of that first screen
    is saved to look at."""
    page.write_text(page.read_text().replace("</body>", _MEASURE))
    window = f"--window-size={FIRST_SCREEN[0]},{FIRST_SCREEN[1]}"
    loaded = _chromium(page, "--dump-dom", window)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / shot_name
    shot.unlink(missing_ok=True)
    taken = _chromium(page, f"--screenshot={shot}", window)
    assert taken.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", taken.stderr[-2000:]
    boxes = re.search(r'data-boxes="([^"]*)"', loaded.stdout)
    assert boxes is not None, "the measuring script did not run"
    return json.loads(boxes[1].replace("&quot;", '"')), loaded.stdout


@pytest.mark.skipif(not (GPU_CORPUS / "cnn_profile").is_dir(), reason="../shared/gpu-corpus not present")
@pytest.mark.parametrize("name", ["cnn_profile", "mixer_profile"])
def test_the_first_screen_holds_the_step_the_user_waits_for(tmp_path, name):
    """Both shared GPU pages: the headline (the step, its busy share, what bounds it and what to do first),
    the stacked bar per step and the recompiles folded to a line each, all inside 1,400 x 900 px."""
    page = tmp_path / f"{name}.html"
    run = GPU_CORPUS / name
    _cli("report", str(run / "dump"), "--profile", str(run / "trace"), "--html", str(page))
    boxes, dom = _first_screen(page, f"first_screen_{name}.png")
    width, height = FIRST_SCREEN
    for key in ("headline", "steps", "recompiles"):
        assert key in boxes, (key, boxes)
        left, top, right, bottom = boxes[key]
        assert 0 <= left and right <= width and 0 <= top and bottom <= height, (key, boxes[key])
    headline = re.search(r'<p class="headline"[^>]*>([^<]*)</p>', dom)
    assert headline is not None and headline[1].startswith("jit_train_step: ") and "-bound: " in headline[1]
    assert "a step (median of " in headline[1]
    columns = {m["step"] for m in _marks(dom, "rect", "steps")}
    profiled = _json("profile", str(run / "trace"), "--dump", str(run / "dump"), "--top", "0")
    assert columns == {str(s["number"]) for s in profiled["steps"]}
    recompiles = re.search(r'<ul class="brief"[^>]*>(.*?)</ul>', dom, re.S)
    compiles = {"cnn_profile": 2, "mixer_profile": 6}[name]  # truth.json's backend compiles of jit_train_step
    assert recompiles is not None and f">jit_train_step: {compiles} compiles (" in recompiles[1]
    assert recompiles[1].count("<li>") == 2  # and the eager ops' line


def test_gpu_report_draws_each_allocators_memory_and_the_kernel_and_source_sections(tmp_path):
    """Issue 45: the H200 CNN run's page, opened: the kernels and source sections, and a memory curve per
    allocator whose peak (bytes and time) is `profile --format json`'s peak in the trace."""
    run = FIXTURES / "gpu_corpus" / "cnn_profile"
    page = tmp_path / "report.html"
    _cli("report", str(run / "dump"), "--profile", str(run / "trace"), "--html", str(page))
    dom = _open(page, "report_gpu_memory.png")
    for key in ("kernels", "source", "memory-over-time"):
        assert f'<section id="{key}">' in dom, key
    allocators = _json("profile", str(run / "trace"), "--dump", str(run / "dump"))["memory"]["allocators"]
    peaks = _marks(dom, "circle", "memory")
    first = next(a for a in allocators if a["name"] == "GPU_0_bfc")
    assert int(peaks[0]["peak-bytes"]) == first["peak_bytes_in_trace"] == 252_540_160
    assert float(peaks[0]["peak-seconds"]) == first["peak_time_seconds"]
    assert [m["step"] for m in _marks(dom, "rect", "memory")] == ["0", "1", "2", "3", "4", "5"]
