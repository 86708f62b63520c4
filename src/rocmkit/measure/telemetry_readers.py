"""Telemetry readers: `() -> tuple[DeviceReading, ...]` for every visible GPU at once, from the
pynvml or amdsmi Python library when importable, else from `nvidia-smi`, `amd-smi` or `rocm-smi`
run through the one runner with a deadline (`platform.smi.run_command`). `telemetry_reader(vendor)`
picks one, or says why there is none; it never raises.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from rocmkit.measure.telemetry_parsers import (
    NVIDIA_TELEMETRY_FIELDS,
    DeviceReading,
    decode_nvml_reasons,
    parse_amd_smi_metric,
    parse_nvidia_smi_telemetry,
    parse_rocm_smi_telemetry,
)
from rocmkit.platform.smi import Runner, SmiParseError, run_command

TelemetryReader = Callable[[], "tuple[DeviceReading, ...]"]
COMMAND_TIMEOUT_S = 5.0


def command_reader(
    argv: Sequence[str],
    parse: Callable[[str], tuple[DeviceReading, ...]],
    runner: Runner = run_command,
) -> TelemetryReader:
    """Run `argv` with a deadline and parse its stdout; a failed run or unreadable output reads
    as no devices (the sampler counts it as an error)."""

    def read() -> tuple[DeviceReading, ...]:
        done = runner(list(argv), COMMAND_TIMEOUT_S)
        if not done.ran:
            raise OSError(f"{argv[0]}: {done.error}")
        return parse(done.stdout)

    return read


def _nvml_reader(import_module: Callable[[str], Any]) -> TelemetryReader:
    nvml = import_module("pynvml")
    nvml.nvmlInit()
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
    if not handles:
        raise RuntimeError("NVML sees no GPU")

    def field_or_none(call: Callable[..., Any], *args: Any) -> Any:
        try:
            return call(*args)
        except Exception:  # NVMLError_NotSupported on boards without the sensor or ECC
            return None

    def reasons(handle: Any) -> tuple[str, ...] | None:
        get = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )
        mask = field_or_none(get, handle) if get else None
        return decode_nvml_reasons(int(mask)) if mask is not None else None

    def read() -> tuple[DeviceReading, ...]:
        readings = []
        for index, h in enumerate(handles):
            milliwatts = field_or_none(nvml.nvmlDeviceGetPowerUsage, h)
            ecc = nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
            counts = [
                field_or_none(nvml.nvmlDeviceGetTotalEccErrors, h, kind, nvml.NVML_VOLATILE_ECC)
                for kind in ecc
            ]
            readings.append(
                DeviceReading(
                    index=index,
                    sm_clock_mhz=field_or_none(nvml.nvmlDeviceGetClockInfo, h, nvml.NVML_CLOCK_SM),
                    memory_clock_mhz=field_or_none(
                        nvml.nvmlDeviceGetClockInfo, h, nvml.NVML_CLOCK_MEM
                    ),
                    power_w=milliwatts / 1e3 if milliwatts is not None else None,
                    temperature_c=field_or_none(
                        nvml.nvmlDeviceGetTemperature, h, nvml.NVML_TEMPERATURE_GPU
                    ),
                    clock_reasons=reasons(h),
                    ecc_corrected=counts[0],
                    ecc_uncorrected=counts[1],
                )
            )
        return tuple(readings)

    return read


def _amdsmi_reader(import_module: Callable[[str], Any]) -> TelemetryReader:
    amd = import_module("amdsmi")
    amd.amdsmi_init()
    handles = list(amd.amdsmi_get_processor_handles())
    if not handles:
        raise RuntimeError("amdsmi sees no GPU")

    def get(call: str, *args: Any) -> Any:
        try:
            return getattr(amd, call)(*args)
        except Exception:  # not supported on this ASIC (violation status is MI300+ only)
            return None

    def read() -> tuple[DeviceReading, ...]:
        readings = []
        temp, metric = amd.AmdSmiTemperatureType, amd.AmdSmiTemperatureMetric
        for index, h in enumerate(handles):
            power = get("amdsmi_get_power_info", h) or {}
            ecc = get("amdsmi_get_gpu_total_ecc_count", h) or {}
            violations = get("amdsmi_get_violation_status", h) or {}
            active = [
                name for name, key in _AMDSMI_VIOLATIONS if violations.get(f"active_{key}") is True
            ]
            hotspot = get("amdsmi_get_temp_metric", h, temp.HOTSPOT, metric.CURRENT)
            readings.append(
                DeviceReading(
                    index=index,
                    sm_clock_mhz=(get("amdsmi_get_clock_info", h, amd.AmdSmiClkType.GFX) or {}).get(
                        "clk"
                    ),
                    memory_clock_mhz=(
                        get("amdsmi_get_clock_info", h, amd.AmdSmiClkType.MEM) or {}
                    ).get("clk"),
                    power_w=_watts(power),
                    temperature_c=hotspot
                    if hotspot is not None
                    else get("amdsmi_get_temp_metric", h, temp.EDGE, metric.CURRENT),
                    memory_temperature_c=get(
                        "amdsmi_get_temp_metric", h, temp.VRAM, metric.CURRENT
                    ),
                    clock_reasons=tuple(active) if violations else None,
                    ecc_corrected=_int_or_none(ecc.get("correctable_count")),
                    ecc_uncorrected=_int_or_none(ecc.get("uncorrectable_count")),
                )
            )
        return tuple(readings)

    return read


# amdsmi_get_violation_status keys (`active_<key>`, MI300+) -> our reason names
_AMDSMI_VIOLATIONS = (
    ("prochot", "prochot_thrm"),
    ("ppt", "ppt_pwr"),
    ("socket_thermal", "socket_thrm"),
    ("vr_thermal", "vr_thrm"),
    ("hbm_thermal", "hbm_thrm"),
)


def _watts(power: dict[str, Any]) -> float | None:
    for key in ("current_socket_power", "average_socket_power", "socket_power"):
        value = power.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _nvidia_query(reasons_field: str) -> tuple[str, ...]:
    fields = [
        reasons_field if f == "clocks_throttle_reasons.active" else f
        for f in NVIDIA_TELEMETRY_FIELDS
    ]
    return ("nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,nounits")


# nvidia-smi refuses a whole query with one unknown field: drivers from 535 name the reasons
# `clocks_event_reasons.*` (the old name stays as an alias there), older ones only the old name.
_COMMANDS: dict[str, list[tuple[tuple[str, ...], Callable[[str], tuple[DeviceReading, ...]]]]] = {
    "nvidia": [
        (_nvidia_query("clocks_event_reasons.active"), parse_nvidia_smi_telemetry),
        (_nvidia_query("clocks_throttle_reasons.active"), parse_nvidia_smi_telemetry),
    ],
    "amd": [
        (("amd-smi", "metric", "--json"), parse_amd_smi_metric),
        (("rocm-smi", "--showallinfo", "--json"), parse_rocm_smi_telemetry),
    ],
}
_LIBRARIES = {"nvidia": ("pynvml", _nvml_reader), "amd": ("amdsmi", _amdsmi_reader)}


def telemetry_reader(
    vendor: str,
    *,
    runner: Runner = run_command,
    import_module: Callable[[str], Any] = importlib.import_module,
) -> tuple[TelemetryReader | None, str]:
    """The best reader for a GPU vendor ("amd" / "nvidia") and its name, or (None, why not).
    A command-line reader is kept only when one trial run parses."""
    if vendor not in _COMMANDS:
        return None, "no GPU telemetry on a CPU-only run"
    library, make = _LIBRARIES[vendor]
    why = []
    try:
        return make(import_module), library
    except Exception as exc:  # no module, no driver, no device
        why.append(f"{library}: {str(exc).strip() or type(exc).__name__}")
    for argv, parse in _COMMANDS[vendor]:
        reader = command_reader(argv, parse, runner)
        try:
            reader()
        except (OSError, SmiParseError) as exc:
            why.append(str(exc) if isinstance(exc, OSError) else f"{argv[0]}: {exc}")
            continue
        return reader, argv[0]
    return None, "no telemetry: " + "; ".join(why)
