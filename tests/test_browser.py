"""The HTML pages (`report --html`, `memory --html`) opened in headless Chromium: no console errors, every
section present, the page's script run to its end (it marks the body `data-ready`), and a screenshot saved
under build/screenshots/ (or $XLAINSPECT_SCREENSHOTS) to look at. Skips, saying why, without Chromium
(Debian's `chromium` package; .ci/run installs it when it runs as root)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import DUMPS, REPO
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
    assert dom.count("<polyline") == 7  # the memory curves of the 7 modules with live ranges
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
