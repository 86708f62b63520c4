"""The precision comparison: ratio maths, and a real tiny run through rocmkit.train on CPU."""

from __future__ import annotations

import os

import pytest

from rocmkit.bench.train_precision import (
    TrainPrecisionConfig,
    _Run,
    precision_rows,
    run_train_precision,
)
from rocmkit.errors import UserError
from rocmkit.platform import CpuInfo, Platform


def _fake(units_per_s: float, memory: int | None, energy: float | None = None) -> _Run:
    return _Run(
        units_per_s=units_per_s,
        unit_name="tokens",
        peak_memory_bytes=memory,
        mfu=0.4,
        final_loss=2.0,
        energy_j=energy,
        num_steps=10,
        num_units=1000.0,
    )


def test_rows_compare_against_fp32():
    fp32, bf16 = _fake(1000.0, 4 * 2**30), _fake(1800.0, 2 * 2**30, energy=500.0)
    rows = {m.metric: m for m in precision_rows("gpt bf16", {"dtype": "bf16"}, bf16, fp32)}
    assert rows["speedup_vs_fp32"].value == pytest.approx(1.8)
    assert rows["memory_saving_vs_fp32"].value == pytest.approx(50.0)
    assert rows["peak_memory"].value == pytest.approx(2048.0) and rows["peak_memory"].unit == "MiB"
    assert rows["mfu"].value == pytest.approx(40.0) and rows["mfu"].unit == "%"
    assert rows["energy_per_step"].value == pytest.approx(50.0)
    assert (
        rows["energy_per_unit"].value == pytest.approx(0.5)
        and rows["energy_per_unit"].unit == "J/token"
    )
    assert (
        rows["units_per_joule"].value == pytest.approx(2.0)
        and rows["units_per_joule"].unit == "tokens/J"
    )


def test_unknown_energy_and_memory_are_none_not_zero():
    rows = {m.metric: m for m in precision_rows("x", {}, _fake(10.0, None), None)}
    for metric in (
        "speedup_vs_fp32",
        "peak_memory",
        "memory_saving_vs_fp32",
        "energy_per_step",
        "units_per_joule",
    ):
        assert rows[metric].value is None


def test_config_validation():
    with pytest.raises(UserError):
        TrainPrecisionConfig(dtypes=["fp64"])
    with pytest.raises(UserError):
        TrainPrecisionConfig(steps=1)


@pytest.mark.slow
def test_real_tiny_gpt_through_rocmkit_train(tmp_path, monkeypatch):
    pytest.importorskip("rocmkit.train", reason="rocmkit.train is not in this checkout")
    monkeypatch.chdir(tmp_path)
    cpu = Platform(
        backend="cpu",
        torch_version="x",
        cpu=CpuInfo(model="t", num_physical_cores=1, num_logical_cores=1),
    )
    tiny = {
        "gpt-tiny": {
            "model.n_layer": "1",
            "model.d_model": "32",
            "model.n_head": "2",
            # 128 tokens a step: with far fewer (16 x 2), autocast's bf16 copies of the weights
            # outweigh the halved activations and bf16's activation peak is the larger one.
            "model.seq_len": "32",
            "model.vocab_size": "64",
            "train.micro_batch": "4",
        }
    }
    config = TrainPrecisionConfig(
        models=["gpt-tiny"], dtypes=["fp32", "bf16"], steps=2, overrides=tiny
    )
    rows = {(m.params["dtype"], m.metric): m for m in run_train_precision(config, cpu)}
    assert (
        rows[("fp32", "throughput")].value > 0 and rows[("fp32", "throughput")].unit == "tokens/s"
    )
    assert rows[("fp32", "speedup_vs_fp32")].value == pytest.approx(1.0)
    assert rows[("bf16", "speedup_vs_fp32")].value > 0
    fp32_peak, bf16_peak = rows[("fp32", "peak_memory")], rows[("bf16", "peak_memory")]
    assert "MemTracker" in bf16_peak.extra["source"]
    assert fp32_peak.extra["peak_bytes"] > 0 and bf16_peak.extra["peak_bytes"] > 0
    assert bf16_peak.value == pytest.approx(bf16_peak.extra["peak_bytes"] / 2**20)
    # The saving is the one computed from the two measured peaks.
    expected = 100 * (1 - bf16_peak.extra["peak_bytes"] / fp32_peak.extra["peak_bytes"])
    assert rows[("bf16", "memory_saving_vs_fp32")].value == pytest.approx(expected)
    assert rows[("fp32", "memory_saving_vs_fp32")].value == pytest.approx(0.0)
    # bf16 autocast keeps fp32 weights, gradients and AdamW state; what it halves is the
    # activations saved for backward, so the whole-step peak drops by less than that.
    fp32_act = fp32_peak.extra["activations_peak_bytes"]
    bf16_act = bf16_peak.extra["activations_peak_bytes"]
    assert 0 < bf16_act < fp32_act
    assert rows[("bf16", "memory_saving_vs_fp32")].value > 0
    assert (
        fp32_peak.extra["at_peak_bytes"]["optimizer"]
        == bf16_peak.extra["at_peak_bytes"]["optimizer"]
    )
    assert os.listdir(tmp_path) == []  # no checkpoints or train run directory left behind


def test_fp16_step_without_optimizer_state_reports_na_not_a_saving(monkeypatch):
    # A skipped fp16 warm-up step leaves AdamW without state: that peak is not comparable.
    from rocmkit.bench import train_precision
    from rocmkit.measure.memory import CategoryPeaks

    def fake_measure(config, device):
        return CategoryPeaks(
            device="cpu",
            peak_bytes={"activations": 10},
            at_total_peak_bytes={"parameters": 100},
            after_step_bytes={"parameters": 100, "optimizer": 0},
            total_peak_bytes=120,
        )

    monkeypatch.setattr("rocmkit.train.step_memory", fake_measure)
    run = _fake(10.0, 5 * 2**30)
    train_precision._measure_cpu_step_memory(run, object())
    rows = {m.metric: m for m in precision_rows("x fp16", {}, run, _fake(10.0, 200))}
    assert (
        rows["peak_memory"].value is None and "loss scaler" in rows["peak_memory"].extra["skipped"]
    )
    assert rows["memory_saving_vs_fp32"].value is None
