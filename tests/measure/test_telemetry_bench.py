"""Telemetry around bench suites (bench.sustained): rows of burst vs sustained clocks, the share of
samples limited by power / temperature / hardware and ECC growth, from an injected reader on a
platform that says it has a GPU; nothing added on a CPU-only run."""

from __future__ import annotations

import itertools
import time

import pytest

from rocmkit.bench.sustained import telemetry_rows, with_telemetry
from rocmkit.measure.telemetry import TelemetrySample, TelemetrySampler, active_sampler
from rocmkit.measure.telemetry_parsers import DeviceReading
from rocmkit.platform import Platform
from rocmkit.platform.backend import DeviceInfo
from rocmkit.results import Measurement

GPU = Platform(
    backend="cuda",
    torch_version="2.x",
    gpu_available=True,
    devices=(DeviceInfo(index=0, name="H100", vendor="nvidia"),),
)
CPU = Platform(backend="cpu", torch_version=None)
ROW = Measurement(suite="gemm", name="bf16 8192", metric="tflops", value=650.0, unit="TFLOPS")


def _by(rows, name, metric):
    return next(m for m in rows if m.name == name and m.metric == metric)


def test_a_suite_gets_telemetry_rows_and_the_burn_in_can_see_the_sampler():
    clocks = itertools.repeat(1980.0)

    def reader():
        return (
            DeviceReading(
                index=0,
                sm_clock_mhz=next(clocks),
                power_w=690.0,
                temperature_c=71.0,
                clock_reasons=("sw_power_cap",),
                ecc_corrected=0,
                ecc_uncorrected=0,
            ),
        )

    seen = []

    def suite():
        seen.append(active_sampler())
        time.sleep(0.3)
        return [ROW]

    rows = with_telemetry("gemm", GPU, suite, reader=(reader, "fake"), interval_s=0.02)
    assert rows[0] is ROW and seen[0] is not None
    assert _by(rows, "gemm gpu0", "burst_clock").value == 1980
    assert _by(rows, "gemm gpu0", "sustained_clock").value is None  # shorter than the 2 s burst
    assert _by(rows, "gemm gpu0", "power_limited").value == 100
    assert _by(rows, "gemm gpu0", "thermal_limited").value == 0
    assert _by(rows, "gemm gpu0", "median_power").value == 690
    assert _by(rows, "gemm gpu0", "ecc_uncorrected_delta").value == 0
    assert {m.suite for m in rows[1:]} == {"telemetry"}


def test_burst_vs_sustained_and_reasons_per_gpu_from_recorded_samples():
    sampler = TelemetrySampler(lambda: (), source="nvidia-smi")
    for t, clock, reasons in [(0, 1980, ()), (1, 1980, ()), (3, 1650, ("hw_thermal_slowdown",))]:
        reading = DeviceReading(index=1, sm_clock_mhz=clock, clock_reasons=reasons)
        sampler._keep(TelemetrySample(time_s=t, devices=(reading,)))
    rows = telemetry_rows("attention", sampler)
    assert _by(rows, "attention gpu1", "burst_clock").value == 1980
    assert _by(rows, "attention gpu1", "sustained_clock").value == 1650
    assert _by(rows, "attention gpu1", "thermal_limited").value == pytest.approx(100 / 3, abs=0.01)
    assert _by(rows, "attention gpu1", "power_limited").value == 0
    assert _by(rows, "attention gpu1", "ecc_corrected_delta").value is None
    extra = _by(rows, "attention gpu1", "sustained_clock").extra
    assert extra["source"] == "nvidia-smi" and extra["slowdowns"] == ["hw_thermal_slowdown"]


def test_a_gpu_without_telemetry_says_why_a_cpu_run_adds_nothing():
    rows = with_telemetry(
        "gemm", GPU, lambda: [ROW], reader=(None, "no telemetry: amd-smi: not found")
    )
    assert rows[0] is ROW
    assert rows[1].suite == "telemetry" and "amd-smi: not found" in rows[1].extra["skipped"]
    assert with_telemetry("gemm", CPU, lambda: [ROW]) == [ROW]
    assert with_telemetry("gemm", GPU, lambda: [ROW], enabled=False) == [ROW]


def test_a_reader_that_always_fails_gives_its_error_as_the_reason():
    def broken():
        raise OSError("nvidia-smi: timed out after 5s")

    rows = with_telemetry(
        "gemm",
        GPU,
        lambda: time.sleep(0.1) or [ROW],
        reader=(broken, "nvidia-smi"),
        interval_s=0.01,
    )
    assert "timed out" in rows[1].extra["skipped"]
