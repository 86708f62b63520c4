"""Host CPU description from /proc/cpuinfo (parser is pure; root path injectable)."""

from __future__ import annotations

import os
from pathlib import Path

from rocmkit.platform.backend import CpuInfo

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


def parse_cpuinfo(text: str) -> CpuInfo:
    """Parse the text of /proc/cpuinfo (x86 or Arm) into a CpuInfo."""
    model = "unknown CPU"
    flags: set[str] = set()
    num_logical = 0
    cores: set[tuple[str, str]] = set()
    physical_id = "0"
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
    return CpuInfo(
        model=model,
        num_physical_cores=len(cores) or None,
        num_logical_cores=num_logical or None,
        flags=tuple(f for f in INTERESTING_FLAGS if f in flags),
    )


def detect_cpu(root: str | Path = "/") -> CpuInfo:
    """Read /proc/cpuinfo under `root`; fall back to os.cpu_count() when it is unreadable."""
    try:
        text = (Path(root) / "proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    info = parse_cpuinfo(text)
    if info.num_logical_cores is None:
        info = CpuInfo(
            model=info.model,
            num_physical_cores=None,
            num_logical_cores=os.cpu_count(),
            flags=info.flags,
        )
    return info
