"""GPUs on the PCI bus, from sysfs: seen even when no driver is loaded (root path injectable)."""

from __future__ import annotations

from dataclasses import dataclass
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
