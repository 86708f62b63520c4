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
# What machine the log came from, read off what only that machine prints. An NVIDIA GPU: nvidia-smi's
# header, the kernel module's NVRM lines, a GPU model name, a compute-capability statement (torch
# and vLLM print the device's own). An AMD GPU: a gfx target, a Radeon/Instinct name, the amdgpu
# module. macOS: its home and framework paths, Apple-silicon names, Mach-O libraries. Windows: a
# drive-letter path. These decide the preconditions of fixes (see `precondition`).
_GPU_NVIDIA = re.compile(
    r"NVIDIA-SMI \d|Driver Version\s*:\s*\d|\bNVRM\b|\bGeForce\b|\bQuadro\b|\bTesla [A-Z]?\d|\bTITAN\b"
    r"|\b[RG]TX ?\d{3,4}\b|\bRTX ?A\d{4}\b|\b(A|H|V|L|B)\d{2,3}(-?SXM\w*|-?PCIE\w*|G)?\b(?=.{0,40}"
    r"(GPU|GB|NVIDIA|CUDA))|\bT4\b(?=.{0,40}(GPU|NVIDIA|CUDA))|NVIDIA (GeForce|RTX|Tesla|A\d|H\d|L\d)"
    r"|compute capability (of )?\d"
)
_GPU_AMD = re.compile(
    r"(?<![A-Za-z0-9])gfx[0-9]{3,4}[a-f]?\b|\bRadeon\b|AMD Instinct|\bamdgpu\b|\bRX ?\d{3,4}( ?XT)?\b",
    re.IGNORECASE,
)
_OS_MACOS = re.compile(
    r"(?<![A-Za-z]:)(?<!\\)/Users/[^/\s]+/|/Library/(Frameworks|Application Support|Python)/"
    r"|\bDarwin\b|\bmacOS\b|Mac ?OS ?X|\bApple M\d|Apple \(0x106b\)|Metal Support|\.dylib\b"
)
# bitsandbytes' setup found a CUDA runtime or a GPU (its own words), so a CUDA setup to fix.
_CUDA_RUNTIME_FOUND = re.compile(
    r"CUDA SETUP: (Detected CUDA version|CUDA runtime path found)|compute capability among GPUs"
    r"|despite GPU being available"
)
# A HIP runtime error from running a kernel: HIP opened an AMD device to get there (a ROCm build on
# a machine without one stops at "No HIP GPUs are available" / hipErrorNoBinaryForGpu instead).
_HIP_DEVICE_ERROR = re.compile(
    r"\bHIP error: (invalid device function|an illegal memory access|unspecified launch failure)"
    r"|hipError(InvalidDeviceFunction|IllegalAddress|LaunchFailure)\b"
)
_OS_WINDOWS = re.compile(r"\b[A-Za-z]:\\[^\s\\]|\.dll\b|\bWindows (1[01]|Server)\b")
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
    if _GPU_NVIDIA.search(line):
        found["gpu_nvidia"] = "yes"
    if _GPU_AMD.search(line) or _HIP_DEVICE_ERROR.search(line):
        found["gpu_amd"] = "yes"
    if _CUDA_RUNTIME_FOUND.search(line):
        found["cuda_runtime_found"] = "yes"
    if _OS_MACOS.search(line):
        found["os_macos"] = "yes"
    if _OS_WINDOWS.search(line):
        found["os_windows"] = "yes"
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
    if platform is not None:  # the log came from this machine: its GPUs' vendors are facts
        for vendor in {d.vendor for d in platform.devices} & {"amd", "nvidia"}:
            if f"gpu_{vendor}" not in values:
                values[f"gpu_{vendor}"], where[f"gpu_{vendor}"] = "yes", 0
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


def precondition(definition: dict[str, list[str]], facts: LogFacts) -> tuple[str, str]:
    """Whether the log establishes a precondition of a fix ("yes"), rules it out ("no") or does
    not say ("unknown"), with the fact that decided. `definition` (signatures.toml's
    `[precondition.NAME]`): `established` facts, any of which makes it hold; `ruled_out` facts,
    any of which (with no establishing fact) makes it fail."""
    for name in definition.get("established", ()):
        if facts.has(name):
            return "yes", name
    for name in definition.get("ruled_out", ()):
        if facts.has(name):
            return "no", name
    return "unknown", ""
