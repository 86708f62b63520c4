"""Libraries that call NVML for the project, as NVML callers.

Dask's NVML wrapper (`distributed.diagnostics.nvml`): its entry points call `init_once()`, which
calls `pynvml.nvmlInit()` and, where NVML's library is missing (every AMD machine), records the
state and goes on: `device_get_count()` then returns 0 and the others find no device (distributed
2026.8.0, distributed/diagnostics/nvml.py). Code that asks it for the GPU count gets 0 on ROCm.

PyTorch-Ignite's `GpuInfo` metric (`ignite.metrics.GpuInfo`, earlier `ignite.contrib.metrics`):
its constructor takes pynvml.smi's `nvidia_smi.getInstance()`, whose constructor calls nvmlInit()
(ignite/metrics/gpu_info.py), so `GpuInfo()` raises NVMLError_LibraryNotFound on an AMD machine,
where `torch.cuda.is_available()`, its only other condition, is true.

Both are what the `nvml-call` check is about: the place where an AMD machine loses the feature.
"""

from __future__ import annotations

import ast
import re

# The module's functions that initialise NVML before they answer (the file named above). Its
# real_time()/one_time() also do, but those names are too common to look for in every file.
ENTRY_POINTS = frozenset(
    {"device_get_count", "get_device_index_and_uuid", "get_device_mig_mode", "has_cuda_context"}
)
TRIGGERS = (*sorted(ENTRY_POINTS), "GpuInfo")

# `from distributed.diagnostics import nvml [as x]` (also through dask.distributed), or
# `import distributed.diagnostics.nvml as x`.
_BINDING = re.compile(
    r"(?m)^[ \t]*(?:from[ \t]+(?:dask\.)?distributed\.diagnostics[ \t]+import[ \t]+nvml"
    r"(?:[ \t]+as[ \t]+(\w+))?|import[ \t]+(?:dask\.)?distributed\.diagnostics\.nvml"
    r"[ \t]+as[ \t]+(\w+))"
)


def bound_names(text: str) -> frozenset[str]:
    """The names a module binds dask's NVML wrapper to; empty when it does not import it."""
    if "diagnostics" not in text:
        return frozenset()
    return frozenset(m.group(1) or m.group(2) or "nvml" for m in _BINDING.finditer(text))


def entry_call(node: ast.Call, names: frozenset[str]) -> str:
    """`nvml.device_get_count()` on a name bound to the wrapper: the function's name, or ''."""
    func = node.func
    if (
        isinstance(func, ast.Attribute)
        and func.attr in ENTRY_POINTS
        and isinstance(func.value, ast.Name)
        and func.value.id in names
    ):
        return func.attr
    return ""


# `from ignite.metrics import GpuInfo [as x]` / `from ignite.contrib.metrics import (..., GpuInfo)`,
# or the module bound: `import ignite.contrib.metrics as m` / `from ignite import metrics`.
_IGNITE = re.compile(
    r"(?m)^[ \t]*from[ \t]+ignite(?:\.contrib)?\.metrics(?:\.gpu_info)?[ \t]+import[ \t]+"
    r"(\([^)]*\)|[^\n]*)"
)


def gpu_info_names(text: str) -> frozenset[str]:
    """The names a module binds Ignite's GpuInfo to; empty when it does not import it."""
    if "GpuInfo" not in text or "ignite" not in text:
        return frozenset()
    names = set()
    for m in _IGNITE.finditer(text):
        for item in m.group(1).strip("()").split(","):
            words = item.split()
            if words and words[0] == "GpuInfo":
                names.add(words[2] if len(words) == 3 and words[1] == "as" else "GpuInfo")
    return frozenset(names)


def constructs_gpu_info(node: ast.Call, names: frozenset[str], text: str) -> bool:
    """`GpuInfo()` through an imported name, or `ignite.contrib.metrics.GpuInfo()` /
    `metrics.GpuInfo()` in a module that imports ignite."""
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in names
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "GpuInfo"
        and "ignite" in text
        and isinstance(func.value, (ast.Name, ast.Attribute))
    )
