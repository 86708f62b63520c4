"""The CUDA -> HIP name table: rocmkit's hand-kept `mappings.toml` over `mappings_folded.toml`.

The folded file holds the valid part of PyTorch's hipify table as plain name pairs (built by
rocmkit.hipify.fold, see docs/hipify.md); nothing here reads torch, so a translation is the same
with or without PyTorch installed. `mappings.toml` is keyed by category and wins on conflict.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import sys
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal, NamedTuple

from rocmkit.hipify.guards import GuardTable
from rocmkit.hipify.toolkit import absent_device_api
from rocmkit.hipify.versions import (
    hip_headers,
    hip_names,
    is_checked,
    library_names,
    library_of,
    library_source,
    resolve_version,
)
from rocmkit.hipify.warp import LOWERED

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MappingSource = Literal["auto", "builtin"]

_CUDA_PREFIXES = ("cu", "CU", "nv", "NV", "nc", "NC")
_SPECIAL_SECTIONS = {"includes", "namespaces", "unsupported", "kept", "ignored"}
_SPECIAL_SECTIONS |= {"guards", "guards_defined_only", "version_macros", "include_fallbacks"}

# Library prefixes decide the category of a name PyTorch's table gives without one, and of an
# unconverted name in diagnostics. Longest prefixes first.
_CATEGORY_PREFIXES: tuple[tuple[str, str], ...] = (
    ("cublas", "cuBLAS"),
    ("CUBLAS", "cuBLAS"),
    ("curand", "cuRAND"),
    ("CURAND", "cuRAND"),
    ("cufft", "cuFFT"),
    ("CUFFT", "cuFFT"),
    ("cusparse", "cuSPARSE"),
    ("CUSPARSE", "cuSPARSE"),
    ("cusolver", "cuSOLVER"),
    ("CUSOLVER", "cuSOLVER"),
    ("cudnn", "cuDNN"),
    ("CUDNN", "cuDNN"),
    ("nvrtc", "nvrtc"),
    ("NVRTC", "nvrtc"),
    ("nvtx", "nvtx"),
    ("nccl", "NCCL"),
    ("NCCL", "NCCL"),
    ("CUDA_R_", "library_types"),
    ("CUDA_C_", "library_types"),
    ("cuda", "runtime"),
    ("CUDA", "driver"),
    ("CU", "driver"),
    ("cu", "driver"),
)

# What counts as "CUDA-looking" when a name has no mapping (reported, never guessed at).
CUDA_LOOKING = re.compile(
    r"(?:cuda|CUDA|cu[A-Z]|CU[a-z_]|cublas|CUBLAS|curand|CURAND|cufft|CUFFT|cusparse|CUSPARSE|"
    r"cusolver|CUSOLVER|cudnn|CUDNN|nvrtc|NVRTC|nvtx|nccl|NCCL)\w*\Z"
)


@functools.lru_cache(maxsize=65536)  # a big file repeats the same few unconverted names
def category_of(name: str) -> str:
    """The library a CUDA name belongs to, judged by its prefix ("runtime", "cuBLAS", ...)."""
    for prefix, category in _CATEGORY_PREFIXES:
        if name.startswith(prefix):
            return category
    return "other"


class Mapping(NamedTuple):
    """A HIP name and its category; a tuple, so the translator builds edits from it cheaply."""

    hip: str
    category: str


@dataclass(frozen=True)
class MappingTable:
    """Everything the translator looks names up in; build it with `load_table`."""

    identifiers: dict[str, Mapping]
    includes: dict[str, str]
    namespaces: dict[str, str]
    unsupported: dict[str, str]
    kept_prefixes: tuple[str, ...]
    sources: tuple[str, ...] = field(default=())
    guards: GuardTable = field(default_factory=lambda: GuardTable({}, {}, {}))
    # Target namespace -> (the names its library declares, where that list comes from), for the
    # C++ libraries a namespace maps to (`cub::X` -> `hipcub::X`); empty when not checked.
    namespace_members: dict[str, tuple[frozenset[str], str]] = field(default_factory=dict)
    # CUDA include path -> why it is not rewritten: its HIP header is missing from the target.
    unsupported_includes: dict[str, str] = field(default_factory=dict)
    # CUDA device functions the target's headers do not declare (`__frcp_rd`): reported.
    absent_device_functions: frozenset[str] = frozenset()

    def library_folders(self) -> frozenset[str]:
        """The first folder of every library header an include becomes (`rccl`, `hipcub`...),
        and `thrust` (rocThrust keeps CUDA's paths): what a target may lack."""
        found = {path.split("/")[0] for path in self.includes.values() if "/" in path}
        return frozenset(found - {"hip"} | {"thrust"})

    def candidate_prefixes(self) -> list[str]:
        """Starts of every name worth looking up: the CUDA-looking two-letter prefixes, plus the
        whole name of the few table entries that start otherwise (`__CUDACC__`, `make_cuComplex`).
        Listing `__` or `ma` instead would send every `__global__` and `max` to Python code."""
        names = [
            *self.identifiers,
            *self.unsupported,
            *self.namespaces,
            *self.absent_device_functions,
        ]
        return sorted(set(_CUDA_PREFIXES) | {n for n in names if not n.startswith(_CUDA_PREFIXES)})


def _read_data(name: str) -> dict[str, Any]:
    raw = resources.files("rocmkit.hipify").joinpath(name).read_bytes()
    return tomllib.loads(raw.decode("utf-8"))


@functools.cache
def load_table(source: MappingSource = "auto") -> MappingTable:
    """Build the table once per process. "auto": rocmkit's table over the facts folded from
    PyTorch's table (mappings_folded.toml); "builtin": rocmkit's hand-kept table alone.
    Neither reads torch, so the output does not depend on whether it is installed."""
    data = _read_data("mappings.toml")
    identifiers: dict[str, Mapping] = {}
    includes: dict[str, str] = {}
    sources = ["rocmkit"]
    if source == "auto":
        folded = _read_data("mappings_folded.toml")
        for category, entries in folded.items():
            if category != "includes":
                identifiers.update((name, Mapping(hip, category)) for name, hip in entries.items())
        includes.update(folded.get("includes", {}))
        sources.append("folded from torch.utils.hipify")
    for category, entries in data.items():
        if category in _SPECIAL_SECTIONS:
            continue
        identifiers.update((name, Mapping(hip, category)) for name, hip in entries.items())
    includes.update(data.get("includes", {}))
    unsupported = dict(data.get("unsupported", {}))
    for name in [*unsupported, *data.get("ignored", {}).get("names", ())]:
        identifiers.pop(name, None)
    return MappingTable(
        identifiers=identifiers,
        includes=includes,
        namespaces=dict(data.get("namespaces", {})),
        unsupported=unsupported,
        kept_prefixes=tuple(data.get("kept", {}).get("prefixes", ())),
        sources=tuple(sources),
        guards=GuardTable(
            guards=dict(data.get("guards", {})),
            defined_only=dict(data.get("guards_defined_only", {})),
            version_macros=dict(data.get("version_macros", {})),
        ),
    )


@functools.cache
def table_for_version(source: MappingSource, version: str) -> MappingTable:
    """`load_table(source)` without the mappings whose HIP name HIP `version` (or the HIP library
    of the same ROCm release) does not declare: those names become `unsupported` (reported,
    never emitted)."""
    shipped = resolve_version(version)
    table = load_table(source)
    known = hip_names(shipped)
    libraries = library_names(shipped)
    tag = library_source(shipped)
    identifiers = dict(table.identifiers)
    unsupported = dict(table.unsupported)
    for name, mapping in table.identifiers.items():
        library = library_of(mapping.hip)
        if library is not None and mapping.hip not in libraries:
            del identifiers[name]
            unsupported[name] = f"{mapping.hip} is not declared by {library}'s headers at {tag}"
        elif is_checked(mapping.hip) and mapping.hip not in known:
            del identifiers[name]
            unsupported[name] = f"{mapping.hip} is not declared by HIP {shipped}'s headers"
    hipcub = frozenset(n.removeprefix("hipcub::") for n in libraries if n.startswith("hipcub::"))
    members = {"hipcub": (hipcub, f"hipCUB's headers at {tag}")}
    includes, lacking = _includes_for(table.includes, shipped)
    # the `*_sync` warp calls are lowered (warp.py), the mapped names translated: not absent
    absent = absent_device_api(version).entries.keys() - identifiers.keys() - unsupported.keys()
    return dataclasses.replace(
        table,
        absent_device_functions=frozenset(absent - LOWERED.keys()),
        identifiers=identifiers,
        unsupported=unsupported,
        namespace_members=members,
        includes=includes,
        unsupported_includes=lacking,
    )


def _includes_for(includes: dict[str, str], shipped: str) -> tuple[dict[str, str], dict[str, str]]:
    """The include mappings whose HIP header release `shipped` has (or the header where that
    release declares the same API), and why the others are not rewritten."""
    headers = hip_headers(shipped)
    fallbacks = _read_data("mappings.toml").get("include_fallbacks", {})
    kept, lacking = dict(includes), {}
    for cuda_path, hip_path in includes.items():
        if not hip_path.startswith("hip/") or hip_path in headers:
            continue
        if fallbacks.get(hip_path) in headers:
            kept[cuda_path] = fallbacks[hip_path]
            continue
        del kept[cuda_path]
        lacking[cuda_path] = (
            f"HIP {shipped} has no <{hip_path}>: the APIs of <{cuda_path}> "
            "have no HIP header on this target (it arrived later)"
        )
    return kept, lacking
