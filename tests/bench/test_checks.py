"""Every bench figure checks the output of its timed work: a corrupted element is caught (WRONG,
exit 1), healthy runs are never WRONG, and --expect floors fail the run."""

from __future__ import annotations

import json

import pytest

from rocmkit.bench import attention, bandwidth, gemm
from rocmkit.bench.attention import AttentionConfig, run_attention
from rocmkit.bench.bandwidth import BandwidthConfig, run_bandwidth
from rocmkit.bench.checks import check_equal, check_matmul
from rocmkit.bench.floors import parse_expect
from rocmkit.bench.gemm import GemmConfig, run_gemm
from rocmkit.cli.main import main
from rocmkit.errors import UserError
from rocmkit.measure.timing import TimingConfig
from rocmkit.platform import CpuInfo, Platform

FAST = TimingConfig(warmup=0, min_samples=2, max_samples=3, budget_s=0.001)
CPU = Platform(
    backend="cpu",
    torch_version="x",
    cpu=CpuInfo(model="test cpu", num_physical_cores=2, num_logical_cores=2, flags=("avx2", "fma")),
)
TINY_ATTENTION = {"batch": 1, "num_heads": 2, "seq_len": 16, "head_dim": 8, "timing": FAST}


@pytest.fixture(autouse=True)
def _short_load_window(monkeypatch):
    # a CPU figure re-runs its work for 0.1 s to read the machine's load; not needed here
    monkeypatch.setattr("rocmkit.measure.timing.MIN_LOAD_WINDOW_S", 0.0)


def corrupt(monkeypatch, module, factory: str, amount: float = 16.0, element: int = 5) -> None:
    """Make the kernel `module.factory` builds write one wrong element in every output it
    returns: the test hook stands for a bad GPU, production maths are untouched."""
    real = getattr(module, factory)

    def corrupted(*args, **kwargs):
        run, check = real(*args, **kwargs)

        def bad_run():
            out = run()
            out.detach().view(-1)[element] += amount
            return out

        return bad_run, check

    monkeypatch.setattr(module, factory, corrupted)


def _wrong(rows, count=1):
    timed = [m for m in rows if m.stats]
    assert timed and all(m.extra["correct"] is False for m in timed)
    assert all(
        m.extra["num_wrong"] == count and m.extra["max_error"] > m.extra["tolerance"] for m in timed
    )


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_a_corrupted_gemm_element_is_caught_per_dtype(monkeypatch, dtype):
    corrupt(monkeypatch, gemm, "matmul_problem")
    rows = run_gemm(GemmConfig(sizes=[32], dtypes=[dtype], timing=FAST), CPU)
    _wrong(rows)  # one wrong row of C.x
    assert all(m.extra["correct"] is False for m in rows)  # % of peak too


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("backend", ["math", "flash"])
def test_a_corrupted_attention_element_is_caught_per_dtype(monkeypatch, dtype, backend):
    corrupt(monkeypatch, attention, "attention_problem", amount=4.0)
    config = AttentionConfig(backends=[backend], dtypes=[dtype], **TINY_ATTENTION)
    _wrong(run_attention(config, CPU))


@pytest.mark.parametrize("op", ["copy", "triad"])
def test_a_corrupted_copy_element_is_caught(monkeypatch, op):
    corrupt(monkeypatch, bandwidth, "op_problem", amount=1.0, element=12345)
    rows = run_bandwidth(BandwidthConfig(sizes_mib=[1], ops=[op], timing=FAST), CPU)
    _wrong(rows)
    assert rows[0].extra["max_error"] == 1.0 and rows[0].extra["tolerance"] == 0.0


def test_a_nan_or_a_stale_copy_is_wrong():
    import torch

    a, b = torch.randn(8, 8), torch.randn(8, 8)
    c = a @ b
    c[2, 3] = float("nan")
    assert check_matmul(a, b, c, "fp32").num_wrong == 1
    assert not check_equal(torch.full((4,), -1.0), torch.arange(4.0), "copy").correct


def test_fifty_healthy_runs_give_no_false_wrong():
    """Small sizes, every dtype and kernel the suites measure on a CPU: not one false alarm."""
    rows = []
    for seed in range(10):
        sizes = [7 + seed, 64 + 16 * seed]
        rows += run_gemm(GemmConfig(sizes=sizes, dtypes=["fp32", "fp16", "bf16"], timing=FAST), CPU)
        config = AttentionConfig(
            backends=["math", "flash"], dtypes=["fp32", "bf16"], causal=seed % 2 == 0,
            **{**TINY_ATTENTION, "seq_len": 16 + 8 * seed},
        )  # fmt: skip
        rows += run_attention(config, CPU)
    rows += run_bandwidth(
        BandwidthConfig(sizes_mib=[1, 2], ops=["copy", "triad"], timing=FAST), CPU
    )
    checked = [m for m in rows if m.stats]
    assert len(checked) >= 50
    assert all(m.extra["correct"] is True and m.extra["num_wrong"] == 0 for m in checked)


TINY = ["--device", "cpu", "--no-power", "--suite", "gemm", "--gemm.sizes", "16"]
TINY += ["--gemm.dtypes", "fp32", "--gemm.timing.max_samples", "3"]


def test_a_wrong_figure_is_marked_in_every_output_and_exits_1(monkeypatch, tmp_path, capsys):
    corrupt(monkeypatch, gemm, "matmul_problem")
    out = tmp_path / "run"
    argv = [*TINY, "--gemm.sizes", "16,24", "--out", str(out)]
    assert main(["bench", *argv]) == 1
    console = capsys.readouterr().out
    assert "WRONG" in console
    data = json.loads((out / "result.json").read_text())
    assert data["outcome"] == "failed"
    rows = [m for m in data["measurements"] if m["suite"] == "gemm"]
    assert len(rows) == 4 and all(m["extra"]["correct"] is False for m in rows)  # run went on
    assert "WRONG" in (out / "report.md").read_text()
    assert "WRONG" in (out / "report.html").read_text()


def test_every_row_says_where_it_was_measured(tmp_path, monkeypatch):
    monkeypatch.setenv("ROCMKIT_HOSTNAME", "node-a")
    assert main(["bench", *TINY, "--out", str(tmp_path / "run")]) == 0
    data = json.loads((tmp_path / "run" / "result.json").read_text())
    assert data["measurements"]
    for m in data["measurements"]:
        assert m["extra"]["host"] == "node-a" and m["extra"]["device_index"] == "cpu"


def test_expect_a_fraction_of_peak(tmp_path, capsys):
    # the CPU peak is an estimate of a few GFLOPS; a 16^3 product reaches a fraction of it
    assert main(["bench", *TINY, "--expect", "1.0", "--out", str(tmp_path / "high")]) == 1
    assert "BELOW FLOOR" in capsys.readouterr().out
    high = json.loads((tmp_path / "high" / "result.json").read_text())
    pct = next(m for m in high["measurements"] if m["metric"] == "pct_of_peak")
    assert pct["extra"]["below_floor"] is True and pct["extra"]["floor"] == 100.0
    rate = next(m for m in high["measurements"] if m["metric"] == "gflops")
    assert "floor" not in rate["extra"]  # the fraction judges % of peak only
    assert main(["bench", *TINY, "--expect", "0.00001", "--out", str(tmp_path / "low")]) == 0


def test_expect_a_floors_file(tmp_path, capsys):
    floors = tmp_path / "floors.toml"
    floors.write_text('"gemm/fp32 16x16x16/gflops" = 1e9\n')
    assert main(["bench", *TINY, "--expect", str(floors), "--out", str(tmp_path / "a")]) == 1
    assert "BELOW FLOOR" in (tmp_path / "a" / "report.md").read_text()
    floors.write_text('"gemm/fp32 16x16x16/gflops" = 1e-6\n')
    assert main(["bench", *TINY, "--expect", str(floors), "--out", str(tmp_path / "b")]) == 0
    # a floor naming no figure of the run never passes by omission
    floors.write_text('"gemm/fp32 4096x4096x4096/gflops" = 1\n')
    assert main(["bench", *TINY, "--expect", str(floors), "--out", str(tmp_path / "c")]) == 1
    capsys.readouterr()


@pytest.mark.parametrize("bad", ["0", "1.5", "no-such-file.toml"])
def test_a_bad_expect_is_a_user_error(bad, tmp_path, capsys):
    with pytest.raises(UserError):
        parse_expect(bad)
    assert main(["bench", *TINY, "--expect", bad, "--out", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()


def test_a_floor_on_a_time_is_refused(tmp_path):
    floors = tmp_path / "floors.toml"
    floors.write_text('"attention/math fp32 fwd/time_ms" = 1\n')
    argv = ["bench", "--device", "cpu", "--no-power", "--suite", "attention"]
    argv += ["--attention.backends", "math", "--attention.dtypes", "fp32"]
    argv += ["--attention.seq_len", "16", "--attention.timing.max_samples", "2"]
    assert main([*argv, "--expect", str(floors), "--out", str(tmp_path / "t")]) == 2
