"""The CUDA -> HIP name table: rocmkit's own data file, plus PyTorch's table when torch is importable.

PyTorch ships about 3,400 CUDA -> HIP pairs (torch.utils.hipify.cuda_to_hip_mappings). It is read
lazily and only its generic CUDA tables (not the PyTorch/Caffe2 specific ones, which would turn
`CUDA_VERSION` into `TORCH_HIP_VERSION`). rocmkit's `mappings.toml` holds additions and corrections,
keyed by category, and wins on conflict, so the translator also works in an environment without torch.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import re
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from rocmkit.hipify.guards import GuardTable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MappingSource = Literal["auto", "builtin"]

_CUDA_PREFIXES = ("cu", "CU", "nv", "NV", "nc", "NC")
_TORCH_UNSUPPORTED = "PyTorch's hipify table lists it as having no HIP equivalent"
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*\Z")
_SPECIAL_SECTIONS = {"includes", "namespaces", "unsupported", "kept", "ignored"}
_SPECIAL_SECTIONS |= {"guards", "guards_defined_only", "version_macros"}

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


@dataclass(frozen=True, slots=True)
class Mapping:
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

    def candidate_prefixes(self) -> list[str]:
        """Starts of every name worth looking up: the CUDA-looking two-letter prefixes, plus the
        whole name of the few table entries that start otherwise (`__CUDACC__`, `make_cuComplex`).
        Listing `__` or `ma` instead would send every `__global__` and `max` to Python code."""
        names = [*self.identifiers, *self.unsupported, *self.namespaces]
        return sorted(set(_CUDA_PREFIXES) | {n for n in names if not n.startswith(_CUDA_PREFIXES)})


def _read_builtin() -> dict[str, Any]:
    raw = resources.files("rocmkit.hipify").joinpath("mappings.toml").read_bytes()
    return tomllib.loads(raw.decode("utf-8"))


@dataclass(frozen=True)
class _TorchTable:
    identifiers: dict[str, str]
    includes: dict[str, str]
    unsupported: set[str]  # names PyTorch lists as having no HIP equivalent


def _torch_table() -> _TorchTable | None:
    """The generic CUDA parts of PyTorch's table, or None when torch is absent."""
    torch_maps = _load_torch_mapping_module()
    if torch_maps is None:
        return None
    table = _TorchTable({}, {}, set())
    for table_name in ("CUDA_TYPE_NAME_MAP", "CUDA_IDENTIFIER_MAP", "CUDA_SPECIAL_MAP"):
        for cuda_name, value in getattr(torch_maps, table_name, {}).items():
            if not _IDENTIFIER.match(cuda_name):
                continue
            hip = _torch_value(value)
            if hip is None:
                table.unsupported.add(cuda_name)
            elif _IDENTIFIER.match(hip):
                table.identifiers[cuda_name] = hip
    for cuda_name, value in getattr(torch_maps, "CUDA_INCLUDE_MAP", {}).items():
        hip = _torch_value(value)
        if hip:
            table.includes[cuda_name] = hip.strip('<>"')
    return table


def _load_torch_mapping_module() -> ModuleType | None:
    """Execute torch's mapping module on its own: it needs only `collections` and `os`, and
    importing all of torch would cost seconds on every `rocmkit hipify` run."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location) / "utils" / "hipify" / "cuda_to_hip_mappings.py"
        if path.is_file():
            module_spec = importlib.util.spec_from_file_location("_rocmkit_torch_hipify_maps", path)
            if module_spec is None or module_spec.loader is None:
                return None
            module = importlib.util.module_from_spec(module_spec)
            try:
                module_spec.loader.exec_module(module)
            except Exception:  # a future torch may import more; then the built-in table serves
                return None
            return module
    return None


def _torch_value(value: Any) -> str | None:
    """PyTorch < 2.x stored (hip_name, CONV_*, API_*[, HIP_UNSUPPORTED]); newer ones plain strings."""
    if isinstance(value, tuple):
        if len(value) > 3:  # flagged HIP_UNSUPPORTED
            return None
        value = value[0]
    if not isinstance(value, str) or value.endswith("__"):  # "hipMemcpy__" marks "no equivalent"
        return None
    return value


@functools.cache
def load_table(source: MappingSource = "auto") -> MappingTable:
    """Build the table once per process; "auto" adds PyTorch's table under the built-in one."""
    data = _read_builtin()
    identifiers: dict[str, Mapping] = {}
    includes: dict[str, str] = {}
    unsupported: dict[str, str] = {}
    sources = ["rocmkit"]
    torch_table = _torch_table() if source == "auto" else None
    if torch_table is not None:
        identifiers.update(
            (name, Mapping(hip, category_of(name))) for name, hip in torch_table.identifiers.items()
        )
        includes.update(torch_table.includes)
        unsupported.update(dict.fromkeys(torch_table.unsupported, _TORCH_UNSUPPORTED))
        sources.append("torch.utils.hipify")
    for category, entries in data.items():
        if category in _SPECIAL_SECTIONS:
            continue
        identifiers.update((name, Mapping(hip, category)) for name, hip in entries.items())
    includes.update(data.get("includes", {}))
    for name in [n for n in unsupported if n in identifiers]:  # rocmkit knows an equivalent
        del unsupported[name]
    unsupported.update(data.get("unsupported", {}))
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
    """`load_table(source)` without the mappings whose HIP name HIP `version` does not declare:
    those names become `unsupported` (reported, never emitted)."""
    from rocmkit.hipify.versions import hip_names, is_checked, resolve_version

    shipped = resolve_version(version)
    table = load_table(source)
    known = hip_names(shipped)
    identifiers = dict(table.identifiers)
    unsupported = dict(table.unsupported)
    for name, mapping in table.identifiers.items():
        if is_checked(mapping.hip) and mapping.hip not in known:
            del identifiers[name]
            unsupported[name] = f"{mapping.hip} is not declared by HIP {shipped}'s headers"
    return dataclasses.replace(table, identifiers=identifiers, unsupported=unsupported)
