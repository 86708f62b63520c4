"""Hardware facts as data: arch -> family, wavefront size, peak TFLOPS per dtype, bandwidth.

The rows live in specs.toml beside this file, each with its public source. Unknown devices give
None: callers report "n/a" rather than assume some other GPU's numbers.
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# Names people use for the same dtype; CDNA3 calls TF32 "XF32".
_DTYPE_ALIASES = {
    "xf32": "tf32",
    "float32": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "float64": "fp64",
    "float8": "fp8",
    "float8_e4m3fn": "fp8",
    "float8_e4m3fnuz": "fp8",
    "float8_e5m2": "fp8",
    "float8_e5m2fnuz": "fp8",
}


@dataclass(frozen=True, kw_only=True)
class ArchFacts:
    """What an architecture is, whatever product carries it."""

    arch: str  # "gfx1100", "sm_90"
    vendor: str  # "amd" | "nvidia"
    family: str  # "RDNA3", "Hopper"
    wavefront_size: int  # the default wave/warp size
    wavefront_sizes: tuple[int, ...] = ()  # every size it can run (RDNA: 32 and 64)
    bf16_hardware: bool = False  # real bf16 support (torch says yes on every HIP GPU)
    fp8_flavour: str | None = None  # "e4m3fn" (OCP) or "e4m3fnuz" (MI300); None: no fp8
    integrated: bool = False  # only ships as an APU's iGPU (Phoenix, Strix...)
    # Cache behind L2 (Infinity Cache / MALL), the largest of the arch's products; None: none.
    last_level_cache_mib: int | None = None
    last_level_cache_source: str = ""


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
    match: tuple[str, ...] = ()  # words that must all be in the device name
    exclude: tuple[str, ...] = ()  # words that must not be
    compute_units: int | None = None  # CUs (AMD) / SMs (NVIDIA) where a source states them
    peaks: str = ""  # "dense as printed" | "sparse figures halved" ("" on older rows)
    source_url: str = ""  # what was actually read to check the figures
    unverified: tuple[str, ...] = ()  # figures no copy of the vendor's table confirmed

    def checked(self, figure: str) -> bool:
        """Whether a figure ("bf16", "memory_bandwidth_gbps") was confirmed against a copy of the
        vendor's table (older rows, with no `unverified` list, count as checked)."""
        key = _dtype_key(figure)  # a dtype named as `peak_for` takes it
        group = "peak_tflops" if key in self.peak_tflops else key
        return key not in self.unverified and group not in self.unverified

    def peak_for(self, dtype: str) -> float | None:
        """Dense peak TFLOPS for a dtype name ("fp32", "tf32"/"xf32", "fp16", "bf16", "fp8")."""
        return self.peak_tflops.get(_dtype_key(dtype))


def _dtype_key(name: str) -> str:
    """ "torch.bfloat16", "bfloat16", "BF16" -> "bf16"; any other name (a figure) unchanged."""
    key = name.lower().removeprefix("torch.")
    return _DTYPE_ALIASES.get(key, key)


@functools.cache
def _load() -> dict[str, Any]:
    raw = resources.files("rocmkit.platform").joinpath("specs.toml").read_bytes()
    data: dict[str, Any] = tomllib.loads(raw.decode("utf-8"))
    return data


@functools.cache
def all_arch_facts() -> dict[str, ArchFacts]:
    """Every [arch.*] row of specs.toml, keyed by arch."""
    return {
        arch: ArchFacts(
            arch=arch,
            vendor=row["vendor"],
            family=row["family"],
            wavefront_size=int(row["wavefront_size"]),
            wavefront_sizes=tuple(row.get("wavefront_sizes", (row["wavefront_size"],))),
            bf16_hardware=bool(row.get("bf16_hardware", False)),
            fp8_flavour=row.get("fp8_flavour"),
            integrated=bool(row.get("integrated", False)),
            last_level_cache_mib=row.get("last_level_cache_mib"),
            last_level_cache_source=row.get("last_level_cache_source", ""),
        )
        for arch, row in _load()["arch"].items()
    }


@functools.cache
def all_specs() -> tuple[ArchSpec, ...]:
    """Every [product.*] row of specs.toml."""
    specs = []
    for key, row in _load()["product"].items():
        facts = all_arch_facts()[row["arch"]]
        specs.append(
            ArchSpec(
                key=key,
                name=row["name"],
                arch=row["arch"],
                vendor=facts.vendor,
                family=facts.family,
                wavefront_size=facts.wavefront_size,
                peak_tflops={k: float(v) for k, v in row.get("peak_tflops", {}).items()},
                memory_bandwidth_gbps=row.get("memory_bandwidth_gbps"),
                memory_gib=row.get("memory_gib"),
                source=row["source"],
                match=tuple(row.get("match", ())),
                exclude=tuple(row.get("exclude", ())),
                compute_units=row.get("compute_units"),
                peaks=row.get("peaks", ""),
                source_url=row.get("source_url", ""),
                unverified=tuple(row.get("unverified", ())),
            )
        )
    return tuple(specs)


def normalize_arch(arch: str | None) -> str | None:
    """ "gfx942:sramecc+:xnack-" -> "gfx942"; "SM_90"/"sm90" -> "sm_90"; "" -> None."""
    if not arch:
        return None
    base = arch.strip().lower().split(":")[0]
    sm = re.fullmatch(r"sm_?(\d+)a?", base)
    if sm:
        return f"sm_{sm.group(1)}"
    return base or None


def arch_facts(arch: str | None) -> ArchFacts | None:
    """Family, vendor and wavefront facts for an arch alone (no product needed); None if unknown."""
    key = normalize_arch(arch)
    return all_arch_facts().get(key) if key else None


def last_level_cache_bytes(arch: str | None) -> int:
    """Bytes of the cache an arch has behind L2 (AMD Infinity Cache), 0 when none or unknown.

    torch reports L2 (`L2_cache_size`) but not this cache, which still serves a re-read."""
    facts = arch_facts(arch)
    return (facts.last_level_cache_mib or 0) * 2**20 if facts else 0


# "Navi 31 [Radeon RX 7900 XT/7900 XTX]", "AMD Instinct MI250X/MI250": a PCI-database or
# marketing name that lists several products. Reading it as the bigger one overstates peaks.
_ALTERNATIVES = re.compile(r"\w\s*/\s*\w")


def spec_ambiguity(name: str | None) -> str | None:
    """Why `name` cannot pick one product (it lists alternatives), or None when it can."""
    if name and _ALTERNATIVES.search(name):
        return f"{name!r} names several products; no figures (the exact model is needed)"
    return None


def lookup_spec(arch: str | None, name: str | None = None) -> ArchSpec | None:
    """Find the product row for an arch ("gfx942") and device name ("AMD Instinct MI300X").

    With a name, the row whose `match` words are all in it (and no `exclude` word) wins; the most
    specific such row wins; a tie or no fit gives None. Without a name there is no answer: every
    arch is (or may become) shared by several products. Never falls back to another device's figures.
    A name listing alternatives ("RX 7900 XT/7900 XTX") gives None too (see `spec_ambiguity`).
    """
    key = normalize_arch(arch)
    if not key or not name or spec_ambiguity(name):
        return None
    candidates = [s for s in all_specs() if s.arch == key]
    words = set(re.findall(r"[a-z0-9]+", name.lower()))
    fitting = [
        s for s in candidates if set(s.match) <= words and not (set(s.exclude) & words) and s.match
    ]
    if not fitting:
        return None
    best = max(len(s.match) for s in fitting)
    most_specific = [s for s in fitting if len(s.match) == best]
    return most_specific[0] if len(most_specific) == 1 else None


def find_spec_by_name(name: str | None) -> ArchSpec | None:
    """The product row a device name alone picks (text reports of other machines name no arch):
    the same matching as `lookup_spec` across every arch; ambiguous or unknown names give None."""
    if not name or spec_ambiguity(name):
        return None
    archs = {s.arch for s in all_specs()}
    found = {spec.key: spec for a in archs if (spec := lookup_spec(a, name)) is not None}
    return next(iter(found.values())) if len(found) == 1 else None
