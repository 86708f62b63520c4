"""Open report.html in headless Chromium: it loads, and every embedded plot decodes."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from rocmkit.cli.main import main

from .test_report import AMD, NV, _run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Appended to a copy of the report: after load, write each image's decoded width into the DOM.
PROBE = (
    "<script>window.addEventListener('load', () => document.body.setAttribute('data-widths',"
    " [...document.images].map(i => i.complete ? i.naturalWidth : -1).join(',')))</script>"
)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")


@pytest.fixture
def report_html(tmp_path):
    a = _run("rocm", "AMD Instinct MI300X", "gfx942", AMD).save(tmp_path / "MI300X")
    b = _run("cuda", "NVIDIA H100", "sm_90", NV).save(tmp_path / "H100")
    out = tmp_path / "report.html"
    assert main(["report", str(a.parent), str(b.parent), "-o", str(out)]) == 0
    return out


def _chromium(tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / "profile"
    cmd = [CHROMIUM or "chromium", *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def _decoded_widths(tmp_path, html) -> tuple[list[int], str]:
    """Load a copy of `html` with PROBE appended: the width each image decoded to, and the DOM."""
    probed = tmp_path / "probed.html"
    probed.write_text(html.read_text() + PROBE)
    done = _chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", probed.as_uri())
    widths = re.search(r'data-widths="([^"]*)"', done.stdout)
    assert widths, done.stderr[-1000:]
    return [int(w) for w in widths.group(1).split(",")], done.stdout


@pytest.mark.slow
def test_chromium_decodes_every_plot(report_html, tmp_path):
    values, dom = _decoded_widths(tmp_path, report_html)
    assert len(values) == 4 and all(w > 0 for w in values)
    assert "MI300X / H100" in dom


@pytest.mark.slow
def test_chromium_screenshot_is_not_blank(report_html, tmp_path):
    from PIL import Image

    shot = tmp_path / "shot.png"
    _chromium(tmp_path, "--window-size=1000,1400", f"--screenshot={shot}", report_html.as_uri())
    with Image.open(shot) as image:
        colors = image.convert("RGB").getcolors(maxcolors=1_000_000)
    assert (
        colors is not None and len(colors) > 50
    )  # text, tables and coloured bars, not a blank page


@pytest.mark.slow
def test_chromium_shows_the_inference_plots(tmp_path):
    from .test_report_infer import _infer_run

    a = _infer_run("rocm", "AMD Instinct MI300X", 1200.0, 0.5).save(tmp_path / "MI300X")
    b = _infer_run("cuda", "NVIDIA H100", 1000.0, 0.4).save(tmp_path / "H100")
    report = tmp_path / "infer.html"
    assert main(["report", str(a.parent), str(b.parent), "-o", str(report)]) == 0
    values, dom = _decoded_widths(tmp_path, report)
    assert len(values) == 2 and all(w > 0 for w in values)  # latency curve, throughput bars
    assert "Inference: server benchmark" in dom and "TTFT p50 (ms)" in dom
