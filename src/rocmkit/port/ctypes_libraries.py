"""NVIDIA's CUDA libraries loaded through ctypes when a module is imported.

The library names are the shared objects of NVIDIA's CUDA toolkit (its "CUDA Toolkit Major
Components" list: cudart, NVRTC, nvJitLink, cuBLAS/cuBLASLt, cuFFT, cuRAND, cuSOLVER, cuSPARSE,
NVTX's nvToolsExt, CUPTI, nvJPEG, NPP) and of NVIDIA's other libraries the nvidia-* wheels ship
(cuDNN, NCCL, cuTENSOR, cuFile), each wheel putting them under site-packages/nvidia/<name>/lib.
A ROCm machine has none of these files: ROCm's libraries are other files with other symbols
(hipBLAS, hipSOLVER, MIOpen, RCCL, ...; the table below names the counterpart in each fix).

ctypes.CDLL raises OSError on a missing library, so a load in a module's own top-level
statements fails the import on ROCm:
- a load on the module's main path (no try, no if, not in a function): `error`;
- one behind a fallback (inside try/except or an if at module level): `warn`, the module imports
  but the feature the library gives is lost;
- a module that also names a ROCm library file has a ROCm side: `info`.
Loads inside functions are judged by the existing `cuda-library-load` check (what the function is
for is not told by the load). The CUDA driver and NVML have rules of their own and are not here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from rocmkit.port.rules import Severity
from rocmkit.port.whole_tree import call_name

# The stem of each library file (libSTEM.so*, STEM64_*.dll, ctypes.util.find_library("STEM"))
# -> ROCm's counterpart. From the CUDA toolkit's component list and the nvidia-* wheels' lib/.
ROCM_COUNTERPART: dict[str, str] = {
    "cudart": "the HIP runtime (libamdhip64.so)",
    "nvrtc": "hipRTC (libhiprtc.so)",
    "nvjitlink": "the ROCm code object manager (libamd_comgr.so)",
    "cublas": "hipBLAS / rocBLAS (libhipblas.so)",
    "cublaslt": "hipBLASLt (libhipblaslt.so)",
    "cufft": "hipFFT (libhipfft.so)",
    "cufftw": "hipFFT (libhipfft.so)",
    "curand": "hipRAND (libhiprand.so)",
    "cusolver": "hipSOLVER (libhipsolver.so)",
    "cusolvermg": "hipSOLVER (libhipsolver.so)",
    "cusparse": "hipSPARSE (libhipsparse.so)",
    "cusparselt": "hipSPARSELt (libhipsparselt.so)",
    "cudnn": "MIOpen (libMIOpen.so)",
    "nccl": "RCCL (librccl.so)",
    "nvtoolsext": "rocTX (libroctx64.so)",
    "cupti": "rocprofiler-sdk (librocprofiler-sdk.so)",
    "nvjpeg": "rocJPEG (librocjpeg.so)",
    "cutensor": "hipTensor (libhiptensor.so)",
}
_STEMS = "|".join(sorted(ROCM_COUNTERPART, key=len, reverse=True))
# libcublas.so.12, libcudnn_ops.so.9, cublas64_12.dll, libnccl.so.2 (a stem then a version, a
# suffix or a cuDNN sub-library name); not libcuda (the driver) nor libnvidia-ml (NVML).
_FILE = re.compile(
    rf"(?i)(?:^|[/\\])(?:lib)?({_STEMS})(?:_\w+)?(?:64_\d+)?(?:\.so|\.dll|\.dylib|\.\d|$)"
)
_STEM = re.compile(rf"(?i)^(?:lib)?({_STEMS})$")  # find_library's argument
# site-packages/nvidia/<wheel>/lib: where the nvidia-cublas-cu12, ... wheels put the files.
_WHEEL_DIR = re.compile(rf"(?i)(?:^|[/\\])nvidia[/\\]({_STEMS})[/\\]lib")
_LOADERS = frozenset({"CDLL", "LoadLibrary", "WinDLL", "PyDLL", "find_library"})
# A ROCm library file named anywhere in the module: it loads the ROCm side too.
_ROCM_FILE = re.compile(
    r"(?i)amdhip64|hiprtc|hipblas|hipsolver|hipsparse|hipfft|hiprand|miopen|rccl|rocblas|roctx"
)
TRIGGERS = ("libcu", "libnccl", "find_library", "nvidia/", "cudart", "nvrtc")


@dataclass(frozen=True)
class Load:
    line: int
    column: int
    severity: Severity
    evidence: str


def _library(call: ast.Call, named: dict[str, list[tuple[int, str]]] | None = None) -> str | None:
    """The NVIDIA library stem a call loads or looks up, from its string arguments (or the
    file names a name given to it holds: `for name in _libcudart_libname_list: LoadLibrary(name)`,
    scikit-cuda's way of trying each soname)."""
    name = call_name(call.func)
    strings = []
    for a in [*call.args, *(k.value for k in call.keywords)]:
        if isinstance(a, ast.Constant) and isinstance(a.value, str):
            strings.append(a.value)
        elif isinstance(a, ast.Name) and named:
            strings += [value for _, value in named.get(a.id, [])]
    for value in strings:
        if (match := _WHEEL_DIR.search(value)) is not None:
            return match.group(1).lower()
    if name not in _LOADERS or not strings:
        return None
    pattern = _STEM if name == "find_library" else _FILE
    match = pattern.search(strings[0])
    return match.group(1).lower() if match else None


def _file_names(tree: ast.Module, text: str) -> dict[str, list[tuple[int, str]]]:
    """Module-level names -> the (line, string)s they hold: a string, a list of strings (joined
    with `+`), a comprehension of `"libcudart.so.%s" % v` (its template), and a `for` target
    over such a list (looked for only where the text goes `in` one of those names)."""
    held: dict[str, list[tuple[int, str]]] = {}
    for statement, _ in _top_level(tree.body, False):
        if isinstance(statement, ast.Assign):
            strings = list(_strings_of(statement.value))
            for target in statement.targets:
                if isinstance(target, ast.Name) and strings:
                    held.setdefault(target.id, []).extend(strings)
    if not any(f"in {n}" in text or f"in({n}" in text or f"in ({n}" in text for n in held):
        return held  # no `for` goes over one of the lists: no need to walk the tree
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.For)
            and isinstance(node.target, ast.Name)
            and isinstance(node.iter, ast.Name)
            and node.iter.id in held
        ):
            held.setdefault(node.target.id, []).extend(held[node.iter.id])
    return held


def _strings_of(value: ast.expr) -> Iterator[tuple[int, str]]:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        yield value.lineno, value.value
    elif isinstance(value, (ast.List, ast.Tuple)):
        for element in value.elts:
            yield from _strings_of(element)
    elif isinstance(value, ast.BinOp):
        if isinstance(value.op, ast.Mod):  # "libcudart.so.%s" % v: the template
            yield from _strings_of(value.left)
        else:
            yield from _strings_of(value.left)
            yield from _strings_of(value.right)
    elif isinstance(value, ast.ListComp):
        yield from _strings_of(value.elt)


def _top_level(body: list[ast.stmt], guarded: bool) -> Iterator[tuple[ast.stmt, bool]]:
    """Each statement the module runs when imported, with whether a try or an if guards it."""
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(statement, ast.Try):
            yield from _top_level(statement.body, True)
            for handler in statement.handlers:
                yield from _top_level(handler.body, True)
            yield from _top_level(statement.orelse + statement.finalbody, guarded)
        elif isinstance(statement, (ast.If, ast.While, ast.For)):
            yield from _top_level(statement.body + statement.orelse, True)
        elif isinstance(statement, ast.With):
            yield from _top_level(statement.body, guarded)
        else:
            yield statement, guarded


def import_time_loads(tree: ast.Module, text: str) -> list[Load]:
    """The NVIDIA library loads of the module's own top-level statements, one per call."""
    rocm_side: bool | None = None  # read when the first load is found: most modules hold none
    loads: list[Load] = []
    named = _file_names(tree, text)
    for statement, guarded in _top_level(tree.body, False):
        for node in ast.walk(statement):
            if isinstance(node, ast.Call) and (stem := _library(node, named)) is not None:
                counterpart = ROCM_COUNTERPART[stem]
                if rocm_side is None:
                    rocm_side = _ROCM_FILE.search(text) is not None
                if rocm_side:
                    severity: Severity = "info"
                    why = "the module also names a ROCm library"
                elif guarded:
                    severity, why = "warn", "behind a fallback: the feature is lost on ROCm"
                elif call_name(node.func) == "find_library":
                    severity, why = "error", "at import: None on ROCm, the load after it fails"
                else:
                    severity, why = "error", "at import: OSError on ROCm"
                evidence = f"{ast.unparse(node)[:80]}  ({why}; ROCm has {counterpart})"
                loads.append(Load(node.lineno, node.col_offset + 1, severity, evidence))
                # where the file names it tries are written (a list of sonames): edited too
                for line in sorted({n for n, _ in _names_given(node, named)} - {node.lineno}):
                    where = f"the file names loaded at line {node.lineno} are written here"
                    loads.append(Load(line, 1, severity, f"{where}  ({why})"))
    return loads


def _names_given(call: ast.Call, named: dict[str, list[tuple[int, str]]]) -> list[tuple[int, str]]:
    """(line, file name) of what the names given to a call hold (arguments and keywords)."""
    given = [*call.args, *(k.value for k in call.keywords)]
    return [held for a in given if isinstance(a, ast.Name) for held in named.get(a.id, [])]
