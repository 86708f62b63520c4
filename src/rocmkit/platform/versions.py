"""Versions of the ROCm userspace and GPU drivers, read from files (root path injectable)."""

from __future__ import annotations

import re
from pathlib import Path

_VERSION_FILES = ("opt/rocm/.info/version", "opt/rocm/.info/version-dev")
# Distribution builds of ROCm (Debian/Ubuntu "rocminfo 5.2.3-2") have no /opt/rocm; their
# package versions are the userspace version.
_DPKG_STATUS = "var/lib/dpkg/status"
_ROCM_PACKAGES = ("rocm-core", "hip-runtime-amd", "libamdhip64-5", "libamdhip64-6", "rocminfo")


def read_rocm_version(root: str | Path = "/") -> str | None:
    """The ROCm userspace version (e.g. "6.2.4"), or None when ROCm is not installed."""
    return rocm_version_with_source(root)[0]


def rocm_version_with_source(root: str | Path = "/") -> tuple[str | None, str | None]:
    """(version, where it was read) for the ROCm userspace; (None, None) when absent."""
    root = Path(root)
    candidates = [root / rel for rel in _VERSION_FILES]
    candidates += sorted(root.glob("opt/rocm-*/.info/version"), reverse=True)
    for path in candidates:
        version = _version_in(_read(path))
        if version:
            return version, str(Path("/") / path.relative_to(root))
    packages = parse_dpkg_versions(_read(root / _DPKG_STATUS), _ROCM_PACKAGES)
    for package in _ROCM_PACKAGES:
        version = _version_in(packages.get(package, ""))
        if version:
            return version, f"dpkg package {package}"
    return None, None


def parse_dpkg_versions(status_text: str, packages: tuple[str, ...]) -> dict[str, str]:
    """Versions of the installed `packages` in the text of /var/lib/dpkg/status."""
    found: dict[str, str] = {}
    for stanza in status_text.split("\n\n"):
        fields = dict(re.findall(r"^([A-Za-z-]+): (.*)$", stanza, flags=re.M))
        name = fields.get("Package")
        if name in packages and "installed" in fields.get("Status", "").split():
            found[name] = re.sub(r"^\d+:", "", fields.get("Version", ""))  # drop the epoch
    return found


def read_driver_version(root: str | Path = "/") -> str | None:
    """The GPU kernel driver: the amdgpu DKMS version, "amdgpu (kernel X)" for the in-tree
    driver, or the NVIDIA kernel module version; None when no GPU driver is loaded."""
    root = Path(root)
    dkms = _read(root / "sys/module/amdgpu/version").strip()
    if dkms:
        return f"amdgpu {dkms}"
    if (root / "sys/module/amdgpu/initstate").exists():
        kernel = _read(root / "proc/sys/kernel/osrelease").strip()
        return f"amdgpu (in-tree, kernel {kernel})" if kernel else "amdgpu (in-tree)"
    nvidia = read_nvidia_driver_version(root)
    return f"nvidia {nvidia}" if nvidia else None


# The proprietary module writes "NVIDIA UNIX x86_64 Kernel Module  550.54.15 ...", the open
# modules (the default since driver 560) "NVIDIA UNIX Open Kernel Module for x86_64  580.95.05 ...".
_NVRM = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)*)")


def parse_nvidia_driver_version(text: str) -> str | None:
    """The driver version in the text of /proc/driver/nvidia/version (either module flavour)."""
    match = _NVRM.search(text)
    return match.group(1) if match else None


def read_nvidia_driver_version(root: str | Path = "/") -> str | None:
    """The loaded NVIDIA kernel module's version, or None when neither file says it.

    /proc/driver/nvidia is absent in some VMs and containers; /sys/module/nvidia/version is the
    module's own record of the same number.
    """
    root = Path(root)
    version = parse_nvidia_driver_version(_read(root / "proc/driver/nvidia/version"))
    if version:
        return version
    return _version_in(_read(root / "sys/module/nvidia/version"))


def _version_in(text: str) -> str | None:
    match = re.search(r"\d+\.\d+(\.\d+)?", text)
    return match.group(0) if match else None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
