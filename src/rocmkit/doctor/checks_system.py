"""Checks on the kernel side: amdgpu loaded, /dev/kfd and render nodes openable, groups, and
container/WSL specifics (device pass-through, /dev/shm size)."""

from __future__ import annotations

import re

from rocmkit.doctor.context import DoctorContext
from rocmkit.doctor.findings import Finding
from rocmkit.doctor.registry import register

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
    amd_pci = ctx.pci_gpus("amd")
    loaded = _read(ctx, "/sys/module/amdgpu/initstate").strip() == "live"
    container = detect_container(ctx)
    if not ctx.has_hardware("amd") and not loaded:
        return _nvidia_driver(ctx)
    if not loaded and not container:
        return Finding(
            id="kernel-driver",
            status="fail",
            summary=f"{len(amd_pci) or 'an'} AMD GPU(s) on the PCI bus, but the amdgpu module is not loaded",
            detail="Check `dmesg | grep -i amdgpu` for firmware or PCIe-atomics errors.",
            fix="sudo modprobe amdgpu  (install amdgpu-dkms from amdgpu-install if it is missing)",
        )
    kfd = ctx.path("/dev/kfd")
    if not kfd.exists():
        fix = (
            f"docker run {DOCKER_DEVICES} ..." if container else "sudo modprobe amdgpu; check dmesg"
        )
        where = (
            f"inside a {container} container: the devices were not passed through"
            if container
            else ""
        )
        return Finding(
            id="kernel-driver",
            status="fail",
            summary=f"/dev/kfd is missing {where}".strip(),
            fix=fix,
        )
    render_nodes = (
        sorted(ctx.path("/dev/dri").glob("renderD*")) if ctx.path("/dev/dri").is_dir() else []
    )
    if not render_nodes:
        return Finding(
            id="kernel-driver",
            status="fail",
            summary="no /dev/dri/renderD* node",
            fix=f"docker run {DOCKER_DEVICES} ..."
            if container
            else "sudo modprobe amdgpu; check dmesg",
        )
    problems = {str(p): why for p in (kfd, *render_nodes) if (why := ctx.can_open(p))}
    groups = ctx.user_groups()
    missing_groups = sorted({"render", "video"} - groups) if groups is not None else []
    if problems:
        path, why = next(iter(problems.items()))
        fix = "sudo usermod -aG render,video $USER  (then log out and in)"
        if container:
            fix = f"docker run {DOCKER_DEVICES} ...  (the device files' groups must be added)"
        return Finding(
            id="kernel-driver",
            status="fail",
            summary=f"cannot open {_unrooted(ctx, path)}: {why}",
            detail=f"groups of this user: {', '.join(sorted(groups)) if groups else 'root'}",
            fix=fix,
        )
    nodes = f"/dev/kfd and {len(render_nodes)} render node(s) openable"
    if missing_groups:
        return Finding(
            id="kernel-driver",
            status="warn",
            summary=f"amdgpu loaded, {nodes}, but the user is not in {'/'.join(missing_groups)}",
            detail="Access works now (ACLs or a permissive mode) but may not survive a reboot or another login.",
            fix="sudo usermod -aG render,video $USER",
        )
    return Finding(
        id="kernel-driver",
        status="ok",
        summary=f"amdgpu {'loaded' if loaded else 'in use'}, {nodes}",
    )


def _unrooted(ctx: DoctorContext, path: str) -> str:
    return (
        "/" + str(path)[len(str(ctx.root)) :].lstrip("/")
        if str(path).startswith(str(ctx.root))
        else path
    )


def _nvidia_driver(ctx: DoctorContext) -> Finding:
    if not ctx.has_hardware("nvidia"):
        return Finding(
            id="kernel-driver",
            status="skip",
            summary="no GPU on the PCI bus and no GPU driver loaded: nothing to check",
        )
    version = re.search(r"Kernel Module\s+([\d.]+)", _read(ctx, "/proc/driver/nvidia/version"))
    if not version:
        return Finding(
            id="kernel-driver",
            status="fail",
            summary="NVIDIA GPU present, but no NVIDIA driver loaded",
            fix="install the NVIDIA driver (e.g. `sudo apt install nvidia-driver`), then reboot",
        )
    if not ctx.path("/dev/nvidiactl").exists():
        return Finding(
            id="kernel-driver",
            status="fail",
            summary="NVIDIA driver loaded but /dev/nvidiactl is missing",
            fix="docker run --gpus all ...  (NVIDIA Container Toolkit)",
        )
    return Finding(
        id="kernel-driver", status="ok", summary=f"NVIDIA driver {version.group(1)} loaded"
    )


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
