"""What hardware and software is here: torch build, devices, CPU, hardware facts.

Nothing is detected at import time; call `detect()` when a command starts and pass the
`Platform` down. Tests build `Platform` objects directly.
"""

from rocmkit.platform.backend import CpuInfo, DeviceInfo, Platform, detect
from rocmkit.platform.specs import ArchFacts, ArchSpec, arch_facts, lookup_spec

__all__ = [
    "ArchFacts",
    "ArchSpec",
    "CpuInfo",
    "DeviceInfo",
    "Platform",
    "arch_facts",
    "detect",
    "lookup_spec",
]
