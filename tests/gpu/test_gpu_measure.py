"""Measurement services on a GPU: board power readers, allocator memory monitoring, the doctor."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from gpu_helpers import as_flags, explain, measurements, read_json, run_rocmkit, tiny_gpt

from rocmkit.cli.main import main
from rocmkit.platform import detect
from rocmkit.results import load_result
from rocmkit.train import load_train_config, train

pytestmark = pytest.mark.gpu

COMMAND_READERS = {"nvidia": {"nvidia-smi"}, "amd": {"amd-smi", "rocm-smi"}}
MODULE_READERS = {"nvidia": "pynvml", "amd": "amdsmi"}


def _expected_readers(vendor: str) -> set[str]:
    """The vendor's Python module when it is importable, else one of its command-line tools."""
    module = MODULE_READERS[vendor]
    if importlib.util.find_spec(module):
        return {module}
    tools = {tool for tool in COMMAND_READERS[vendor] if shutil.which(tool)}
    if not tools:
        pytest.skip(f"no {module} module and no {'/'.join(sorted(COMMAND_READERS[vendor]))} here")
    return tools


def test_power_reader_reads_plausible_watts_during_a_gemm(tmp_path: Path, capsys):
    vendor = detect().devices[0].vendor
    out = tmp_path / "bench"
    # An 8192 GEMM in two dtypes, about a second each: many samples at the 0.1 s sampling period.
    argv = ["bench", "--suite", "gemm", "--out", str(out), "--gemm.sizes", "8192",
            "--gemm.dtypes", "fp32,bf16", "--gemm.timing.min_samples", "20",
            "--gemm.timing.budget_s", "1", "--gemm.timing.max_samples", "1000"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    result = load_result(out)
    assert result.environment["power_reader"] in _expected_readers(vendor)
    power = {m.metric: m for m in result.select(suite="power") if m.params.get("suite") == "gemm"}
    watts = power["avg_power"].value
    # An idle accelerator draws tens of watts; the largest boards are rated about 1.4 kW.
    assert watts is not None and 10 < watts < 2000, power["avg_power"]
    assert power["avg_power"].extra["num_samples"] >= 5
    assert power["energy"].value is not None and power["energy"].value > 0


def test_monitor_memory_follows_the_gpu_allocator_during_training(run_dir: Path, capsys):
    overrides = tiny_gpt(run_dir, **{"train.steps": 5, "checkpoint.save_final": "false"})
    assert main(["train", "--preset", "gpt-tiny", "--monitor-memory", *as_flags(overrides)]) == 0
    timeline = read_json(run_dir / "memory.json")
    assert timeline["device"] == "cuda" and "cuda" in timeline["source"]
    assert len(timeline["samples"]) >= 2
    peak = timeline["peak_allocated_bytes"]
    assert 0 < peak <= timeline["peak_reserved_bytes"] <= timeline["total_device_bytes"]
    memory = {row["metric"]: row for row in measurements(run_dir, "memory")}
    assert set(memory) == {"peak_allocated", "peak_reserved"}
    assert memory["peak_allocated"]["value"] == pytest.approx(peak / 2**20)
    # The monitor sees at least the high-water mark the training loop reports itself.
    (trained,) = [r for r in measurements(run_dir, "train") if r["metric"] == "peak_memory"]
    assert peak >= trained["value"] > 0
    assert (run_dir / "memory_snapshot.pickle").stat().st_size > 0  # for pytorch.org/memory_viz


def test_train_reports_the_peak_memory_of_its_own_run(run_dir: Path):
    import torch

    # Earlier GPU work in the same process (a notebook cell, a benchmark) is not this run's peak.
    earlier = torch.empty(2 * 2**30, dtype=torch.uint8, device="cuda")
    del earlier
    config = load_train_config(preset="gpt-tiny", overrides=tiny_gpt(run_dir, **{"train.steps": 3}))
    result = train(config)
    assert result.peak_memory_bytes is not None
    assert 0 < result.peak_memory_bytes < 2**30, f"{result.peak_memory_bytes / 2**30:.2f} GiB"


def test_monitor_memory_sees_the_benchmark_arrays_on_the_gpu(tmp_path: Path, capsys):
    out = tmp_path / "bench"
    argv = ["bench", "--suite", "bandwidth", "--out", str(out), "--no-power", "--monitor-memory",
            "--bandwidth.sizes_mib", "256", "--bandwidth.ops", "triad"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    assert "peak memory" in capsys.readouterr().out  # the run's memory table
    timeline = read_json(out / "memory.json")
    assert timeline["device"] == "cuda"
    assert timeline["peak_allocated_bytes"] >= 3 * 256 * 2**20  # triad's three 256 MiB arrays
    memory = {row["metric"] for row in measurements(out, "memory")}
    assert memory == {"peak_allocated", "peak_reserved"}


def test_doctor_passes_a_healthy_gpu_machine(tmp_path: Path):
    proc = run_rocmkit("doctor", "--json", cwd=tmp_path)
    assert proc.returncode == 0, explain(proc)
    document = json.loads(proc.stdout)  # the run document; the doctor's report is its data
    report = document["data"]
    failed = [f"{f['id']}: {f['summary']}" for f in report["findings"] if f["status"] == "fail"]
    assert failed == [] and report["counts"]["fail"] == 0
    assert report["environment"]["gpu_available"] is True
    smoke = next(f for f in report["findings"] if f["id"] == "smoke")
    assert smoke["status"] == "ok" and "no GPU" not in smoke["summary"], smoke
