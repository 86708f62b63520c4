"""Torch build flavour (ROCm / CUDA / CPU), versions, and the `Platform` record."""

from __future__ import annotations

import platform as _pyplatform
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from rocmkit.platform.smi import Runner

Backend = Literal["rocm", "cuda", "cpu"]


@dataclass(frozen=True, kw_only=True)
class DeviceInfo:
    """One GPU (or the CPU as a pseudo-device), merged from torch, KFD sysfs and smi tools."""

    index: int
    name: str
    vendor: Literal["amd", "nvidia", "cpu", "unknown"]
    arch: str | None = None  # "gfx942", "sm_90"; None when unknown
    total_memory_bytes: int | None = None
    num_compute_units: int | None = None
    warp_size: int | None = None
    pci_bus_id: str | None = None
    uuid: str | None = None
    is_integrated: bool | None = None
    sources: tuple[str, ...] = ()  # where the facts came from: "torch", "kfd", "rocm-smi"...
    visible_to_torch: bool = True  # False: the hardware is there but torch cannot use it
    kfd_node: int | None = None  # KFD topology node id (AMD)
    render_minor: int | None = None  # N of /dev/dri/renderDN (AMD)


@dataclass(frozen=True, kw_only=True)
class CpuInfo:
    """An honest description of the host CPU, so CPU results are labelled as such."""

    model: str
    num_physical_cores: int | None
    num_logical_cores: int | None
    flags: tuple[str, ...] = ()  # selected ISA flags: avx2, avx512f, avx512_bf16, amx_bf16 ...
    arch: str = field(default_factory=_pyplatform.machine)
    # What identifies the microarchitecture (x86 "vendor_id", "cpu family", "model") and the clocks:
    # nominal_mhz is /proc/cpuinfo's "cpu MHz" (on a VM the base/TSC clock, not the boost);
    # max_mhz is cpufreq's cpuinfo_max_freq where the kernel exposes it.
    vendor: str = ""
    family: int | None = None
    model_number: int | None = None
    nominal_mhz: float | None = None
    max_mhz: float | None = None


@dataclass(frozen=True, kw_only=True)
class Platform:
    """Everything rocmkit needs to know about where it runs."""

    backend: Backend  # which torch build is installed
    torch_version: str | None
    hip_version: str | None = None
    cuda_version: str | None = None
    rocm_version: str | None = None  # userspace (/opt/rocm/.info/version)
    driver_version: str | None = None
    python_version: str = field(default_factory=_pyplatform.python_version)
    devices: tuple[DeviceInfo, ...] = ()
    cpu: CpuInfo | None = None
    gpu_available: bool = False  # torch can actually use a GPU (not just a CUDA build)

    @property
    def torch_device(self) -> str:
        """The torch device type to run on: "cuda" (also on ROCm builds) or "cpu"."""
        return "cuda" if self.gpu_available else "cpu"

    def record(self) -> dict[str, Any]:
        """The environment record stored in every result.json."""
        data = asdict(self)
        data["torch_device"] = self.torch_device
        return data


def torch_build() -> tuple[Backend, str | None, str | None, str | None]:
    """(backend, torch version, HIP version, CUDA version) of the installed torch, if any."""
    try:
        import torch
    except Exception:  # ImportError, or OSError from a wheel whose GPU libraries are missing
        return "cpu", None, None, None
    hip = getattr(torch.version, "hip", None)
    cuda = getattr(torch.version, "cuda", None)
    if hip:
        return "rocm", torch.__version__, str(hip), None
    if cuda:
        return "cuda", torch.__version__, None, str(cuda)
    return "cpu", torch.__version__, None, None


def gpu_available() -> bool:
    """True only when torch can really run on a GPU.

    A CUDA wheel reports `cuda` from torch.accelerator.current_accelerator() even with no GPU,
    so ask with check_available / is_available instead.
    """
    try:
        import torch
    except Exception:  # a broken install is "no GPU" here; the doctor says why
        return False
    try:
        return bool(torch.cuda.is_available()) and torch.cuda.device_count() > 0
    except Exception:  # a broken driver raises here instead of returning False
        return False


def torch_devices() -> list[DeviceInfo]:
    """DeviceInfo for every GPU torch can see (empty when none is usable)."""
    if not gpu_available():
        return []
    import torch

    backend = torch_build()[0]
    devices = []
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        if backend == "rocm":
            arch: str | None = str(getattr(props, "gcnArchName", "")).split(":")[0] or None
            vendor: Literal["amd", "nvidia"] = "amd"
        else:
            arch = f"sm_{props.major}{props.minor}"
            vendor = "nvidia"
        devices.append(
            DeviceInfo(
                index=index,
                name=str(props.name),
                vendor=vendor,
                arch=arch,
                total_memory_bytes=int(props.total_memory),
                num_compute_units=int(props.multi_processor_count),
                warp_size=getattr(props, "warp_size", None),
                is_integrated=bool(getattr(props, "is_integrated", False)),
                uuid=str(getattr(props, "uuid", "")) or None,
                pci_bus_id=_pci_bus_id(props),
                sources=("torch",),
            )
        )
    return devices


def _pci_bus_id(props: Any) -> str | None:
    bus = getattr(props, "pci_bus_id", None)
    if bus is None:
        return None
    domain = int(getattr(props, "pci_domain_id", 0) or 0)
    device = int(getattr(props, "pci_device_id", 0) or 0)
    return f"{domain:04x}:{int(bus):02x}:{device:02x}.0"


@dataclass(frozen=True, kw_only=True)
class TorchSide:
    """What the installed torch says about the build and the GPUs it can use."""

    backend: Backend = "cpu"
    torch_version: str | None = None
    hip_version: str | None = None
    cuda_version: str | None = None
    devices: tuple[DeviceInfo, ...] = ()
    gpu_available: bool = False


def read_torch_side() -> TorchSide:
    """Ask the installed torch (imports it; cheap after the first call)."""
    backend, version, hip, cuda = torch_build()
    return TorchSide(
        backend=backend,
        torch_version=version,
        hip_version=hip,
        cuda_version=cuda,
        devices=tuple(torch_devices()),
        gpu_available=gpu_available(),
    )


def detect(
    root: str | Path = "/", runner: Runner | None = None, *, torch_side: TorchSide | None = None
) -> Platform:
    """Detect the platform now (call once per command, then pass the result down).

    `root` and `runner` let tests point sysfs reads and tool calls at fakes; `torch_side`
    replaces what torch says. With a fake root and no `torch_side`, torch is left out (a fake
    tree describes another machine, whose GPUs are not this process's torch devices).
    """
    from rocmkit.platform.cpu import detect_cpu
    from rocmkit.platform.devices import discover_devices
    from rocmkit.platform.smi import run_command
    from rocmkit.platform.versions import read_driver_version, read_rocm_version

    if torch_side is None:
        torch_side = read_torch_side() if Path(root) == Path("/") else TorchSide()
    devices = discover_devices(
        root=root, runner=runner or run_command, torch_devices=list(torch_side.devices)
    )
    amd_here = torch_side.backend == "rocm" or any(d.vendor == "amd" for d in devices)
    return Platform(
        backend=torch_side.backend,
        torch_version=torch_side.torch_version,
        hip_version=torch_side.hip_version,
        cuda_version=torch_side.cuda_version,
        # A libamdhip64 package on an NVIDIA box is not a ROCm stack: only report ROCm where it
        # can be used (`rocmkit doctor --check rocm-userspace` still names the package).
        rocm_version=read_rocm_version(root) if amd_here else None,
        driver_version=read_driver_version(root),
        devices=tuple(devices),
        cpu=detect_cpu(root),
        gpu_available=torch_side.gpu_available,
    )
