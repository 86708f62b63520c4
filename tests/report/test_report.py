"""Reports: one run, two machines side by side with ratios, generic suites, bad files."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

import rocmkit as rocmkit_pkg
from rocmkit.cli.main import main
from rocmkit.platform import DeviceInfo, Platform
from rocmkit.report import build_document, compare_runs, render
from rocmkit.report.tables import format_value
from rocmkit.results import Measurement, RunResult

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _platform(backend: str, device: str, arch: str | None = None) -> Platform:
    """A one-GPU ROCm or CUDA machine, as its run record would describe it."""
    return Platform(
        backend=backend,  # type: ignore[arg-type]
        torch_version="2.9.0",
        hip_version="6.4" if backend == "rocm" else None,
        cuda_version="12.8" if backend == "cuda" else None,
        devices=(
            DeviceInfo(
                index=0, name=device, vendor="amd" if backend == "rocm" else "nvidia", arch=arch
            ),
        ),
        gpu_available=True,
    )


def _run(
    backend: str, device: str, arch: str, figures: dict[str, float], *, sizes=(4096, 8192)
) -> RunResult:
    platform = _platform(backend, device, arch)
    rows = []
    for size in sizes:
        for dtype in ("fp16", "bf16"):
            params = {"dtype": dtype, "m": size, "n": size, "k": size}
            name = f"{dtype} {size}x{size}x{size}"
            tflops = figures[dtype] * size / 8192
            rows.append(
                Measurement(
                    suite="gemm",
                    name=name,
                    metric="tflops",
                    value=tflops,
                    unit="TFLOPS",
                    params=params,
                    stats={"median": 0.001, "num_samples": 20},
                )
            )
            rows.append(
                Measurement(
                    suite="gemm",
                    name=name,
                    metric="pct_of_peak",
                    value=tflops / 10,
                    unit="%",
                    params=params,
                )
            )
    for size in (16, 64, 256):  # three sizes: a line chart shows more than a table
        rows.append(
            Measurement(
                suite="bandwidth",
                name=f"copy {size} MiB",
                metric="gbps",
                value=figures["copy"] * size / 256,
                unit="GB/s",
                params={"op": "copy", "size_mib": size},
            )
        )
    for dtype, speedup in (("fp32", 1.0), ("bf16", figures["speedup"])):
        params = {"model": "gpt-tiny", "dtype": dtype}
        rows.append(
            Measurement(
                suite="train-precision",
                name=f"gpt-tiny {dtype}",
                metric="speedup_vs_fp32",
                value=speedup,
                unit="x",
                params=params,
            )
        )
        rows.append(
            Measurement(
                suite="train-precision",
                name=f"gpt-tiny {dtype}",
                metric="memory_saving_vs_fp32",
                value=None if dtype == "fp32" else 40.0,
                unit="%",
                params=params,
            )
        )
    for size in (1024, 65536, 1048576):
        params = {"op": "all_reduce", "size_bytes": size, "world_size": 8}
        rows.append(
            Measurement(
                suite="collectives",
                name=f"all_reduce {size} B",
                metric="busbw",
                value=figures["busbw"] * size / 2**20,
                unit="GB/s",
                params=params,
            )
        )
    rows.append(
        Measurement(
            suite="my-suite",
            name="llama-tiny batch 4",
            metric="ttft_ms",
            value=figures["ttft"],
            unit="ms",
            params={"batch": 4},
        )
    )
    environment = platform.record()
    return RunResult(
        kind="bench", environment=environment, config={"mode": "quick"}, measurements=rows
    )


AMD = {"fp16": 612.3, "bf16": 600.0, "copy": 4000.0, "speedup": 2.1, "busbw": 300.0, "ttft": 20.0}
NV = {"fp16": 467.4, "bf16": 480.0, "copy": 2800.0, "speedup": 1.8, "busbw": 350.0, "ttft": 25.0}


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    amd = _run("rocm", "AMD Instinct MI300X", "gfx942", AMD).save(tmp_path / "MI300X")
    nv = _run("cuda", "NVIDIA H100 80GB HBM3", "sm_90", NV).save(tmp_path / "H100")
    return amd.parent, nv.parent


class _Images(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.tables = 0
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "img":
            self.images.append(attributes.get("src") or "")
        if tag == "table":
            self.tables += 1
        for key in ("src", "href"):
            value = attributes.get(key) or ""
            if value.startswith(("http:", "https:", "//")):
                self.external.append(value)


def test_two_machines_side_by_side_with_ratios(two_runs, tmp_path, capsys):
    out = tmp_path / "cmp.md"
    assert main(["report", str(two_runs[0]), str(two_runs[1]), "-o", str(out)]) == 0
    text = out.read_text()
    assert "MI300X / H100" in text
    row = next(
        line for line in text.splitlines() if line.startswith("| fp16 8192x8192x8192 | TFLOPS")
    )
    assert "612.3" in row and "467.4" in row and "1.31x" in row  # 612.3 / 467.4
    busbw = next(line for line in text.splitlines() if "all_reduce 1048576 B" in line)
    assert "0.86x" in busbw  # 300 / 350: the AMD box is slower here and the ratio says so
    assert "ROCm 6.4" in text or "HIP 6.4" in text
    assert "not comparable" not in text


def test_reversed_order_inverts_the_ratio(two_runs):
    from rocmkit.results import load_result

    comparison = compare_runs([load_result(two_runs[1]), load_result(two_runs[0])])
    gemm = next(t for t in comparison.tables if t.suite == "gemm")
    row = next(r for r in gemm.rows if r[0] == "fp16 8192x8192x8192" and r[1] == "TFLOPS")
    assert gemm.columns[-1] == "H100 / MI300X" and row[-1] == "0.76x"


def test_different_sizes_or_suites_are_flagged(tmp_path):
    a = _run("rocm", "AMD Instinct MI300X", "gfx942", AMD)
    b = _run("cuda", "NVIDIA H100", "sm_90", NV, sizes=(4096,))
    b.measurements = [m for m in b.measurements if m.suite != "bandwidth"]
    notes = compare_runs([a, b]).notes
    assert any("different sizes/dtypes" in n and "gemm" in n for n in notes)
    assert any("different suites" in n and "bandwidth" in n for n in notes)


def test_html_is_self_contained_with_decodable_plots(two_runs, tmp_path):
    out = tmp_path / "report.html"
    assert main(["report", str(two_runs[0]), str(two_runs[1]), "-o", str(out)]) == 0
    parser = _Images()
    parser.feed(out.read_text())
    assert parser.external == []
    assert len(parser.images) == 4  # precision bars, gemm % of peak, bandwidth, busbw
    for src in parser.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(PNG_SIGNATURE)
    assert parser.tables >= 6


def test_unknown_suites_render_generically(two_runs):
    from rocmkit.results import load_result

    doc = build_document([load_result(two_runs[0])])
    infer = next(t for t in doc.tables if t.suite == "my-suite")
    assert infer.title == "my-suite"
    assert infer.columns == ["name", "ttft (ms)"] and infer.rows == [
        ["llama-tiny batch 4", "20.00"]
    ]


def test_single_run_markdown_has_na_not_zero(two_runs):
    from rocmkit.results import load_result

    text = render([load_result(two_runs[0])], "md")
    row = next(line for line in text.splitlines() if line.startswith("| gpt-tiny fp32"))
    assert "n/a" in row and " 0.00 " not in row


def test_format_value():
    assert [format_value(v) for v in (None, 1234.5, 612.34, 3.14159, 0.001234)] == [
        "n/a",
        "1,234",
        "612.3",
        "3.14",
        "0.00123",
    ]


def test_console_format(two_runs, capsys):
    assert main(["report", str(two_runs[0]), "--format", "console"]) == 0
    assert "GEMM throughput" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "corrupt JSON"),
        ('{"hello": 1}', "no schema_version"),
        ('{"schema_version": 99}', "schema version 99"),
        ('{"schema_version": 1, "kind": "bench"}', "not a valid rocmkit result"),
    ],
)
def test_bad_result_files_are_one_line_exit_2(tmp_path, capsys, content, message):
    bad = tmp_path / "result.json"
    bad.write_text(content)
    assert main(["report", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_mismatched_measurement_is_one_line_exit_2(two_runs, tmp_path, capsys):
    data = json.loads((two_runs[0] / "result.json").read_text())
    data["measurements"][0]["value"] = "fast"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    assert main(["report", str(two_runs[1]), str(bad), "-o", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "non-numeric" in err
    assert not (tmp_path / "x.html").exists()


def test_missing_run_and_unknown_output_suffix(two_runs, tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert main(["report", str(two_runs[0]), "-o", str(tmp_path / "r.pdf")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 2 and re.search(r"\.html, \.md or \.sarif", err)


def test_failed_correctness_check_is_called_out():
    from rocmkit.report.tables import run_table

    run = _run("rocm", "AMD Instinct MI300X", "gfx942", AMD)
    run.measurements.append(
        Measurement(
            suite="collectives",
            name="broadcast 64 B",
            metric="busbw",
            value=1.0,
            unit="GB/s",
            extra={"correct": False},
        )
    )
    table = run_table(run, "collectives")
    assert any("WRONG RESULT" in note and "broadcast 64 B" in note for note in table.notes)


def test_cpu_gflops_against_gpu_tflops_is_flagged():
    gpu = _run("rocm", "AMD Instinct MI300X", "gfx942", AMD)
    cpu = _run("cuda", "NVIDIA H100", "sm_90", NV)
    for m in cpu.measurements:
        if m.metric == "tflops":
            m.metric, m.unit = "gflops", "GFLOPS"
    notes = compare_runs([gpu, cpu]).notes
    assert any("different metrics/units" in n and "GFLOPS" in n for n in notes)


@pytest.mark.slow
def test_the_format_follows_the_file_name_and_a_mismatch_is_refused(two_runs, tmp_path):
    def rocmkit(*argv: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": str(Path(rocmkit_pkg.__file__).parent.parent)}
        return subprocess.run(
            [sys.executable, "-m", "rocmkit", "report", str(two_runs[0]), *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )

    mismatch = rocmkit("--format", "md", "-o", str(tmp_path / "x.html"))
    assert mismatch.returncode == 2 and "does not match" in mismatch.stderr
    assert mismatch.stderr.count("\n") == 1 and not (tmp_path / "x.html").exists()
    assert rocmkit("-o", str(tmp_path / "x.md")).returncode == 0
    assert (tmp_path / "x.md").read_text().startswith("# rocmkit bench")
    assert rocmkit("--format", "html", "-o", str(tmp_path / "x.html")).returncode == 0
    assert (tmp_path / "x.html").read_text().startswith("<!DOCTYPE html>")
    unwritable = rocmkit("-o", "/proc/forbidden/x.md")
    assert unwritable.returncode == 2 and "cannot write the directory of the report file" in (
        unwritable.stderr
    )
    assert rocmkit("-o", str(tmp_path)).returncode == 2  # a directory is not a file name


def test_a_cpu_run_reads_without_a_glossary(tmp_path, capsys):
    out = tmp_path / "cpu"
    argv = ["bench", "--device", "cpu", "--suite", "gemm,attention", "--out", str(out)]
    argv += ["--gemm.sizes", "16", "--gemm.dtypes", "fp32", "--gemm.timing.max_samples", "3"]
    argv += ["--attention.seq_len", "16", "--attention.dtypes", "fp32", "--attention.backends"]
    argv += ["math", "--attention.timing.max_samples", "3"]
    assert main(argv) == 0
    capsys.readouterr()
    text = (out / "report.md").read_text()
    assert "| name | GFLOPS | % of peak | samples |" in text  # the unit once, no raw field names
    assert "gflops (GFLOPS)" not in text and "pct_of_peak" not in text
    assert "**ran on**: CPU (" in text and "runs on cpu" not in text
    assert "CUDA 1" not in text and "ROCm" not in text and "ROCM" not in text
    assert "? torch thread" not in text
    # attention on a CPU: GFLOPS, with the shapes said once
    assert "| name | time (ms) | GFLOPS | samples |" in text
    assert "every row: backend math, dtype fp32, batch 1, heads 4, seq len 16, head dim 64" in text
    # power: no section with a single n/a row, one line saying why
    assert "## Power and energy" not in text
    assert "Power and energy: not measured (no GPU power sensor on a CPU-only run)" in text
    assert "<img" not in (out / "report.html").read_text()  # one GEMM bar is not a chart


def test_a_run_without_thread_facts_shows_no_question_mark():
    from rocmkit.report.summary import environment_summary

    run = RunResult(
        kind="infer",
        environment={"backend": "cpu", "torch_version": "2.9", "cpu": {"model": "EPYC"}},
        config={},
    )
    summary = dict(environment_summary(run))
    assert summary["cpu"] == "EPYC" and summary["ran on"] == "CPU (EPYC); no GPU used"
    assert "power sensor" not in summary
