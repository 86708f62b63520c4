"""GPUs on the PCI bus, from sysfs: seen even when no driver is loaded (root path injectable)."""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

PCI_VENDORS = {0x1002: "amd", 0x10DE: "nvidia"}
_DISPLAY_CLASS = 0x03  # PCI base class "display controller" (VGA 0x0300, 3D 0x0302...)
_ACCELERATOR_CLASS = 0x12  # "processing accelerator" (some Instinct boards)


@dataclass(frozen=True, kw_only=True)
class PciGpu:
    bus_id: str  # "0000:c1:00.0"
    vendor: str  # "amd" | "nvidia"
    device_id: int
    driver: str | None  # bound kernel driver ("amdgpu", "nvidia", "vfio-pci"), None if unbound


def read_pci_gpus(root: str | Path = "/") -> list[PciGpu]:
    """AMD and NVIDIA display/accelerator functions under `root`/sys/bus/pci/devices."""
    try:
        entries = sorted((Path(root) / "sys/bus/pci/devices").iterdir())
    except OSError:
        return []
    gpus = []
    for entry in entries:
        vendor_id = _hex(entry / "vendor")
        pci_class = _hex(entry / "class")
        if vendor_id not in PCI_VENDORS or pci_class is None:
            continue
        if pci_class >> 16 not in (_DISPLAY_CLASS, _ACCELERATOR_CLASS):
            continue
        driver_link = entry / "driver"
        driver = driver_link.resolve().name if driver_link.exists() else None
        gpus.append(
            PciGpu(
                bus_id=entry.name.lower(),
                vendor=PCI_VENDORS[vendor_id],
                device_id=_hex(entry / "device") or 0,
                driver=driver,
            )
        )
    return gpus


def _hex(path: Path) -> int | None:
    try:
        return int(path.read_text(encoding="ascii").strip(), 16)
    except (OSError, ValueError):
        return None


@dataclass(frozen=True, kw_only=True)
class KnownDeviceId:
    device_id: str  # "0x74a1"
    gfx_target: str
    chip: str
    source: str


@functools.cache
def known_amd_device_ids() -> dict[str, KnownDeviceId]:
    """pci_device_ids.csv beside this file: AMD PCI device id -> gfx target, each with its source."""
    text = resources.files("rocmkit.platform").joinpath("pci_device_ids.csv").read_text("utf-8")
    rows = csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))
    return {row["device_id"]: KnownDeviceId(**row) for row in rows}


def gfx_from_pci_device_id(device_id: str | int | None) -> str | None:
    """ "0x74a1" / 29857 -> "gfx942" from the table of known AMD ids; None when not listed."""
    if device_id is None:
        return None
    try:
        number = device_id if isinstance(device_id, int) else int(device_id, 16)
    except ValueError:
        return None
    row = known_amd_device_ids().get(f"0x{number:04x}")
    return row.gfx_target if row else None
