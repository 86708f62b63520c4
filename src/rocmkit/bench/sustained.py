"""Telemetry around each bench suite: clocks, power, temperature, clock-limit reasons and ECC
counters sampled while the suite runs, summarised per GPU into rows of the `telemetry` suite.

`with_telemetry(name, platform, run)` is the one call the bench loop makes around a suite. The
rows say burst vs sustained (median SM clock over the first `BURST_S` seconds against the rest)
and why they differ: the share of samples the clock was held by its power limit, by temperature,
or by a hardware slowdown (NVML / amd-smi reasons, see measure.telemetry_parsers.REASON_KINDS),
and how much the ECC counters grew. A GPU run without a telemetry source gets one skipped row per
suite saying why; a CPU-only run gets none (its power row already says there is no GPU sensor).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rocmkit.measure.telemetry import (
    DeviceSummary,
    TelemetryReader,
    TelemetrySampler,
    sampling,
    summarize,
    telemetry_reader,
)
from rocmkit.measure.telemetry_parsers import REASON_KINDS
from rocmkit.platform import Platform
from rocmkit.results import Measurement

SUITE = "telemetry"
BURST_S = 2.0
INTERVAL_S = 0.5
_READERS: dict[str, tuple[TelemetryReader | None, str]] = {}


def platform_reader(platform: Platform) -> tuple[TelemetryReader | None, str]:
    """The telemetry reader for the platform's GPUs (found once per process), or (None, why)."""
    if not platform.gpu_available or not platform.devices:
        return None, "no GPU telemetry on a CPU-only run"
    vendor = platform.devices[0].vendor
    if vendor not in _READERS:
        _READERS[vendor] = telemetry_reader(vendor)
    return _READERS[vendor]


def with_telemetry(
    suite_name: str,
    platform: Platform,
    run: Callable[[], list[Measurement]],
    *,
    enabled: bool = True,
    reader: tuple[TelemetryReader | None, str] | None = None,
    interval_s: float = INTERVAL_S,
) -> list[Measurement]:
    """`run()`'s rows plus the telemetry rows of the stretch it ran (`reader`: (reader, name)
    to inject one; `enabled` False, e.g. --no-power, samples nothing)."""
    if not enabled or not platform.gpu_available:
        return run()  # a CPU-only run: the power row already says there is no GPU sensor
    found, source = reader if reader is not None else platform_reader(platform)
    sampler = TelemetrySampler(found, source=source, interval_s=interval_s) if found else None
    with sampling(sampler):
        rows = run()
    if sampler is None:
        return [*rows, _skipped(suite_name, source)]
    return [*rows, *telemetry_rows(suite_name, sampler)]


def telemetry_rows(suite_name: str, sampler: TelemetrySampler) -> list[Measurement]:
    """One row group per GPU: clocks burst/sustained, power, peak temperature, the share of
    samples limited by power / temperature / hardware, ECC growth."""
    summaries = summarize(sampler.samples(), burst_s=BURST_S)
    if not summaries:
        why = sampler.last_error or "no reading during the suite (it ran shorter than a sample)"
        return [_skipped(suite_name, f"{sampler.source}: {why}")]
    rows = []
    for device in summaries:
        rows += _device_rows(suite_name, device, sampler.source)
    return rows


def limited_pct(device: DeviceSummary, kind: str) -> float | None:
    """Percent of samples with a reason of `kind` (power, thermal, hardware) active; None when
    the source does not report reasons."""
    if not device.reasons_reported:
        return None
    shares = [
        share for reason, share in device.reasons_seen.items() if REASON_KINDS.get(reason) == kind
    ]
    return 100.0 * max(shares, default=0.0)


def _device_rows(suite_name: str, device: DeviceSummary, source: str) -> list[Measurement]:
    figures: list[tuple[str, float | None, str]] = [
        ("burst_clock", device.burst_sm_clock_mhz, "MHz"),
        ("sustained_clock", device.sustained_sm_clock_mhz, "MHz"),
        ("median_power", device.power_w.get("median"), "W"),
        ("max_temperature", device.temperature_c.get("max"), "C"),
        ("power_limited", limited_pct(device, "power"), "%"),
        ("thermal_limited", limited_pct(device, "thermal"), "%"),
        ("hw_slowdown", limited_pct(device, "hardware"), "%"),
        ("ecc_corrected_delta", _float(device.ecc_corrected_delta), "errors"),
        ("ecc_uncorrected_delta", _float(device.ecc_uncorrected_delta), "errors"),
    ]
    # the whole summary (min/median/max of every field, every reason's share) once, on the
    # sustained clock's row; the other rows name their source
    summary: dict[str, Any] = {"source": source, **device.record()}
    return [
        Measurement(
            suite=SUITE,
            name=f"{suite_name} gpu{device.index}",
            metric=metric,
            value=value,
            unit=unit,
            params={"suite": suite_name, "gpu": device.index},
            extra=summary if metric == "sustained_clock" else {"source": source},
        )
        for metric, value, unit in figures
    ]


def _float(value: int | None) -> float | None:
    return float(value) if value is not None else None


def _skipped(suite_name: str, why: str) -> Measurement:
    return Measurement(
        suite=SUITE,
        name=suite_name,
        metric="sustained_clock",
        value=None,
        unit="MHz",
        params={"suite": suite_name},
        extra={"skipped": why},
    )
