"""Checks on the kernel side: amdgpu loaded, /dev/kfd and render nodes openable, groups, and
container/WSL specifics (device pass-through, /dev/shm size)."""

from __future__ import annotations

import re
from pathlib import Path

from rocmkit.doctor.context import DoctorContext
from rocmkit.doctor.findings import Finding, Status
from rocmkit.doctor.registry import register
from rocmkit.platform.versions import read_nvidia_driver_version

GIB = 2**30
DOCKER_DEVICES = "--device=/dev/kfd --device=/dev/dri --group-add video --group-add render"


def detect_container(ctx: DoctorContext) -> str | None:
    """ "docker", "podman", "kubernetes", "lxc", "container" - or None on bare metal / a VM."""
    if ctx.env.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    if ctx.path("/.dockerenv").exists():
        return "docker"
    if ctx.path("/run/.containerenv").exists():
        return "podman"
    cgroup = _read(ctx, "/proc/1/cgroup")
    for marker in ("kubepods", "docker", "containerd", "lxc"):
        if marker in cgroup:
            return "kubernetes" if marker == "kubepods" else marker
    return ctx.env.get("container") or None


def detect_wsl(ctx: DoctorContext) -> bool:
    return "microsoft" in _read(ctx, "/proc/version").lower() or ctx.path("/dev/dxg").exists()


def _read(ctx: DoctorContext, path: str) -> str:
    try:
        return ctx.path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


@register(
    "kernel-driver", "amdgpu loaded; /dev/kfd and /dev/dri/renderD* present, openable", order=5
)
def check_kernel_driver(ctx: DoctorContext) -> Finding:
    loaded = _read(ctx, "/sys/module/amdgpu/initstate").strip() == "live"
    container = detect_container(ctx)
    if not ctx.has_hardware("amd") and not loaded:
        return _nvidia_driver(ctx)
    # In a container the host's module is not visible in /sys/module: judge by the device files.
    if not loaded and not container:
        return _driver_finding(
            "fail",
            f"{len(ctx.pci_gpus('amd')) or 'an'} AMD GPU(s) on the PCI bus, "
            "but the amdgpu module is not loaded",
            detail="Check `dmesg | grep -i amdgpu` for firmware or PCIe-atomics errors.",
            fix="sudo modprobe amdgpu  (install amdgpu-dkms from amdgpu-install if it is missing)",
        )
    pass_through = f"docker run {DOCKER_DEVICES} ..."
    kfd = ctx.path("/dev/kfd")
    dri = ctx.path("/dev/dri")
    render_nodes = sorted(dri.glob("renderD*")) if dri.is_dir() else []
    for present, name in ((kfd.exists(), "/dev/kfd"), (bool(render_nodes), "/dev/dri/renderD*")):
        if not present:
            where = (
                f" in this {container} container: devices not passed through" if container else ""
            )
            fix = pass_through if container else "sudo modprobe amdgpu; check dmesg"
            return _driver_finding("fail", f"no {name}{where}", fix=fix)
    return _access_finding(ctx, [kfd, *render_nodes], loaded=loaded, container=container)


def _access_finding(
    ctx: DoctorContext, paths: list[Path], *, loaded: bool, container: str | None
) -> Finding:
    """Can this process open the device files, and will it still after a re-login?"""
    problems = [(path, why) for path in paths if (why := ctx.can_open(path))]
    groups = ctx.user_groups()
    if problems:
        path, why = problems[0]
        fix = "sudo usermod -aG render,video $USER  (then log out and in)"
        if container:
            fix = f"docker run {DOCKER_DEVICES} ...  (the device files' groups must be added)"
        return _driver_finding(
            "fail",
            f"cannot open {_unrooted(ctx, path)}: {why}",
            detail=f"groups of this user: {', '.join(sorted(groups)) if groups else 'root'}",
            fix=fix,
        )
    nodes = f"/dev/kfd and {len(paths) - 1} render node(s) openable"
    missing_groups = sorted({"render", "video"} - groups) if groups is not None else []
    if missing_groups:
        return _driver_finding(
            "warn",
            f"amdgpu loaded, {nodes}, but the user is not in {'/'.join(missing_groups)}",
            detail="Access works now (ACLs or a permissive mode) but may not after a re-login.",
            fix="sudo usermod -aG render,video $USER",
        )
    return _driver_finding("ok", f"amdgpu {'loaded' if loaded else 'in use'}, {nodes}")


def _driver_finding(status: Status, summary: str, *, detail: str = "", fix: str = "") -> Finding:
    return Finding(id="kernel-driver", status=status, summary=summary, detail=detail, fix=fix)


def _unrooted(ctx: DoctorContext, path: Path) -> str:
    """The path as the user knows it (without a test's fake root)."""
    try:
        return "/" + str(path.relative_to(ctx.root))
    except ValueError:
        return str(path)


def _nvidia_driver(ctx: DoctorContext) -> Finding:
    if not ctx.has_hardware("nvidia"):
        return Finding(
            id="kernel-driver",
            status="skip",
            summary="no GPU on the PCI bus and no GPU driver loaded: nothing to check",
        )
    version = read_nvidia_driver_version(ctx.root) or _nvidia_smi_driver(ctx)
    torch_gpus = [d for d in ctx.gpus("nvidia") if d.visible_to_torch]
    if ctx.platform.gpu_available and torch_gpus:
        # torch opened the GPU through the driver: that is proof it is loaded, whatever the files say.
        where = f"NVIDIA driver {version}" if version else "NVIDIA driver (version not readable)"
        return Finding(
            id="kernel-driver",
            status="ok",
            summary=f"{where} loaded: torch uses {len(torch_gpus)} NVIDIA GPU(s)",
        )
    if not version:
        return Finding(
            id="kernel-driver",
            status="fail",
            summary="NVIDIA GPU present, but no NVIDIA driver loaded",
            detail="Neither /proc/driver/nvidia/version, /sys/module/nvidia/version nor "
            "`nvidia-smi` names a driver, and torch cannot use the GPU.",
            fix="install the NVIDIA driver (e.g. `sudo apt install nvidia-driver`), then reboot",
        )
    if not ctx.path("/dev/nvidiactl").exists():
        return Finding(
            id="kernel-driver",
            status="fail",
            summary=f"NVIDIA driver {version} loaded but /dev/nvidiactl is missing",
            fix="docker run --gpus all ...  (NVIDIA Container Toolkit)",
        )
    return Finding(id="kernel-driver", status="ok", summary=f"NVIDIA driver {version} loaded")


def _nvidia_smi_driver(ctx: DoctorContext) -> str | None:
    result = ctx.tool("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader")
    if not result.ran or result.returncode != 0:
        return None
    match = re.search(r"\d+\.\d+(?:\.\d+)*", result.stdout)
    return match.group(0) if match else None


SHM_FAIL_BYTES = 128 * 2**20  # Docker's default is 64 MiB: DataLoader workers die with SIGBUS
SHM_WARN_BYTES = 2 * GIB


@register("container", "container/WSL detection; /dev/shm size in a container", order=7)
def check_container(ctx: DoctorContext) -> Finding:
    container, wsl = detect_container(ctx), detect_wsl(ctx)
    shm = ctx.disk_total_bytes(ctx.path("/dev/shm"))
    shm_text = f"/dev/shm {shm / GIB:.1f} GiB" if shm is not None else "no /dev/shm"
    if wsl:
        if not ctx.path("/dev/dxg").exists():
            return Finding(
                id="container",
                status="warn",
                summary="WSL without /dev/dxg: no GPU is passed to WSL",
                fix="update the Windows GPU driver and WSL (`wsl --update`)",
            )
        return Finding(
            id="container",
            status="ok",
            summary=f"WSL2 with /dev/dxg; {shm_text}",
            detail="ROCm on WSL needs AMD's WSL-specific ROCm install (only some Radeon GPUs).",
        )
    if not container:
        return Finding(id="container", status="ok", summary=f"not in a container; {shm_text}")
    fix = "docker run --shm-size=16g ...  (or --ipc=host)"
    if shm is None or shm < SHM_FAIL_BYTES:
        return Finding(
            id="container",
            status="fail",
            summary=f"{container} container with {shm_text}",
            detail="DataLoader workers pass batches through /dev/shm and die with 'Bus error'.",
            fix=fix,
        )
    if shm < SHM_WARN_BYTES:
        return Finding(
            id="container",
            status="warn",
            summary=f"{container} container with only {shm_text}",
            detail="Multi-worker DataLoaders with large batches can hit 'Bus error'.",
            fix=fix,
        )
    return Finding(id="container", status="ok", summary=f"{container} container; {shm_text}")
