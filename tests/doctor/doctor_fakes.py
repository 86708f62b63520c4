"""Fakes for doctor tests: platforms, sysfs/dev trees, tool runners, torch facts, probe reports.

A uniquely named module (not conftest) so `from doctor_fakes import ...` never picks up another
test directory's conftest."""

from __future__ import annotations

from pathlib import Path

from rocmkit.doctor.probe import DeviceProbe, Outcome, ProbeReport
from rocmkit.platform import CpuInfo, DeviceInfo, Platform
from rocmkit.platform.smi import CommandResult

MI300X = DeviceInfo(
    index=0, name="AMD Instinct MI300X", vendor="amd", arch="gfx942", is_integrated=False
)
RX6700 = DeviceInfo(
    index=0, name="AMD Radeon RX 6700 XT", vendor="amd", arch="gfx1031", is_integrated=False
)
IGPU = DeviceInfo(index=1, name="AMD Radeon 780M", vendor="amd", arch="gfx1103", is_integrated=True)
H100 = DeviceInfo(
    index=0, name="NVIDIA H100 80GB HBM3", vendor="nvidia", arch="sm_90", is_integrated=False
)
CPU = CpuInfo(
    model="AMD EPYC", num_physical_cores=2, num_logical_cores=2, flags=("avx2", "avx512_bf16")
)

ROCM_ARCHES = ("gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101")
ALL_OK = {
    "smoke.matmul": "ok",
    "smoke.elementwise": "ok",
    "dtype.fp16": "ok",
    "dtype.bf16": "ok",
    "sdpa.flash": "ok",
    "sdpa.efficient": "ok",
    "sdpa.cudnn": "unsupported",
    "sdpa.math": "ok",
}


def platform(backend="rocm", devices=(), gpu_available=None, rocm_version="6.4.1"):
    versions = {
        "rocm": {"hip_version": "6.4.43482", "torch_version": "2.14.1+rocm6.4"},
        "cuda": {"cuda_version": "13.0", "torch_version": "2.14.1+cu130"},
        "cpu": {"torch_version": "2.14.1+cpu"},
    }[backend]
    usable = any(d.visible_to_torch for d in devices) if gpu_available is None else gpu_available
    return Platform(
        backend=backend,
        devices=tuple(devices),
        cpu=CPU,
        gpu_available=usable,
        rocm_version=rocm_version,
        **versions,
    )


def probe_report(*devices, **outcomes):
    """A ProbeReport: each device gets ALL_OK overridden by outcomes {"dtype_bf16": "error"}."""
    states = {**ALL_OK, **{k.replace("_", ".", 1): v for k, v in outcomes.items()}}
    probes = tuple(
        DeviceProbe(
            device=dev,
            name=dev,
            outcomes={k: Outcome(status=v, detail=v) for k, v in states.items()},
        )
        for dev in devices or ("cuda:0",)
    )
    return ProbeReport(devices=probes, gpu=probes[0].device != "cpu")


class FakeRunner:
    def __init__(self, outputs=None):
        self.outputs = outputs or {}
        self.calls = []

    def __call__(self, argv, timeout_s):
        self.calls.append(list(argv))
        value = self.outputs.get(argv[0])
        if value is None:
            return CommandResult(argv=tuple(argv), error="not found")
        if isinstance(value, CommandResult):
            return value
        return CommandResult(argv=tuple(argv), returncode=0, stdout=value)


def amd_tree(root: Path, *, loaded=True, kfd=True, render=True, pci=True) -> Path:
    """A fake filesystem of a machine with one AMD GPU."""
    if pci:
        dev = root / "sys/bus/pci/devices/0000:c1:00.0"
        dev.mkdir(parents=True)
        (dev / "vendor").write_text("0x1002\n")
        (dev / "class").write_text("0x038000\n")
        (dev / "device").write_text("0x74a1\n")
    if loaded:
        (root / "sys/module/amdgpu").mkdir(parents=True)
        (root / "sys/module/amdgpu/initstate").write_text("live\n")
    (root / "dev").mkdir(exist_ok=True)
    if kfd:
        (root / "dev/kfd").write_text("")
    if render:
        (root / "dev/dri").mkdir()
        (root / "dev/dri/renderD128").write_text("")
    return root
