"""Hardware facts as data: arch -> family, wavefront size, peak TFLOPS per dtype, bandwidth.

The rows live in specs.toml beside this file, each with its public source. Unknown devices give
None: callers report "n/a" rather than assume some other GPU's numbers.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True, kw_only=True)
class ArchSpec:
    """Peak figures of one product (dense, no sparsity), with the source they come from."""

    key: str  # "mi300x", "h100-sxm"
    name: str  # "AMD Instinct MI300X"
    arch: str  # "gfx942", "sm_90"
    vendor: str  # "amd" | "nvidia"
    family: str  # "CDNA3", "Hopper"
    wavefront_size: int
    peak_tflops: dict[str, float] = field(default_factory=dict)  # dtype -> dense TFLOPS
    memory_bandwidth_gbps: float | None = None  # GB/s (1e9 bytes/s)
    memory_gib: float | None = None
    source: str = ""

    def peak_for(self, dtype: str) -> float | None:
        """Dense peak TFLOPS for a dtype name ("fp32", "tf32", "fp16", "bf16", "fp8")."""
        return self.peak_tflops.get(dtype)


@functools.cache
def all_specs() -> tuple[ArchSpec, ...]:
    """Every row of specs.toml."""
    raw = resources.files("rocmkit.platform").joinpath("specs.toml").read_bytes()
    data: dict[str, Any] = tomllib.loads(raw.decode("utf-8"))
    return tuple(ArchSpec(key=key, **row) for key, row in data.items())


def lookup_spec(arch: str | None, name: str | None = None) -> ArchSpec | None:
    """Find the spec for an arch ("gfx942") and, when several products share it, a device name.

    Returns None when nothing matches: never fall back to another device's figures.
    """
    if not arch:
        return None
    candidates = [s for s in all_specs() if s.arch == arch.lower()]
    if len(candidates) <= 1 or not name:
        return candidates[0] if len(candidates) == 1 else None
    lowered = name.lower()
    named = [s for s in candidates if any(part in lowered for part in _name_keys(s))]
    return named[0] if len(named) == 1 else None


def _name_keys(spec: ArchSpec) -> tuple[str, ...]:
    return tuple(k.lower() for k in spec.name.split() if any(ch.isdigit() for ch in k))
