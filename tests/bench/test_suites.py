"""Suites end to end on CPU with tiny sizes, the registry, peaks, and the bench CLI."""

from __future__ import annotations

import json

import pytest

from rocmkit.bench import BenchConfig, run_bench
from rocmkit.bench.bandwidth import BandwidthConfig, bytes_moved
from rocmkit.bench.gemm import GemmConfig, run_gemm
from rocmkit.cli.main import main
from rocmkit.errors import UserError
from rocmkit.measure.peaks import (
    compute_peak,
    cpu_flops_per_cycle,
    estimate_cpu_peak_gflops,
    memory_bandwidth_peak,
)
from rocmkit.measure.timing import TimingConfig
from rocmkit.platform import CpuInfo, DeviceInfo, Platform
from rocmkit.results import UNITS

FAST = TimingConfig(warmup=0, min_samples=2, max_samples=3, budget_s=0.01)
CPU = Platform(
    backend="cpu",
    torch_version="x",
    cpu=CpuInfo(model="test cpu", num_physical_cores=2, num_logical_cores=2, flags=("avx2", "fma")),
)
TINY = [
    *("--device", "cpu"),  # these test CPU behaviour, also on a machine with a GPU
    *("--gemm.sizes", "32", "--gemm.timing.max_samples", "3"),
    *("--bandwidth.sizes_mib", "1", "--bandwidth.timing.max_samples", "3"),
    *("--train_precision.models", "gpt-tiny", "--train_precision.steps", "2"),
    *("--train_precision.overrides.gpt-tiny.model.n_layer", "1"),
    *("--train_precision.overrides.gpt-tiny.model.seq_len", "16"),
]


def _mi300x() -> Platform:
    device = DeviceInfo(index=0, name="AMD Instinct MI300X", vendor="amd", arch="gfx942")
    return Platform(backend="rocm", torch_version="x", devices=(device,), gpu_available=True)


def test_gemm_on_cpu_measures_fp32_and_explains_what_it_cannot_run():
    rows = run_gemm(GemmConfig(sizes=[16], dtypes=["fp32", "tf32"], timing=FAST), CPU)
    by = {(m.params["dtype"], m.metric): m for m in rows}
    fp32 = by[("fp32", "gflops")]
    assert fp32.unit == "GFLOPS" and fp32.value > 0 and fp32.stats["num_samples"] >= 2
    assert "estimate" in by[("fp32", "pct_of_peak")].extra["peak_source"]
    assert by[("tf32", "gflops")].value is None and "GPU" in by[("tf32", "gflops")].extra["skipped"]


def test_gpu_peaks_come_from_the_hardware_facts_table():
    peak = compute_peak(_mi300x(), "bf16")
    assert peak is not None and peak.value == 1307.4 and not peak.is_estimate
    assert memory_bandwidth_peak(_mi300x()).value == 5300
    unknown = Platform(
        backend="rocm",
        torch_version="x",
        gpu_available=True,
        devices=(DeviceInfo(index=0, name="mystery", vendor="amd", arch="gfx9999"),),
    )
    assert compute_peak(unknown, "fp32") is None and memory_bandwidth_peak(unknown) is None


def test_cpu_peak_estimate_follows_the_isa():
    assert cpu_flops_per_cycle(("avx512f",), "fp32") == 64
    assert cpu_flops_per_cycle(("avx2",), "fp32") == 32
    assert cpu_flops_per_cycle(("avx2",), "bf16") is None  # no bf16 path: n/a, not a guess
    assert estimate_cpu_peak_gflops(("avx2",), "fp32", 2, 3.0) == 192.0
    assert estimate_cpu_peak_gflops(("avx2",), "fp32", 2, None) is None


def test_stream_byte_counts():
    assert bytes_moved("copy", 100) == 200 and bytes_moved("triad", 100) == 300
    assert bytes_moved("h2d_pinned", 100) == 100


def test_bad_suite_settings_are_user_errors():
    with pytest.raises(UserError, match="fp7"):
        GemmConfig(dtypes=["fp7"])
    with pytest.raises(UserError, match="stream"):
        BandwidthConfig(ops=["stream"])
    with pytest.raises(UserError, match="unknown bench suite"):
        BenchConfig(suites=["gemmm"])


def test_run_bench_with_an_injected_power_reader_reports_energy():
    config = BenchConfig(
        suites=["gemm"],
        gemm=GemmConfig(
            sizes=[16],
            dtypes=["fp32"],
            timing=TimingConfig(warmup=0, min_samples=50, max_samples=50, budget_s=0.01),
        ),
    )
    result = run_bench(config, CPU, power_reader=lambda: 50.0)
    power = {m.metric: m for m in result.select(suite="power")}
    assert (
        power["avg_power"].value == pytest.approx(50.0, rel=0.05)
        or power["avg_power"].value is None
    )
    assert power["energy"].value != 0.0  # never a made-up zero


@pytest.mark.slow
def test_quick_suite_end_to_end_on_cpu(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["bench", "--out", str(out), *TINY]) == 0
    printed = capsys.readouterr().out
    assert "GEMM throughput" in printed and "Environment" in printed
    data = json.loads((out / "result.json").read_text())
    assert data["schema_version"] == 2 and data["kind"] == "bench"
    assert data["config"]["suites"] == ["gemm", "bandwidth", "train-precision"]
    assert (
        data["environment"]["backend"] in ("cpu", "cuda", "rocm")
        and "env_vars" in data["environment"]
    )
    suites = {m["suite"] for m in data["measurements"]}
    assert {"gemm", "bandwidth", "train-precision"} <= suites
    gemm = [m for m in data["measurements"] if m["suite"] == "gemm" and m["metric"] == "gflops"]
    assert gemm and all(m["value"] > 0 and m["stats"]["num_samples"] >= 1 for m in gemm)
    precision = {
        (m["params"]["dtype"], m["metric"]): m
        for m in data["measurements"]
        if m["suite"] == "train-precision"
    }
    assert precision[("fp32", "speedup_vs_fp32")]["value"] == pytest.approx(1.0)
    # One unit per metric across commands (results.UNITS): mfu and % of peak both in percent.
    units = {(m["metric"], m["unit"]) for m in data["measurements"] if m["metric"] in UNITS}
    assert {metric for metric, _ in units} == set(UNITS)
    assert all(unit == UNITS[metric] for metric, unit in units)
    assert precision[("bf16", "throughput")]["value"] > 0
    assert data["config"]["train_precision"]["overrides"]["gpt-tiny"]["model"]["seq_len"] == "16"
    report = (out / "report.md").read_text()
    assert report.startswith("# rocmkit bench")
    assert "peak memory, tensors (MiB)" in report and "speed-up vs fp32" in report
    assert "| gpt-tiny fp32 |" in report and "1.00x" in report
    assert "<img" in (out / "report.html").read_text()


def test_json_flag_prints_the_result(tmp_path, capsys):
    argv = ["bench", "--suite", "gemm", "--json", "--out", str(tmp_path), "--gemm.sizes", "16"]
    argv += ["--device", "cpu"]
    assert main([*argv, "--gemm.timing.max_samples", "3"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {m["suite"] for m in data["measurements"]} == {"gemm", "power"}


def test_monitor_memory_saves_the_timeline_and_reports_the_peak(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["bench", "--suite", "gemm", "--out", str(out), "--gemm.sizes", "16", "--no-power"]
    argv += ["--device", "cpu"]
    assert main([*argv, "--gemm.timing.max_samples", "3", "--monitor-memory"]) == 0
    printed = capsys.readouterr().out  # the peak is a row of the report's memory table
    assert "peak memory, process RSS (MiB)" in printed and "│ bench run │" in printed
    timeline = json.loads((out / "memory.json").read_text())
    assert timeline["source"] == "psutil rss" and timeline["peak_allocated_bytes"] > 0
    data = json.loads((out / "result.json").read_text())
    (memory,) = [m for m in data["measurements"] if m["suite"] == "memory"]
    assert memory["metric"] == "peak_rss" and memory["unit"] == "MiB"
    assert memory["value"] == pytest.approx(timeline["peak_allocated_bytes"] / 2**20)
    assert "peak memory, process RSS (MiB)" in (out / "report.md").read_text()


@pytest.mark.parametrize(
    "argv",
    [["--suite", "nope"], ["--gemm.sizes", "-4"], ["--gemm.dtypes", "fp7"], ["--quick", "--full"]],
)
def test_bad_bench_arguments_are_one_line_exit_2(argv, tmp_path, capsys):
    assert main(["bench", "--out", str(tmp_path), *argv]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_public_api_is_pinned():
    import rocmkit.bench
    import rocmkit.report

    assert set(rocmkit.bench.__all__) == {
        "SUITES",
        "BenchConfig",
        "Stats",
        "Suite",
        "TimingConfig",
        "get_suite",
        "measure",
        "register_suite",
        "run_bench",
        "summarize",
    }
    assert rocmkit.report.__all__ == [
        "Comparison",
        "ReportDocument",
        "SuiteLayout",
        "Table",
        "build_document",
        "compare_runs",
        "register_layout",
        "render",
    ]


def test_a_registered_suite_runs_and_reports_without_special_code(monkeypatch):
    from rocmkit.bench import SUITES, Suite, register_suite
    from rocmkit.report import render
    from rocmkit.results import Measurement

    monkeypatch.setattr("rocmkit.bench.suites.SUITES", dict(SUITES))
    row = Measurement(suite="infer-fake", name="batch 1", metric="ttft_ms", value=12.5, unit="ms")
    register_suite(
        Suite(name="infer-fake", description="test", run=lambda config, platform, sampler: [row])
    )
    result = run_bench(BenchConfig(suites=["infer-fake"], power=False), CPU)
    assert "| batch 1 | 12.50 |" in render([result], "md")


def test_a_registered_suite_with_settings_is_one_registration(monkeypatch, tmp_path, capsys):
    """A suite with its own config type, device defaults and figure count: sized, run, reported,
    counted for the progress bar, and settable from the command line, with no other file edited."""
    from dataclasses import dataclass

    from rocmkit.bench import SUITES, Suite, register_suite
    from rocmkit.results import Measurement

    @dataclass(kw_only=True)
    class ToyConfig:
        sizes: list[int]
        repeat: int = 1

    def run_toy(config: ToyConfig, platform, sampler) -> list[Measurement]:
        return [
            Measurement(
                suite="toy", name=f"size {n}", metric="gflops", value=float(n), unit="GFLOPS"
            )
            for n in config.sizes * config.repeat
        ]

    monkeypatch.setattr("rocmkit.bench.suites.SUITES", dict(SUITES))
    register_suite(
        Suite(
            name="toy",
            description="test",
            run=run_toy,
            config_type=ToyConfig,
            defaults=lambda platform, mode: {"sizes": [1, 2] if mode == "quick" else [1, 2, 4]},
            num_figures=lambda config, platform: len(config.sizes) * config.repeat,
        )
    )
    started: list[tuple[str, int]] = []
    config = BenchConfig(suites=["toy"], power=False, suite_configs={"toy": {"repeat": 2}})
    result = run_bench(config, CPU, on_suite=lambda name, n: started.append((name, n)))
    assert [m.value for m in result.select(suite="toy")] == [1.0, 2.0, 1.0, 2.0]
    assert started == [("toy", 4)]
    assert result.config["suite_configs"]["toy"] == {"sizes": [1, 2], "repeat": 2}

    out = tmp_path / "run"
    argv = ["bench", "--suite", "toy", "--out", str(out), "--no-power", "--device", "cpu"]
    assert main([*argv, "--suite_configs.toy.sizes", "8,16", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [m["name"] for m in data["measurements"] if m["suite"] == "toy"] == ["size 8", "size 16"]
    bad = ["bench", "--suite", "toy", "--out", str(tmp_path / "bad"), "--device", "cpu"]
    assert main([*bad, "--suite_configs.toy.sizes", "x"]) == 2
    assert "suite_configs.toy.sizes" in capsys.readouterr().err


def test_a_suite_section_cannot_shadow_a_bench_setting():
    from rocmkit.bench import Suite, register_suite

    with pytest.raises(UserError, match="section 'mode' is taken"):
        register_suite(Suite(name="mode", description="x", run=lambda c, p, s: []))
