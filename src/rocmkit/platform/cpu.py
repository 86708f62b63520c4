"""Host CPU description from /proc/cpuinfo and cpufreq (parser is pure; root path injectable)."""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from rocmkit.platform.backend import CpuInfo

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# ISA flags that matter for ML work on a CPU (bf16/fp16 matmul speed depends on them).
INTERESTING_FLAGS = (
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512_bf16",
    "avx512_fp16",
    "avx512_vnni",
    "avx_vnni",
    "amx_bf16",
    "amx_fp16",
    "amx_int8",
    "asimd",
    "sve",
    "bf16",
)
_MAX_FREQ = "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"  # kHz


def parse_cpuinfo(text: str) -> CpuInfo:
    """Parse the text of /proc/cpuinfo (x86 or Arm) into a CpuInfo."""
    model = "unknown CPU"
    flags: set[str] = set()
    num_logical = 0
    cores: set[tuple[str, str]] = set()
    physical_id = "0"
    ids: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "processor":
            num_logical += 1
        elif key in ("model name", "Model", "Hardware") and model == "unknown CPU" and value:
            model = value
        elif key in ("flags", "Features"):
            flags.update(value.split())
        elif key == "physical id":
            physical_id = value
        elif key == "core id":
            cores.add((physical_id, value))
        elif key in ("vendor_id", "cpu family", "model", "cpu MHz"):
            ids.setdefault(key, value)
    return CpuInfo(
        model=model,
        num_physical_cores=len(cores) or None,
        num_logical_cores=num_logical or None,
        flags=tuple(f for f in INTERESTING_FLAGS if f in flags),
        vendor=ids.get("vendor_id", ""),
        family=_integer(ids.get("cpu family")),
        model_number=_integer(ids.get("model")),
        nominal_mhz=_real(ids.get("cpu MHz")),
    )


def _integer(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


def _real(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def detect_cpu(root: str | Path = "/") -> CpuInfo:
    """Read /proc/cpuinfo and cpufreq's max clock under `root`; fall back to os.cpu_count() when
    /proc/cpuinfo is unreadable."""
    try:
        text = (Path(root) / "proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    info = parse_cpuinfo(text)
    try:
        max_khz = float((Path(root) / _MAX_FREQ).read_text().strip())
    except (OSError, ValueError):
        max_khz = 0.0
    if max_khz > 0:
        info = dataclasses.replace(info, max_mhz=max_khz / 1e3)
    if info.num_logical_cores is None:
        info = dataclasses.replace(info, num_physical_cores=None, num_logical_cores=os.cpu_count())
    return info


@dataclasses.dataclass(frozen=True)
class CpuClock:
    """A clock for a CPU peak: its value, where it came from, and whether it is an upper bound."""

    ghz: float
    source: str
    is_upper_bound: bool


def max_clock(info: CpuInfo) -> CpuClock | None:
    """The highest clock the cores can run at: cpufreq's max, else the highest boost of the CPU's
    generation (cpu_clocks.toml), else the nominal clock (not an upper bound: boost exceeds it)."""
    if info.max_mhz:
        return CpuClock(info.max_mhz / 1e3, "max clock from cpufreq", True)
    generation = cpu_generation(info)
    if generation is not None:
        ghz = float(str(generation["max_boost_ghz"]))
        how = f"highest max boost of {generation['name']}, {generation['source']}"
        return CpuClock(ghz, how, True)
    if info.nominal_mhz:
        how = "nominal clock from /proc/cpuinfo (no max clock known: boost may exceed it)"
        return CpuClock(info.nominal_mhz / 1e3, how, False)
    return None


def cpu_generation(info: CpuInfo) -> dict[str, object] | None:
    """The cpu_clocks.toml row of this CPU's vendor/family/model, or None."""
    if info.family is None or info.model_number is None:
        return None
    model = info.model_number
    for row in _generations():
        same_family = row["vendor"] == info.vendor and row["family"] == info.family
        if same_family and any(lo <= model <= hi for lo, hi in row["models"]):
            return row
    return None


@functools.cache
def _generations() -> tuple[dict[str, Any], ...]:
    raw = resources.files("rocmkit.platform").joinpath("cpu_clocks.toml").read_bytes()
    return tuple(tomllib.loads(raw.decode("utf-8"))["generation"])
