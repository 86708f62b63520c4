"""Inference results in `rocmkit report`: the inference table, ratios between machines, plots, and
an end-to-end `rocmkit infer serve` against the stub server followed by `rocmkit report`."""

from __future__ import annotations

import base64
import re
import sys
from pathlib import Path

import pytest

from rocmkit.cli.main import main
from rocmkit.report import build_document, render
from rocmkit.results import Measurement, RunResult, load_result

from .test_report import _platform

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
RATES = ("1", "4", "inf")


def _serve_rows(tokens_per_s: float, joules_per_token: float | None) -> list[Measurement]:
    rows = []
    for i, rate in enumerate(RATES):
        params = {"model": "qwen3-8b", "api": "chat", "workload": "random",
                  "request_rate": rate, "max_concurrency": 64, "burstiness": 1.0}  # fmt: skip
        figures = {
            "ttft_ms_p50": (20.0 * (i + 1), "ms"),
            "ttft_ms_p99": (50.0 * (i + 1), "ms"),
            "ttft_ms_p90": (40.0 * (i + 1), "ms"),
            "tpot_ms_p50": (10.0 + i, "ms"),
            "itl_ms_p50": (10.0 + i, "ms"),
            "output_tokens_per_s": (tokens_per_s * (i + 1), "tokens/s"),
            "request_per_s": (float(i + 1), "req/s"),
            "num_failed": (0, "count"),
            "energy_j_per_token": (joules_per_token, "J/token"),
        }
        extra = {} if joules_per_token else {"skipped": "no GPU power sensor on a CPU-only run"}
        for metric, (value, unit) in figures.items():
            name = f"qwen3-8b rate={rate} concurrency=64"
            rows.append(Measurement(suite="infer-serve", name=name, metric=metric, value=value,
                                    unit=unit, params=params, extra=extra))  # fmt: skip
    return rows


def _local_rows(precision: str, tokens_per_s: float) -> list[Measurement]:
    rows = []
    for batch in (1, 8):
        params = {"model": "qwen3-0.6b", "precision": precision, "batch_size": batch,
                  "prompt_len": 128, "output_len": 32}  # fmt: skip
        name = f"qwen3-0.6b {precision} b{batch} in128 out32"
        for metric, value, unit in (
            ("ttft_ms", 15.0 * batch, "ms"),
            ("output_tokens_per_s", tokens_per_s * batch, "tokens/s"),
            ("energy_j_per_token", 2.0 / batch, "J/token"),
        ):
            rows.append(Measurement(suite="infer-local", name=name, metric=metric, value=value,
                                    unit=unit, params=params))  # fmt: skip
    return rows


def _infer_run(backend, device, tokens_per_s, joules_per_token, precision="bf16") -> RunResult:
    return RunResult(
        kind="infer-serve",
        environment=_platform(backend, device).record(),
        config={},
        measurements=_serve_rows(tokens_per_s, joules_per_token)
        + _local_rows(precision, tokens_per_s / 10),
    )


@pytest.fixture
def mi300x_h100(tmp_path: Path) -> tuple[Path, Path]:
    amd = _infer_run("rocm", "AMD Instinct MI300X", 1200.0, 0.5).save(tmp_path / "MI300X")
    nv = _infer_run("cuda", "NVIDIA H100 80GB HBM3", 1000.0, 0.4).save(tmp_path / "H100")
    return amd.parent, nv.parent


def test_one_run_is_an_inference_table(mi300x_h100):
    doc = build_document([load_result(mi300x_h100[0])])
    serve = next(t for t in doc.tables if t.suite == "infer-serve")
    assert serve.title == "Inference: server benchmark"
    assert serve.columns == [
        "model", "workload", "rate (req/s)", "concurrency", "TTFT p50 (ms)", "TTFT p99 (ms)",
        "TPOT p50 (ms)", "ITL p50 (ms)", "req/s", "output tokens/s", "failed", "J/token",
    ]  # fmt: skip
    assert serve.rows[1] == [
        "qwen3-8b", "random", "4", "64", "40.00", "100.0", "11.00", "11.00", "2.00", "2,400",
        "0", "0.5",
    ]  # fmt: skip
    assert any("also in result.json: ttft_ms_p90" in note for note in serve.notes)
    local = next(t for t in doc.tables if t.suite == "infer-local")
    assert local.columns[:5] == ["model", "precision", "batch", "prompt len", "output len"]
    assert local.rows[1][:5] == ["qwen3-0.6b", "bf16", "8", "128", "32"]


def test_missing_sensor_reads_na_with_the_reason():
    run = _infer_run("cuda", "NVIDIA H100", 1000.0, None)
    serve = build_document([run]).tables[0]
    energy = serve.columns.index("J/token")
    assert {row[energy] for row in serve.rows} == {"n/a"}
    assert any("no GPU power sensor" in note for note in serve.notes)


def test_two_machines_get_ratios_per_metric(mi300x_h100, tmp_path):
    out = tmp_path / "cmp.md"
    assert main(["report", str(mi300x_h100[0]), str(mi300x_h100[1]), "-o", str(out)]) == 0
    text = out.read_text()
    header = next(line for line in text.splitlines() if line.startswith("| model | workload"))
    assert header.endswith("| metric | MI300X | H100 | MI300X / H100 |")
    tokens = next(line for line in text.splitlines() if re.match(r"\| qwen3-8b .*\| 4 \| 64 \| output tokens/s", line))  # fmt: skip
    assert "2,400" in tokens and "2,000" in tokens and "1.20x" in tokens  # 2400 / 2000
    energy = next(line for line in text.splitlines() if re.match(r"\| qwen3-8b .*\| inf \| 64 \| J/token", line))  # fmt: skip
    assert "1.25x" in energy  # 0.5 / 0.4 J/token: the MI300X spends more per token here
    assert "not comparable" not in text


@pytest.mark.slow
def test_html_embeds_the_inference_plots(mi300x_h100):
    runs = [load_result(path) for path in mi300x_h100]
    html = render(runs, "html")
    for suite in ("infer-serve", "infer-local"):
        match = re.search(rf'alt="{suite} plot" src="data:image/png;base64,([^"]+)"', html)
        assert match, suite
        assert base64.b64decode(match.group(1)).startswith(PNG_SIGNATURE)


def test_precision_bars_compare_runs_at_different_precisions(tmp_path):
    from rocmkit.report.plots import local_throughput_plot

    bf16 = _infer_run("rocm", "AMD Instinct MI300X", 1200.0, 0.5, precision="bf16")
    fp32 = _infer_run("rocm", "AMD Instinct MI300X", 400.0, 0.9, precision="fp32")
    assert local_throughput_plot([bf16, fp32], ["bf16 run", "fp32 run"]).startswith(PNG_SIGNATURE)
    doc = build_document([bf16, fp32])
    assert any("different sizes/dtypes" in note and "infer-local" in note for note in doc.notes)


@pytest.mark.slow
def test_serve_run_end_to_end_into_a_report(tmp_path, capsys):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "infer"))
    from stub_server import StubConfig, StubServer

    server = StubServer(StubConfig(ttft_s=0.02, itl_s=0.005)).start()
    try:
        run_dir = tmp_path / "serve"
        argv = ["infer", "serve", "--url", server.base_url, "--model", "stub", "--num-prompts", "6",
                "--output-len", "4", "--rate", "50,inf", "--concurrency", "3",
                "--slo", "ttft=1s", "--out", str(run_dir)]  # fmt: skip
        assert main(argv) == 0
    finally:
        server.stop()
        sys.path.pop(0)
    out = tmp_path / "report.html"
    assert main(["report", str(run_dir), "-o", str(out)]) == 0
    html = out.read_text()
    assert "<th>TTFT p50 (ms)</th>" in html and "<th>goodput (req/s)</th>" in html
    assert re.search(r'alt="infer-serve plot" src="data:image/png;base64,', html)
    capsys.readouterr()
    assert main(["report", str(run_dir), "--format", "md"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| stub |")]
    assert [row.split("|")[3].strip() for row in rows] == ["50", "inf"]  # rate column, in order


def test_a_registered_layout_replaces_the_generic_table(monkeypatch):
    from rocmkit.report import SuiteLayout
    from rocmkit.report.layouts import LAYOUTS

    layout = SuiteLayout(title="Mine", keys=(("op", "op"),), metrics=(("gbps", "GB/s"),))
    monkeypatch.setitem(LAYOUTS, "my-suite", layout)
    run = RunResult(kind="bench", environment={}, config={}, measurements=[
        Measurement(suite="my-suite", name="x", metric=metric, value=1.5, unit="", params={"op": "copy"})
        for metric in ("gbps", "time_ms")
    ])  # fmt: skip
    table = build_document([run]).tables[0]
    assert (table.title, table.columns, table.rows) == ("Mine", ["op", "GB/s"], [["copy", "1.50"]])
    assert table.notes == ["also in result.json: time_ms"]
