"""Dask's NVML wrapper (`distributed.diagnostics.nvml`) as an NVML caller.

Its entry points call `init_once()`, which calls `pynvml.nvmlInit()` and, where NVML's library is
missing (every AMD machine), records the state and goes on: `device_get_count()` then returns 0 and
the others find no device (distributed 2026.8.0, distributed/diagnostics/nvml.py). Code that asks
it for the GPU count gets 0 on ROCm, which is what the `nvml-call` check is about."""

from __future__ import annotations

import ast
import re

# The module's functions that initialise NVML before they answer (the file named above). Its
# real_time()/one_time() also do, but those names are too common to look for in every file.
ENTRY_POINTS = frozenset(
    {"device_get_count", "get_device_index_and_uuid", "get_device_mig_mode", "has_cuda_context"}
)
TRIGGERS = tuple(sorted(ENTRY_POINTS))

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
