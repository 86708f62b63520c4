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

# Not after a letter/digit, but after "_" too: "TensileLibrary_lazy_gfx1030.dat".
_GFX = re.compile(r"(?<![A-Za-z0-9])gfx([0-9]{3,4}[a-f]?)\b", re.IGNORECASE)
# ollama names the GPU's own target after a list of supported ones: "... gpu_type=gfx1031".
_GPU_TYPE = re.compile(r"gpu_type=gfx([0-9]{3,4}[a-f]?)\b", re.IGNORECASE)
_SM = re.compile(r"\bsm_(\d{2,3})\b")
_CURRENT_DEVICE = re.compile(r"current device:\s*(\d+)")
# ggml's device list: "  Device 1: AMD Radeon 740M Graphics, gfx1103 (0x1103), VMM: no, ..."
_GGML_DEVICE = re.compile(r"Device (\d+): ([^,]+), (gfx[0-9a-f]+)", re.IGNORECASE)
# torch's "The NVIDIA driver on your system is too old (found version 11040)": CUDA 11.4.
_DRIVER_CUDA = re.compile(r"found version (\d{4,5})\b")
# The HIP runtime's soname major is the ROCm major it came with (libamdhip64.so.6: ROCm 6.x).
_HIP_SONAME = re.compile(r"libamdhip64\.so\.(\d+)")
# The ROCm release of libraries a process loaded (/opt/rocm-6.0.0/lib) and of a wheel (+rocm6.2).
_ROCM_PATH = re.compile(r"/opt/rocm-(\d+\.\d+)")
_ROCM_WHEEL = re.compile(r"\+rocm(\d+\.\d+)")
_CUDA_WHEEL = re.compile(r"\+cu(\d{2,3})\b")
_CONTAINER = re.compile(
    r"\bdocker\b|\(container\)|\bcontainer\b|\bkubelet\b|\bkublet\b|\bpodman\b|/\.dockerenv",
    re.IGNORECASE,
)
# torch's allocator message: "Tried to allocate 22.78 GiB. GPU 0 has a total capacity of 31.47 GiB
# of which 12.73 GiB is free. ... 9.35 GiB is reserved by PyTorch but unallocated."
_SIZE = r"([\d.]+) (GiB|MiB|KiB|bytes)"
_OOM = {
    "oom_tried": re.compile(r"Tried to allocate " + _SIZE),
    "oom_total": re.compile(r"total capacit?y of " + _SIZE),
    "oom_free": re.compile(r"of which " + _SIZE + " is free"),
    "oom_cache": re.compile(_SIZE + r" is reserved by PyTorch but unallocated"),
}
_UNIT = {"GiB": 1024.0, "MiB": 1.0, "KiB": 1 / 1024, "bytes": 1 / 1024 / 1024}
_WSL = re.compile(r"microsoft-standard-WSL2|/dev/dxg|\bWSL2?\b")
# glibc >= 2.41: "ImportError: librccl.so.1: cannot enable executable stack as shared object ..."
_EXECSTACK_LIB = re.compile(r"([\w.+-]+\.so)[\d.]*: cannot enable executable stack")


@dataclass(frozen=True, kw_only=True)
class LogFacts:
    """What the log says, each fact with the 1-based line it came from."""

    values: dict[str, str] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)

    def has(self, name: str) -> bool:
        return bool(self.values.get(name))


def _line_facts(line: str) -> dict[str, str]:
    """The facts one line states."""
    found: dict[str, str] = {}
    if m := _CURRENT_DEVICE.search(line):
        found["device"] = m.group(1)
    if m := _GPU_TYPE.search(line) or _GFX.search(line):
        found["gfx"] = "gfx" + m.group(1).lower()
    if m := _SM.search(line):
        found["sm"] = "sm_" + m.group(1)
    if _WSL.search(line):
        found["wsl"] = "yes"
    if m := _EXECSTACK_LIB.search(line):
        found["execstack_lib"] = m.group(1)
    if m := _ROCM_PATH.search(line):
        found["rocm_libs"] = m.group(1)
    if m := _ROCM_WHEEL.search(line):
        found["rocm_wheel"] = m.group(1)
    if m := _CUDA_WHEEL.search(line):
        found["cuda_wheel_tag"] = f"{m.group(1)[:-1]}.{m.group(1)[-1]}"
    for name, rx in _OOM.items():
        if m := rx.search(line):
            found[name] = str(float(m.group(1)) * _UNIT[m.group(2)])  # MiB
    if _CONTAINER.search(line):
        found["container"] = "yes"
    if m := _HIP_SONAME.search(line):
        found["rocm_major"] = m.group(1)
    if m := _DRIVER_CUDA.search(line):
        number = int(m.group(1))
        found["driver_cuda"] = f"{number // 1000}.{number % 1000 // 10}"
    return found


@dataclass(frozen=True)
class LogScan:
    """One pass over a log: each fact's first statement, and ggml's device list."""

    first: dict[str, tuple[str, int]]  # fact -> (value, 0-based line)
    devices: dict[int, tuple[str, str, int]]  # device index -> (name, gfx, 0-based line)


def scan_log(lines: list[str]) -> LogScan:
    """Read every line once; `log_facts` then answers per failing line without rescanning."""
    first: dict[str, tuple[str, int]] = {}
    devices: dict[int, tuple[str, str, int]] = {}
    for i, line in enumerate(lines):
        for name, value in _line_facts(line).items():
            first.setdefault(name, (value, i))
        for m in _GGML_DEVICE.finditer(line):
            devices.setdefault(int(m.group(1)), (m.group(2).strip(), m.group(3).lower(), i))
    return LogScan(first=first, devices=devices)


def log_facts(
    lines: list[str],
    focus: int,
    tables: dict[str, dict[str, str]],
    platform: Platform | None = None,
    scan: LogScan | None = None,
) -> LogFacts:
    """Facts for the failure on line `focus` (0-based): the failing device's entry in the
    device list first, then what the failing line says, then the first statement elsewhere.
    `tables`: "hsa_override" (gfx -> override) and "cuda_wheel" (sm -> wheels) from the data."""
    scan = scan or scan_log(lines)
    values: dict[str, str] = {}
    where: dict[str, int] = {}

    def note(name: str, value: str, index: int) -> None:
        if name not in values:
            values[name], where[name] = value, index + 1

    here = _line_facts(lines[focus])
    device = (here["device"], focus) if "device" in here else scan.first.get("device")
    if device is not None:
        note("device", device[0], device[1])
        if int(device[0]) in scan.devices:
            name, gfx, at = scan.devices[int(device[0])]
            note("device_name", name, at)
            note("gfx", gfx, at)
    for index, (_, gfx, at) in sorted(scan.devices.items()):
        facts = arch_facts(gfx)
        if facts is not None and not facts.integrated:
            note("discrete_device", str(index), at)  # the device to keep when hiding an iGPU
            break
    for name, value in here.items():
        note(name, value, focus)
    for name, (value, at) in scan.first.items():
        note(name, value, at)
    if "gfx" not in values and platform is not None:
        amd = [d.arch for d in platform.devices if d.vendor == "amd" and d.arch]
        if amd:
            values["gfx"], where["gfx"] = amd[0], 0  # line 0: from this machine, not the log
    _derive(values, where, tables)
    return LogFacts(values=values, lines=where)


def _derive(
    values: dict[str, str], where: dict[str, int], tables: dict[str, dict[str, str]]
) -> None:
    _derive_oom(values, where)
    wheel, libs = values.get("rocm_wheel"), values.get("rocm_libs")
    if wheel and libs and wheel != libs:  # a +rocmX wheel loading /opt/rocm-Y libraries
        values["mixed_rocm"], where["mixed_rocm"] = f"{wheel} vs {libs}", where["rocm_libs"]
    sm = values.get("sm")
    if sm and sm in tables.get("cuda_wheel", {}):
        values["cuda_wheel"], where["cuda_wheel"] = tables["cuda_wheel"][sm], where["sm"]
    gfx = values.get("gfx")
    if not gfx:
        return
    if gfx in tables.get("tensile_targets", {}):  # rocBLAS ships Tensile kernels for it
        values["tensile_target"], where["tensile_target"] = "yes", where["gfx"]
    facts = arch_facts(gfx)
    if facts is not None and facts.integrated:
        values["integrated"], where["integrated"] = "yes", where["gfx"]
    overrides = tables.get("hsa_override", {})
    if gfx in overrides:
        values["override"], where["override"] = overrides[gfx], where["gfx"]


def _derive_oom(values: dict[str, str], where: dict[str, int]) -> None:
    """What the allocator's numbers decide: one allocation larger than the whole GPU, larger
    than free memory plus PyTorch's own unallocated cache (so defragmenting cannot help), or
    smaller than the free memory (not exhaustion at all)."""
    if "oom_tried" not in values:
        return
    tried = float(values["oom_tried"])
    at = where["oom_tried"]
    total = float(values.get("oom_total", "0") or 0)
    free = values.get("oom_free")
    cache = values.get("oom_cache")
    if total and tried > total:
        values["oom_exceeds_total"], where["oom_exceeds_total"] = "yes", at
    elif free is not None and cache is not None and tried > float(free) + float(cache):
        values["oom_no_fragmentation"], where["oom_no_fragmentation"] = "yes", at
    elif free is not None and tried * 4 < float(free):
        values["oom_fits_free"], where["oom_fits_free"] = "yes", at
    elif free is not None and cache is not None and tried > float(free) and float(cache) >= tried:
        # PyTorch holds more unallocated memory than the request, in pieces too small for it.
        values["oom_fragmented"], where["oom_fragmented"] = "yes", at
