"""CUDA and NVML libraries loaded by file name through ctypes (CDLL, cdll.LoadLibrary, WinDLL).

The names are the library files NVIDIA ships: the CUDA driver (libcuda.so, nvcuda.dll), the
runtime (libcudart, cudart64_*.dll), NVRTC, cuBLAS, cuDNN, and NVML (libnvidia-ml.so,
nvml.dll). A ROCm machine has none of them; HIP's counterparts are other files (libamdhip64,
libhiprtc, libhipblas, libMIOpen, libamd_smi / librocm_smi64), so code that also names one of
those has a ROCm side and is left alone.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

_LOADERS = frozenset({"CDLL", "LoadLibrary", "WinDLL", "PyDLL", "OleDLL"})
# (lib|"")name followed by a version, a dot or the end: libcuda.so.1, nvcuda.dll, cudart64_12.dll.
_NVML = re.compile(r"(?i)(?:^|[/\\])(?:libnvidia-ml\.so|nvml\.dll)")
# The CUDA driver (libcuda.so, nvcuda.dll): its API (cuInit, cuDeviceGetCount) is how a program
# finds CUDA devices, as NVML's nvmlInit is; the other libraries are loaded for many purposes
# (a version to show, a kernel to compile), which the load alone does not tell.
_DRIVER = re.compile(r"(?i)(?:^|[/\\])(?:libcuda(?:\.so|\.\d|\.dylib|$)|nvcuda\S*\.dll)")
_CUDA = re.compile(
    r"(?i)(?:^|[/\\])(?:lib(?:cuda|cudart|nvrtc|cublas|cublaslt|cudnn)(?:\.so|\.\d|\.dylib|$)"
    r"|(?:nvcuda|cudart64_\d+|nvrtc64_\d+|cublas64_\d+|cudnn64_\d+)\S*\.dll)"
)
_HIP = re.compile(r"(?i)amdhip64|hiprtc|hipblas|miopen|amd_smi|rocm_smi")
# Names that hold a key every scan already looks for ("cuda", "nvidia"), and "libcu", the prefix
# of cuBLAS', cuDNN's, cuSOLVER's, ... files (one search of its own: without it a pruned scan
# missed the info finding of `ctypes.CDLL("libcublas.so")` that a whole-file scan reports).
TRIGGERS = ("libcu", "nvcuda", "cudart")
# The CUDA Toolkit's libraries as a linker names them (`-lcudart`, `libraries=["cublas"]`): the
# runtime, NVRTC, the math libraries, cuDNN, nvJPEG, NPP, NVTX and cuFile (CUDA Toolkit docs,
# "CUDA Toolkit Major Components"). ROCm's counterparts have other names (amdhip64, hiprtc,
# hipblas/rocblas, MIOpen, rocJPEG, roctx), and torch's hipify rewrites sources, not a build's
# library list, so such a link fails on ROCm. The driver's "cuda" (libcuda) is a word too common
# to look for in Python strings; a linker option list (setup.cfg's build_ext) names it alone.
LINK_NAMES = frozenset(
    {"cusparse", "cublas", "cublasLt", "curand", "cufft", "cusolver", "cudart", "nvrtc", "cudnn"}
    | {"nvjpeg", "nvToolsExt", "cufile", "nppc", "nppial", "nppicc", "nppidei", "nppif", "nppig"}
    | {"nppim", "nppist", "nppisu", "nppitc", "npps"}
)
DRIVER_LINK = "cuda"
TRIGGERS_NVML = ("libnvidia-ml",)
TRIGGERS_LINK = tuple(f"find_library({q}{n}{q})" for n in ("cuda", "nvidia-ml") for q in "'\"")


def library_kind(name: str) -> str | None:
    """'nvml', 'driver' or 'cuda' for a file name of NVIDIA's libraries, else None."""
    if _NVML.search(name):
        return "nvml"
    if _DRIVER.search(name):
        return "driver"
    if _CUDA.search(name):
        return "cuda"
    return None


def is_loader(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in _LOADERS


# ctypes.util.find_library's argument is the link name (`-lcuda`): the driver's and NVML's, whose
# file the lookup returns for the CDLL after it (None where they are absent, as on ROCm).
_LINK_KINDS = {"cuda": "driver", "nvcuda": "driver", "nvidia-ml": "nvml"}


def constant_load(call: ast.Call) -> tuple[str, str] | None:
    """(kind, file name) of a loader call given the file name as a string constant, or of a
    `find_library("cuda")` / `find_library("nvidia-ml")` lookup (the link name)."""
    if not call.args:
        return None
    arg = call.args[0]
    func = call.func
    if (
        func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    ) == "find_library":
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            kind = _LINK_KINDS.get(arg.value.lower())
            return (kind, f"find_library({arg.value!r})") if kind else None
        return None
    if not is_loader(call):
        return None
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        kind = library_kind(arg.value)
        return (kind, arg.value) if kind else None
    return None


def loads_by_name(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
) -> Iterator[tuple[ast.Call, str, str]]:
    """(call, kind, file name) for each loader call of `function` whose file name is a variable,
    where the function spells only NVIDIA's library names (a list it tries one by one)."""
    named: dict[str, str] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _HIP.search(node.value):
                return  # the function also loads HIP's library: it has a ROCm side
            kind = library_kind(node.value)
            if kind:
                named.setdefault(kind, node.value)
    if not named:
        return
    kind = next(k for k in ("nvml", "driver", "cuda") if k in named)
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Call)
            and node.args
            and is_loader(node)
            and not isinstance(node.args[0], ast.Constant)
        ):
            yield node, kind, named[kind]
