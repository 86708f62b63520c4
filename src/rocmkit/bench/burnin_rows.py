"""The burn-in's verdicts as rows: burst and sustained throughput per device and test, their ratio
against the decay floor, the checks, and per GPU the share of telemetry samples free of thermal or
hardware slowdown and the ECC counters' growth. Pure: logs and samples in, Measurements out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rocmkit.results import Measurement

if TYPE_CHECKING:
    from rocmkit.bench.burnin import BurnInConfig, BurnLog
    from rocmkit.measure.telemetry import DeviceSummary, TelemetrySampler

SUITE = "burn-in"
CHECKS = {
    "gemm": "every GEMM burst: C.x vs A.(B.x) in float64",
    "memory": "every pass: copy of a fresh pattern, bit for bit",
}
NO_TELEMETRY = "throttling and ECC not checked"


def rows(
    config: BurnInConfig,
    logs: list[BurnLog],
    telemetry: TelemetrySampler | None,
    start: float,
    end: float,
) -> list[Measurement]:
    """Every device's test rows, then every GPU's telemetry rows (or why there are none)."""
    from rocmkit.measure.telemetry import summarize

    out = [row for log in logs for row in device_rows(config, log)]
    if telemetry is None:
        return [*out, _skipped(f"no GPU telemetry on a CPU-only run: {NO_TELEMETRY}")]
    summaries = summarize(telemetry.samples(start, end))
    if not summaries:
        why = telemetry.last_error or "no reading during the burn-in"
        return [*out, _skipped(f"{telemetry.source}: {why}: {NO_TELEMETRY}")]
    for device in summaries:
        out += telemetry_rows(config, device, telemetry.source)
    return out


def device_rows(config: BurnInConfig, log: BurnLog) -> list[Measurement]:
    """burst (first window), sustained (last window, with the checks and the time series) and
    sustained_vs_burst (under 1 - decay_threshold: BELOW FLOOR)."""
    from rocmkit.bench.burnin import windows

    series = windows(log.points, config.windows_s)
    burst = series[0][1] if series else None
    sustained = series[-1][1] if series else None
    ratio = sustained / burst if burst and sustained is not None else None
    floor = 1.0 - config.decay_threshold
    judged = len(series) >= 2 and ratio is not None
    decayed = judged and ratio is not None and ratio < floor
    flags = []
    if log.num_wrong_checks:
        flags.append(f"errs: {log.num_wrong_checks} of {log.num_checks} checks wrong")
    if decayed:
        flags.append(f"decays: last window {ratio:.2f}x the first (floor {floor:.2f})")
    name = f"{log.device} {log.test}"
    params = {"device": log.device, "test": log.test}
    checked = {
        "correct": log.num_wrong_checks == 0,
        "num_wrong": log.num_wrong_checks,
        "num_checks": log.num_checks,
        "max_error": log.max_error,
        "check": CHECKS.get(log.test, ""),
        "first_wrong": log.first_wrong,
        "windows": [[round(t, 3), v] for t, v in series],
        "window_s": config.windows_s,
        "num_iterations": len(log.points),
        "flags": flags,
    }
    ratio_extra: dict[str, Any] = {"floor": floor, "below_floor": decayed, "flags": flags}
    if not judged:
        ratio_extra["note"] = "one window only: decay not judged (run longer)"
    return [
        Measurement(
            suite=SUITE, name=name, metric="burst", value=burst, unit=log.unit, params=params
        ),
        Measurement(
            suite=SUITE,
            name=name,
            metric="sustained",
            value=sustained,
            unit=log.unit,
            params=params,
            extra=checked,
        ),
        Measurement(
            suite=SUITE,
            name=name,
            metric="sustained_vs_burst",
            value=ratio,
            unit="x",
            params=params,
            extra=ratio_extra,
        ),
    ]


def telemetry_rows(config: BurnInConfig, device: DeviceSummary, source: str) -> list[Measurement]:
    """unthrottled: % of samples without a thermal/hardware slowdown (floor from
    slowdown_threshold); ECC growth, an uncorrectable one failing the run."""
    name = f"gpu{device.index} telemetry"
    params = {"gpu": device.index}
    fraction = device.slowdown_fraction
    floor = 100.0 * (1.0 - config.slowdown_threshold)
    unthrottled = None if fraction is None else 100.0 * (1.0 - fraction)
    throttled = unthrottled is not None and unthrottled < floor
    flags = [f"throttles: {', '.join(device.slowdowns)}"] if throttled else []
    uncorrected = device.ecc_uncorrected_delta
    if uncorrected:
        flags.append(f"errs: {uncorrected} uncorrectable ECC error(s) during the burn-in")
    common: dict[str, Any] = {"source": source, "flags": flags}
    reasons: dict[str, Any] = {
        **common,
        "reasons_seen": device.reasons_seen,
        "floor": floor,
        "below_floor": throttled,
    }
    if unthrottled is None:
        reasons["skipped"] = f"{source} reports no clock-limit reasons"
    ecc: dict[str, Any] = dict(common)
    if uncorrected is not None:
        ecc |= {
            "correct": uncorrected == 0,
            "num_wrong": uncorrected,
            "check": "uncorrectable ECC count unchanged",
        }
    else:
        ecc["skipped"] = f"{source} reports no ECC counters"
    corrected = device.ecc_corrected_delta
    return [
        Measurement(
            suite=SUITE,
            name=name,
            metric="unthrottled",
            value=unthrottled,
            unit="%",
            params=params,
            extra=reasons,
        ),
        Measurement(
            suite=SUITE,
            name=name,
            metric="ecc_uncorrected_delta",
            value=float(uncorrected) if uncorrected is not None else None,
            unit="errors",
            params=params,
            extra=ecc,
        ),
        Measurement(
            suite=SUITE,
            name=name,
            metric="ecc_corrected_delta",
            value=float(corrected) if corrected is not None else None,
            unit="errors",
            params=params,
            extra=dict(common),
        ),
    ]


def _skipped(why: str) -> Measurement:
    return Measurement(
        suite=SUITE,
        name="telemetry",
        metric="unthrottled",
        value=None,
        unit="%",
        extra={"skipped": why},
    )


def flags(measurements: list[Measurement]) -> dict[str, list[str]]:
    """Row name -> its flags (errs / decays / throttles), for a summary line."""
    found: dict[str, list[str]] = {}
    for m in measurements:
        if m.suite == SUITE and m.extra.get("flags"):
            found.setdefault(m.name, [])
            found[m.name] += [f for f in m.extra["flags"] if f not in found[m.name]]
    return found
