"""Pure parsers of GPU telemetry: clocks, power, temperature, clock-limit reasons, ECC/RAS counters.

Each parser turns one tool's output (text) into `DeviceReading`s and raises `SmiParseError` on text
it cannot read. A value a tool reports as "N/A" is None; a source that has no notion of a field
(rocm-smi has no clock-limit reasons) leaves it None too, so "none seen" and "not reported" differ.

Sources of the field names (the emitters' own definitions):
- NVML clock event / throttle reason bits: nvml.h, as exported by nvidia-ml-py 13.615.71 (pynvml.py,
  `nvmlClocksEventReason*` and `nvmlClocksThrottleReason*`); the names are nvidia-smi's
  (`nvidia-smi --help-query-gpu`, `clocks_throttle_reasons.*`).
- amd-smi `metric --json`: ROCm/amdsmi@0ceca28 amdsmi_cli/amdsmi_commands.py `metric_gpu` (keys
  `clock.gfx_N.clk`, `temperature.hotspot`, `power.throttle_status`, `throttle.*_violation_status`
  "ACTIVE"/"NOT ACTIVE", `ecc.total_(un)correctable_count`).
- rocm-smi `--showallinfo --json` / `-a --json`: keys as recorded from ROCm 5 and 6 (tests).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rocmkit.platform.smi import SmiParseError, parse_amd_smi_json, parse_nvidia_smi_csv

# NVML clock reason bits (nvml.h via pynvml 13.615.71) -> nvidia-smi's name for the reason.
NVML_CLOCK_REASONS: dict[int, str] = {
    0x001: "gpu_idle",
    0x002: "applications_clocks_setting",
    0x004: "sw_power_cap",
    0x008: "hw_slowdown",
    0x010: "sync_boost",
    0x020: "sw_thermal_slowdown",
    0x040: "hw_thermal_slowdown",
    0x080: "hw_power_brake_slowdown",
    0x100: "display_clocks_setting",
    0x200: "board_limit",
    0x400: "reliability",
}

# What each reason means for a benchmark. "thermal" and "hardware" slow a healthy-looking run for a
# cause outside the workload (cooling, power delivery, a fault): a burn-in flags them. "power" is
# the board holding its power limit under load, normal for a sustained GEMM; "idle" and "setting"
# are the absence of load or a user's clock setting.
REASON_KINDS: dict[str, str] = {
    "gpu_idle": "idle",
    "applications_clocks_setting": "setting",
    "display_clocks_setting": "setting",
    "sync_boost": "setting",
    "sw_power_cap": "power",
    "board_limit": "power",
    "ppt": "power",  # AMD package power tracking
    "throttled": "power",  # amd-smi's overall throttle_status: the cause is not said
    "sw_thermal_slowdown": "thermal",
    "hw_thermal_slowdown": "thermal",
    "socket_thermal": "thermal",
    "vr_thermal": "thermal",
    "hbm_thermal": "thermal",
    "prochot": "thermal",
    "hw_slowdown": "hardware",
    "hw_power_brake_slowdown": "hardware",
    "reliability": "hardware",
}
SLOWDOWN_KINDS = frozenset({"thermal", "hardware"})


@dataclass(frozen=True, kw_only=True, slots=True)
class DeviceReading:
    """One device at one moment. None: the source did not report the field."""

    index: int
    sm_clock_mhz: float | None = None  # SM (NVIDIA) / graphics (AMD, mean over XCDs)
    memory_clock_mhz: float | None = None
    power_w: float | None = None
    temperature_c: float | None = None  # the hottest reported: hotspot/junction, else edge/GPU
    memory_temperature_c: float | None = None
    clock_reasons: tuple[str, ...] | None = None  # active reasons; None: not reported
    ecc_corrected: int | None = None  # since driver load (volatile); deltas are what matter
    ecc_uncorrected: int | None = None


def decode_nvml_reasons(mask: int, bits: Mapping[int, str] | None = None) -> tuple[str, ...]:
    """The names of the set bits of an NVML clock reason mask; unknown bits as "bit_0x..."."""
    table = NVML_CLOCK_REASONS if bits is None else bits
    names = [name for bit, name in sorted(table.items()) if mask & bit]
    unknown = mask & ~sum(table)
    names += [f"bit_{1 << i:#x}" for i in range(64) if unknown >> i & 1]
    return tuple(names)


def slowdowns(reasons: Iterable[str]) -> list[str]:
    """The reasons that mean thermal or hardware slowdown (what a burn-in flags)."""
    return [r for r in reasons if REASON_KINDS.get(r) in SLOWDOWN_KINDS]


def _number(value: Any) -> float | None:
    """12, "12", "12.5 W", {"value": 12, "unit": "W"}, "(800Mhz)" -> float; "N/A", None -> None."""
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    match = re.search(r"-?\d+(?:\.\d+)?", str(value))
    return float(match.group()) if match and "N/A" not in str(value) else None


def _count(value: Any) -> int | None:
    number = _number(value)
    return int(number) if number is not None else None


# ---------------------------------------------------------------------------- nvidia-smi

NVIDIA_TELEMETRY_FIELDS = (
    "index",
    "clocks.sm",
    "clocks.mem",
    "power.draw",
    "temperature.gpu",
    "temperature.memory",
    "clocks_throttle_reasons.active",
    "ecc.errors.corrected.volatile.total",
    "ecc.errors.uncorrected.volatile.total",
)


def _first(row: Mapping[str, str | None], *keys: str) -> str | None:
    return next((row[k] for k in keys if row.get(k) is not None), None)


def parse_nvidia_smi_telemetry(text: str) -> tuple[DeviceReading, ...]:
    """`nvidia-smi --query-gpu=<NVIDIA_TELEMETRY_FIELDS> --format=csv,nounits` (with its header:
    the columns are found by name, so older drivers' spellings and subsets parse too)."""
    readings = []
    for position, row in enumerate(parse_nvidia_smi_csv(text)):
        mask = _first(row, "clocks_throttle_reasons.active", "clocks_event_reasons.active")
        index = _first(row, "index")
        readings.append(
            DeviceReading(
                index=int(index) if index and index.isdigit() else position,
                sm_clock_mhz=_number(_first(row, "clocks.sm", "clocks.current.sm")),
                memory_clock_mhz=_number(_first(row, "clocks.mem", "clocks.current.memory")),
                power_w=_number(_first(row, "power.draw", "power.draw.instant")),
                temperature_c=_number(_first(row, "temperature.gpu")),
                memory_temperature_c=_number(_first(row, "temperature.memory")),
                clock_reasons=decode_nvml_reasons(int(mask, 16)) if mask else None,
                ecc_corrected=_count(_first(row, "ecc.errors.corrected.volatile.total")),
                ecc_uncorrected=_count(_first(row, "ecc.errors.uncorrected.volatile.total")),
            )
        )
    return tuple(readings)


def parse_nvidia_smi_xml_telemetry(text: str) -> tuple[DeviceReading, ...]:
    """`nvidia-smi -q -x`: the same fields from the XML report (drivers before and after 535 name
    the reasons `clocks_throttle_reasons` / `clocks_event_reasons`)."""
    try:
        root = ET.fromstring(text.strip())
    except ET.ParseError as exc:
        raise SmiParseError(f"nvidia-smi XML does not parse: {exc}") from None
    gpus = root.findall("gpu")
    if root.tag != "nvidia_smi_log" or not gpus:
        raise SmiParseError("not nvidia-smi -q -x output (no <nvidia_smi_log> with a <gpu>)")
    readings = []
    for position, gpu in enumerate(gpus):
        corrected, uncorrected = _xml_ecc(gpu)
        readings.append(
            DeviceReading(
                index=position,
                sm_clock_mhz=_number(gpu.findtext("clocks/sm_clock")),
                memory_clock_mhz=_number(gpu.findtext("clocks/mem_clock")),
                power_w=_number(
                    gpu.findtext("gpu_power_readings/power_draw")
                    or gpu.findtext("gpu_power_readings/instant_power_draw")
                    or gpu.findtext("power_readings/power_draw")
                ),
                temperature_c=_number(gpu.findtext("temperature/gpu_temp")),
                memory_temperature_c=_number(gpu.findtext("temperature/memory_temp")),
                clock_reasons=_xml_reasons(gpu),
                ecc_corrected=corrected,
                ecc_uncorrected=uncorrected,
            )
        )
    return tuple(readings)


def _xml_reasons(gpu: ET.Element) -> tuple[str, ...] | None:
    block = gpu.find("clocks_event_reasons")
    if block is None:
        block = gpu.find("clocks_throttle_reasons")
    if block is None:
        return None
    active = []
    for child in block:
        name = re.sub(r"^clocks_(?:event|throttle)_reason_", "", child.tag)
        if (child.text or "").strip() == "Active":
            active.append(name)
    return tuple(active)


def _xml_ecc(gpu: ET.Element) -> tuple[int | None, int | None]:
    """Volatile (since driver load) totals; pre-Ampere drivers say single_bit/double_bit, later
    ones sram_/dram_ (un)correctable."""
    volatile = gpu.find("ecc_errors/volatile")
    if volatile is None:
        return None, None
    corrected = [
        volatile.findtext(p) for p in ("single_bit/total", "sram_correctable", "dram_correctable")
    ]
    uncorrected = [
        volatile.findtext(p)
        for p in ("double_bit/total", "sram_uncorrectable", "dram_uncorrectable")
    ]
    return _sum_counts(corrected), _sum_counts(uncorrected)


def _sum_counts(values: Iterable[str | None]) -> int | None:
    counts = [c for c in (_count(v) for v in values) if c is not None]
    return sum(counts) if counts else None


# ---------------------------------------------------------------------------- amd-smi

AMD_VIOLATIONS = ("prochot", "ppt", "socket_thermal", "vr_thermal", "hbm_thermal")


def parse_amd_smi_metric(text: str) -> tuple[DeviceReading, ...]:
    """`amd-smi metric --json` (ROCm 6 list, ROCm 7 `{"gpu_data": [...]}`); a subset such as
    `metric -p --json` parses too, with the other fields None."""
    readings = []
    for position, record in enumerate(parse_amd_smi_json(text)):
        gpu = record.get("gpu", position)
        clocks, temps, power, ecc = (
            _section(record, name) for name in ("clock", "temperature", "power", "ecc")
        )
        readings.append(
            DeviceReading(
                index=int(gpu) if str(gpu).isdigit() else position,
                sm_clock_mhz=_mean_clock(clocks, "gfx_"),
                memory_clock_mhz=_mean_clock(clocks, "mem_"),
                power_w=_number(power.get("socket_power")),
                temperature_c=_number(temps.get("hotspot")) or _number(temps.get("edge")),
                memory_temperature_c=_number(temps.get("mem")),
                clock_reasons=_amd_reasons(power, record.get("throttle")),
                ecc_corrected=_count(ecc.get("total_correctable_count")),
                ecc_uncorrected=_count(ecc.get("total_uncorrectable_count")),
            )
        )
    return tuple(readings)


def _section(record: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A section of an amd-smi record; "N/A" (the whole section unsupported) reads as empty."""
    value = record.get(name)
    return value if isinstance(value, dict) else {}


def _mean_clock(clocks: Mapping[str, Any], prefix: str) -> float | None:
    """MI300-class parts report one graphics clock per XCD (gfx_0..gfx_7): their mean."""
    values = [
        v
        for key, entry in clocks.items()
        if key.startswith(prefix) and isinstance(entry, dict)
        for v in [_number(entry.get("clk"))]
        if v is not None
    ]
    return sum(values) / len(values) if values else None


def _amd_reasons(power: Mapping[str, Any], throttle: Any) -> tuple[str, ...] | None:
    status = str(power.get("throttle_status", "N/A")).upper()
    violations = throttle if isinstance(throttle, dict) else {}
    named = [
        name
        for name in AMD_VIOLATIONS
        if str(violations.get(f"{name}_violation_status", "")).upper() == "ACTIVE"
    ]
    reported = status in ("THROTTLED", "UNTHROTTLED") or any(
        str(violations.get(f"{n}_violation_status", "N/A")).upper() != "N/A" for n in AMD_VIOLATIONS
    )
    if not reported:
        return None
    # the per-cause violations say why; the overall status alone only says "throttled"
    return tuple(named) if named else (("throttled",) if status == "THROTTLED" else ())


# ---------------------------------------------------------------------------- rocm-smi


def parse_rocm_smi_telemetry(text: str) -> tuple[DeviceReading, ...]:
    """`rocm-smi --showallinfo --json` (or `-a --json`): per `cardN`, clocks "(800Mhz)", power,
        temperatures. Its JSON has no clock-limit reasons and (in the ROCm 5/6 outputs recorded) no
    ECC totals, so those stay None."""
    from rocmkit.platform.smi import parse_rocm_smi_json

    readings = []
    for card in parse_rocm_smi_json(text).cards:
        fields = card.raw

        def find(pattern: str, fields: dict[str, str] = fields) -> float | None:
            return next((_number(v) for k, v in fields.items() if re.fullmatch(pattern, k)), None)

        power = find(r"current socket graphics package power \(w\)") or find(
            r"average graphics package power \(w\)"
        )
        hottest = find(r"temperature \(sensor junction\) \(c\)") or find(
            r"temperature \(sensor edge\) \(c\)"
        )
        readings.append(
            DeviceReading(
                index=card.index,
                sm_clock_mhz=find(r"sclk clock speed"),
                memory_clock_mhz=find(r"mclk clock speed"),
                power_w=power,
                temperature_c=hottest,
                memory_temperature_c=find(r"temperature \(sensor memory\) \(c\)"),
            )
        )
    return tuple(readings)
