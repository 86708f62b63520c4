"""Numba's CUDA target (`from numba import cuda`, `import numba.cuda`) used for kernels or devices.

Numba's CUDA target compiles kernels to PTX and talks to the NVIDIA driver: its documentation
lists NVIDIA GPUs (and the CUDA toolkit) as the only supported hardware
(https://numba.readthedocs.io/en/stable/cuda/overview.html#requirements). Importing the module
needs no driver; what fails on a ROCm machine is what calls it: a `@cuda.jit` kernel cannot be
compiled or launched (CudaSupportError), and device queries (`cuda.gpus`, `cuda.select_device`,
`cuda.current_context`) raise or list no GPU although torch sees the AMD GPUs.

So, per file that imports the target:
- kernels defined or launched through it, or its device arrays, streams and events (an array
  taken from torch with `cuda.as_cuda_array`), or its driver binding (`numba.cuda.cudadrv`):
  `error` (the feature has no GPU path on ROCm);
- device queries only: `warn` (a GPU report or memory probe that finds nothing on ROCm);
- a probe (`cuda.is_available()` in the file): `info`, the file already does without it (not
  a probe whose `if` only warns or logs: the kernels run anyway);
- a file that also imports cuDF: `info`, its kernels take cuDF's GPU data (the CUDA array
  interface), which a ROCm machine never has (RAPIDS publishes CUDA builds only); its own rule
  reports it. Not CuPy (session twenty-nine): CuPy has ROCm builds (cupy-rocm-X-Y, CuPy's
  install guide), so CuPy arrays exist on an AMD machine and Numba's CUDA kernels still cannot
  take them there.
The finding stands at the import, where a maintainer decides what to do about the target.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from rocmkit.port import nvml_query
from rocmkit.port.rules import Severity
from rocmkit.port.whole_tree import call_name

TRIGGER = "numba"
_KERNEL_ATTRIBUTES = frozenset(
    # Numba's CUDA kernel API (numba.readthedocs.io/en/stable/cuda-reference/kernel.html): what a
    # kernel is written and compiled with
    {"jit", "grid", "gridsize", "shared", "local", "const", "threadIdx", "blockIdx", "blockDim"}
    | {"gridDim", "syncthreads", "atomic", "laneid", "declare_device", "compile_ptx"}
)
# Its host API (cuda-reference/host.html and memory.html): device memory, arrays taken from
# another library, streams and events all need NVIDIA's driver (CudaSupportError on ROCm).
_MEMORY_ATTRIBUTES = frozenset(
    {"to_device", "device_array", "device_array_like", "as_cuda_array", "stream", "event"}
    | {"from_cuda_array_interface", "default_stream", "external_stream", "pinned_array"}
    | {"pinned_array_like", "mapped_array", "mapped_array_like", "managed_array", "synchronize"}
    | {"per_thread_default_stream", "pinned", "mapped"}
)
_QUERY_ATTRIBUTES = frozenset(
    {"gpus", "select_device", "current_context", "get_current_device", "list_devices", "detect"}
)
_CUDA_DATA_MODULES = frozenset({"cudf", "dask_cudf"})
# `from numba import cuda` (or `from numba import (njit,\n cuda)`): with "numba.cuda" anywhere in
# the text, every import of the target matches (imports_target)
_FROM_NUMBA_CUDA = re.compile(r"from\s+numba\s+import\b(?:[^)\n]|\\\n)*?(?:\([^)]*?)?\bcuda\b")
_MISSING_DRIVER_NAMES = frozenset(
    {"_raise_driver_not_found", "CudaSupportError", "CudaDriverError"}
)


@dataclass(frozen=True)
class Use:
    line: int
    column: int
    severity: Severity
    evidence: str


def imports_target(text: str) -> bool:
    """Whether the module may import numba's CUDA target (a superset of what `uses` finds: the
    whole tree is parsed only for such a module)."""
    return "numba.cuda" in text or _FROM_NUMBA_CUDA.search(text) is not None


def uses(tree: ast.Module) -> list[Use]:
    """The import of numba's CUDA target in this module, with how the module uses it (one walk
    of the tree; what a node means is settled once the imports are known)."""
    imports: list[ast.Import | ast.ImportFrom] = []
    candidates: list[ast.Attribute | ast.Name] = []
    ifs: list[ast.If] = []
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            candidates.append(node)
        elif isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                candidates.append(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(node)
        elif isinstance(node, ast.If):
            ifs.append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.decorator_list:
            functions.append(node)
    names, first = _bound_names(imports)
    if first is None:
        return []
    direct = _direct_names(imports)
    kernels = memory = queries = probe = devices = False
    warned = _probes_that_only_warn(ifs, names)
    device_code = _device_function_nodes(functions, names, direct)
    for node in candidates:
        if id(node) in device_code:
            devices = True
            continue
        if isinstance(node, ast.Attribute):
            used = node.attr if _on_target(node.value, names) else None
        else:
            used = direct.get(node.id)  # `from numba.cuda import jit` ... `@jit`
        if used is not None:
            kernels |= used in _KERNEL_ATTRIBUTES
            memory |= used in _MEMORY_ATTRIBUTES
            queries |= used in _QUERY_ATTRIBUTES
            probe |= used == "is_available" and id(node) not in warned
    data = any(m.split(".")[0] in _CUDA_DATA_MODULES for n in imports for m in _modules(n))
    # numba.cuda.cudadrv: Numba's binding of NVIDIA's driver API (libcuda through ctypes)
    memory |= any(_driver_binding(n) for n in imports)
    if probe or data:
        why = "probed with is_available()" if probe else "its kernels take cuDF GPU data"
        return [Use(first.lineno, first.col_offset + 1, "info", f"numba.cuda ({why})")]
    if kernels:
        return [Use(first.lineno, first.col_offset + 1, "error", "numba.cuda kernels")]
    if memory:
        evidence = "numba.cuda device arrays or streams (need NVIDIA's driver)"
        return [Use(first.lineno, first.col_offset + 1, "error", evidence)]
    if queries:
        evidence = "numba.cuda device queries (find no GPU on ROCm)"
        return [Use(first.lineno, first.col_offset + 1, "warn", evidence)]
    if devices:
        why = "device functions only: compiled with the kernels that call them, reported there"
        return [Use(first.lineno, first.col_offset + 1, "info", f"numba.cuda ({why})")]
    return []


def _device_function_nodes(
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef], names: set[str], direct: dict[str, str]
) -> set[int]:
    """The nodes of the functions decorated `@cuda.jit(device=True)`, decorator included.

    Numba compiles a device function only when a kernel that calls it is compiled (Numba's CUDA
    docs, "Device functions"; decorating compiles nothing, so a module of them imports on any
    machine): what fails on ROCm is the kernel, which its own module's finding reports."""
    found: set[int] = set()
    for node in functions:
        for decorator in node.decorator_list:
            if not (
                isinstance(decorator, ast.Call)
                and any(
                    k.arg == "device"
                    and isinstance(k.value, ast.Constant)
                    and k.value.value is True
                    for k in decorator.keywords
                )
            ):
                continue
            func = decorator.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "jit"
                and _on_target(func.value, names)
            ) or (isinstance(func, ast.Name) and direct.get(func.id) == "jit"):
                found.update(id(n) for n in ast.walk(node))
                break
    return found


def _driver_binding(node: ast.Import | ast.ImportFrom) -> bool:
    """An import of Numba's driver binding (`numba.cuda.cudadrv` and its driver, devices and
    devicearray modules), not of its exception classes (`cudadrv.error`: CudaSupportError is
    what a module catches when the driver is missing)."""
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        if node.level or not module.startswith("numba.cuda.cudadrv"):
            return False
        if module == "numba.cuda.cudadrv":
            return any(a.name != "error" for a in node.names)
        if module == "numba.cuda.cudadrv.driver":
            # the helper that raises CudaSupportError("driver not found"), and the error
            # classes: a module that reports the missing driver
            return any(a.name not in _MISSING_DRIVER_NAMES for a in node.names)
        return module != "numba.cuda.cudadrv.error"
    return any(
        a.name.startswith("numba.cuda.cudadrv") and a.name != "numba.cuda.cudadrv.error"
        for a in node.names
    )


def _probes_that_only_warn(ifs: list[ast.If], names: set[str]) -> set[int]:
    """The `cuda.is_available` reads in the test of an `if` whose branches only warn or log
    (`if not cuda.is_available(): warnings.warn(...)`): the module says the kernels will fail
    and runs them anyway, so the probe chooses no other path."""
    found: set[int] = set()
    for node in ifs:
        if _only_warns(node.body) and _only_warns(node.orelse):
            found.update(
                id(n)
                for n in ast.walk(node.test)
                if isinstance(n, ast.Attribute)
                and n.attr == "is_available"
                and _on_target(n.value, names)
            )
    return found


def _only_warns(body: list[ast.stmt]) -> bool:
    """Every statement a warning, a log line, a print (nvml_query.displays) or `pass`, nested
    ifs of those too."""
    return all(
        isinstance(s, ast.Pass)
        or (isinstance(s, ast.If) and _only_warns(s.body) and _only_warns(s.orelse))
        or (
            isinstance(s, ast.Expr)
            and isinstance(s.value, ast.Call)
            and nvml_query.displays(call_name(s.value.func).split("_")[0])
        )
        for s in body
    )


def _bound_names(
    imports: list[ast.Import | ast.ImportFrom],
) -> tuple[set[str], ast.stmt | None]:
    """Names through which the module reaches numba.cuda (`cuda`, or `numba` for
    `import numba.cuda`), and the first statement that imports it."""
    names: set[str] = set()
    first: ast.stmt | None = None
    for node in imports:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "numba":
                bound = {a.asname or a.name for a in node.names if a.name == "cuda"}
            elif node.module == "numba.cuda" or node.module.startswith("numba.cuda."):
                bound = {""}  # names from inside the target: the import itself counts
            else:
                continue
        elif isinstance(node, ast.Import):
            bound = {
                a.asname or "numba.cuda"
                for a in node.names
                if a.name == "numba.cuda" or a.name.startswith("numba.cuda.")
            }
        else:
            continue
        if bound:
            names |= bound
            if first is None or node.lineno < first.lineno:
                first = node
    return names, first


def _direct_names(imports: list[ast.Import | ast.ImportFrom]) -> dict[str, str]:
    """Local name -> the target's attribute it binds (`from numba.cuda import jit as cjit`)."""
    direct: dict[str, str] = {}
    for node in imports:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "numba.cuda":
            direct.update({a.asname or a.name: a.name for a in node.names if a.name != "*"})
    return direct


def _on_target(value: ast.expr, names: set[str]) -> bool:
    if isinstance(value, ast.Name):
        return value.id in names
    return (
        isinstance(value, ast.Attribute)
        and value.attr == "cuda"
        and isinstance(value.value, ast.Name)
        and value.value.id == "numba"
        and "numba.cuda" in names
    )


def _modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        return [node.module] if node.module and not node.level else []
    return [a.name for a in node.names]
