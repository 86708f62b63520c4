"""Everything a doctor check may look at, injectable: platform, env, filesystem root, tool runner,
torch facts and the device probe. Tests build a DoctorContext from fakes; `DoctorContext.real()`
builds the live one."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocmkit.doctor.probe import ProbeReport, run_probe
from rocmkit.platform.backend import DeviceInfo, Platform
from rocmkit.platform.pci import PciGpu, read_pci_gpus
from rocmkit.platform.smi import CommandResult, Runner, run_command


@dataclass(frozen=True, kw_only=True)
class TorchFacts:
    """What the installed torch says about itself (no GPU work needed)."""

    importable: bool
    import_error: str | None = None
    arch_list: tuple[str, ...] = ()  # torch.cuda.get_arch_list(): "gfx942", "sm_90"...
    dtypes: tuple[str, ...] = ()  # fp8 dtypes this torch has: "float8_e4m3fn", ...
    bf16_supported: bool | None = None  # torch.cuda.is_bf16_supported() (lies on RDNA2)


def collect_torch_facts() -> TorchFacts:
    """Ask the installed torch; a broken install comes back as importable=False."""
    try:
        import torch
    except Exception as exc:  # ImportError, or an OSError from a missing shared library
        return TorchFacts(importable=False, import_error=f"{type(exc).__name__}: {exc}")
    try:
        arch_list = tuple(torch.cuda.get_arch_list())
    except Exception:
        arch_list = ()
    bf16: bool | None = None
    if torch.cuda.is_available():
        try:
            bf16 = bool(torch.cuda.is_bf16_supported())
        except Exception:
            bf16 = None
    fp8 = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")
    return TorchFacts(
        importable=True,
        arch_list=arch_list,
        dtypes=tuple(name for name in fp8 if hasattr(torch, name)),
        bf16_supported=bf16,
    )


def _user_groups() -> frozenset[str] | None:
    """Names of this process's groups; None for root (who needs none)."""
    if os.geteuid() == 0:
        return None
    import grp

    names = set()
    for gid in os.getgroups():
        try:
            names.add(grp.getgrgid(gid).gr_name)
        except KeyError:
            continue
    return frozenset(names)


def _disk_total_bytes(path: Path) -> int | None:
    try:
        return shutil.disk_usage(path).total
    except OSError:
        return None


def _can_open(path: Path) -> str | None:
    """None when this process can open `path` read-write, else the reason."""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    return None


@dataclass(kw_only=True)
class DoctorContext:
    platform: Platform
    env: Mapping[str, str]
    root: Path = Path("/")
    runner: Runner = run_command
    torch_facts_provider: Callable[[], TorchFacts] = collect_torch_facts
    probe_runner: Callable[[Mapping[str, str], float], ProbeReport] = run_probe
    user_groups: Callable[[], frozenset[str] | None] = _user_groups
    disk_total_bytes: Callable[[Path], int | None] = _disk_total_bytes
    can_open: Callable[[Path], str | None] = _can_open
    probe_timeout_s: float = 60.0
    tool_timeout_s: float = 10.0
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def real(cls, platform: Platform, **overrides: Any) -> DoctorContext:
        """The live context: this machine's env, filesystem, tools and torch."""
        return cls(platform=platform, env=dict(os.environ), **overrides)

    def path(self, absolute: str) -> Path:
        """`absolute` ("/dev/kfd") under the injected root."""
        return self.root / absolute.lstrip("/")

    def torch_facts(self) -> TorchFacts:
        if "torch" not in self._cache:
            self._cache["torch"] = self.torch_facts_provider()
        facts: TorchFacts = self._cache["torch"]
        return facts

    def probe(self) -> ProbeReport:
        """Tiny torch ops on every device, run once and shared by the checks that need them."""
        if "probe" not in self._cache:
            self._cache["probe"] = self.probe_runner(self.env, self.probe_timeout_s)
        report: ProbeReport = self._cache["probe"]
        return report

    def tool(self, *argv: str) -> CommandResult:
        key = "tool:" + " ".join(argv)
        if key not in self._cache:
            self._cache[key] = self.runner(list(argv), self.tool_timeout_s)
        result: CommandResult = self._cache[key]
        return result

    def pci_gpus(self, vendor: str | None = None) -> list[PciGpu]:
        """GPUs on the PCI bus, driver or not."""
        if "pci" not in self._cache:
            self._cache["pci"] = read_pci_gpus(self.root)
        gpus: list[PciGpu] = self._cache["pci"]
        return [g for g in gpus if vendor is None or g.vendor == vendor]

    def has_hardware(self, vendor: str) -> bool:
        """True when a GPU of `vendor` is here: seen by torch, KFD, an smi tool or the PCI bus."""
        return bool(self.gpus(vendor) or self.pci_gpus(vendor))

    def gpus(self, vendor: str | None = None) -> list[DeviceInfo]:
        return [
            d
            for d in self.platform.devices
            if d.vendor in ("amd", "nvidia") and (vendor is None or d.vendor == vendor)
        ]
