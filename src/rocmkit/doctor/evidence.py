"""Facts a log states about itself, for the explainer's signatures to read: the gfx or sm target
it names, which device index failed (and what that device is), whether it came from WSL.

Pure functions of the text (and, when the log came from this machine, of the `Platform`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rocmkit.platform.specs import arch_facts

if TYPE_CHECKING:
    from rocmkit.platform.backend import Platform

_GFX = re.compile(r"\bgfx([0-9]{3,4}[a-f]?)\b", re.IGNORECASE)
_SM = re.compile(r"\bsm_(\d{2,3})\b")
_CURRENT_DEVICE = re.compile(r"current device:\s*(\d+)")
# ggml's device list: "  Device 1: AMD Radeon 740M Graphics, gfx1103 (0x1103), VMM: no, ..."
_GGML_DEVICE = re.compile(r"Device (\d+): ([^,]+), (gfx[0-9a-f]+)", re.IGNORECASE)
# torch's "The NVIDIA driver on your system is too old (found version 11040)": CUDA 11.4.
_DRIVER_CUDA = re.compile(r"found version (\d{4,5})\b")
# The HIP runtime's soname major is the ROCm major it came with (libamdhip64.so.6: ROCm 6.x).
_HIP_SONAME = re.compile(r"libamdhip64\.so\.(\d+)")
_WSL = re.compile(r"microsoft-standard-WSL2|/dev/dxg|\bWSL2?\b")


@dataclass(frozen=True, kw_only=True)
class LogFacts:
    """What the log says, each fact with the 1-based line it came from."""

    values: dict[str, str] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)

    def has(self, name: str) -> bool:
        return bool(self.values.get(name))


def log_facts(
    lines: list[str],
    focus: int,
    tables: dict[str, dict[str, str]],
    platform: Platform | None = None,
) -> LogFacts:
    """Facts for the failure on line `focus` (0-based): targets named on that line win over
    ones named elsewhere; the device list says which GPU the failing device index is.
    `tables`: "hsa_override" (gfx -> override) and "cuda_wheel" (sm -> wheels) from the data."""
    values: dict[str, str] = {}
    where: dict[str, int] = {}

    def note(name: str, value: str, index: int) -> None:
        if name not in values:
            values[name], where[name] = value, index + 1

    order = [focus, *range(len(lines))]
    devices = {
        int(m.group(1)): (m.group(2).strip(), m.group(3).lower(), i)
        for i, line in enumerate(lines)
        for m in _GGML_DEVICE.finditer(line)
    }
    for i in order:
        if m := _CURRENT_DEVICE.search(lines[i]):
            note("device", m.group(1), i)
            if int(m.group(1)) in devices:
                name, gfx, at = devices[int(m.group(1))]
                note("device_name", name, at)
                note("gfx", gfx, at)
    for i in order:
        if m := _GFX.search(lines[i]):
            note("gfx", "gfx" + m.group(1).lower(), i)
        if m := _SM.search(lines[i]):
            note("sm", "sm_" + m.group(1), i)
        if _WSL.search(lines[i]):
            note("wsl", "yes", i)
        if m := _HIP_SONAME.search(lines[i]):
            note("rocm_major", m.group(1), i)
        if m := _DRIVER_CUDA.search(lines[i]):
            number = int(m.group(1))
            note("driver_cuda", f"{number // 1000}.{number % 1000 // 10}", i)
    if "gfx" not in values and platform is not None:
        amd = [d.arch for d in platform.devices if d.vendor == "amd" and d.arch]
        if amd:
            values["gfx"], where["gfx"] = amd[0], 0  # line 0: from this machine, not the log
    _derive(values, where, tables)
    return LogFacts(values=values, lines=where)


def _derive(
    values: dict[str, str], where: dict[str, int], tables: dict[str, dict[str, str]]
) -> None:
    sm = values.get("sm")
    if sm and sm in tables.get("cuda_wheel", {}):
        values["cuda_wheel"], where["cuda_wheel"] = tables["cuda_wheel"][sm], where["sm"]
    gfx = values.get("gfx")
    if not gfx:
        return
    facts = arch_facts(gfx)
    if facts is not None and facts.integrated:
        values["integrated"], where["integrated"] = "yes", where["gfx"]
    overrides = tables.get("hsa_override", {})
    if gfx in overrides:
        values["override"], where["override"] = overrides[gfx], where["gfx"]
