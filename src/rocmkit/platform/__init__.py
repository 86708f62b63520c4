"""What hardware and software is here: torch build, devices, CPU, hardware facts.

Nothing is detected at import time; call `detect()` when a command starts and pass the
`Platform` down. Tests build `Platform` objects directly.
"""

from rocmkit.platform.backend import CpuInfo, DeviceInfo, Platform, detect

__all__ = ["CpuInfo", "DeviceInfo", "Platform", "detect"]
