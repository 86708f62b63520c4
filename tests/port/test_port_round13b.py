"""Issue 26, thirteenth round (b): mechanisms read from the emitters' own definitions (NVIDIA's
CUDA library files, nvcc's flags in non-Python build scripts, install lines of the README,
capability tests through version parsing), each with a case where it applies and one where it
must not, on small synthetic trees written for these tests."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

# -- NVIDIA libraries loaded through ctypes when a module is imported ------------------------------

_SOLVER = """import ctypes
from ctypes.util import find_library

libcublas = ctypes.CDLL("libcublas.so.12")
name = find_library("cusolver")
try:
    libcufft = ctypes.cdll.LoadLibrary("libcufft.so.11")
except OSError:
    libcufft = None


def eigh(a):
    return libcublas, name, libcufft, a
"""

_WITH_ROCM = """import ctypes
import torch

if torch.version.hip:
    blas = ctypes.CDLL("libhipblas.so")
else:
    blas = ctypes.CDLL("libcublas.so.12")
"""

_IN_FUNCTION = """import ctypes


def version():
    lib = ctypes.CDLL("libcublas.so")
    return lib
"""


def test_an_nvidia_math_library_loaded_at_import_is_an_error(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"pkg/solver.py": _SOLVER})
    finding = next(f for f in report.findings if f.rule_id == "nvidia-library-load")
    assert finding.severity == "error"
    assert set(finding.lines) == {4, 5}
    assert "hipBLAS" in finding.evidence
    assert ("pkg/solver.py", 7, "nvidia-library-load", "warn") in _shown(report)


def test_a_load_behind_a_fallback_is_a_warning(tmp_path: Path) -> None:
    only_fallback = "import ctypes\ntry:\n    fft = ctypes.CDLL('libcufft.so')\nexcept OSError:\n    fft = None\n"
    report = _scan(tmp_path, {"pkg/fft.py": only_fallback})
    assert ("pkg/fft.py", 3, "nvidia-library-load", "warn") in _shown(report)


def test_a_module_that_also_loads_the_rocm_library_or_loads_in_a_function_is_not_warned(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"pkg/blas.py": _WITH_ROCM, "pkg/info.py": _IN_FUNCTION})
    assert not {s for s in _shown(report) if s[2] == "nvidia-library-load" and s[3] != "info"}
    assert not {s for s in _shown(report) if s[3] in ("warn", "error")}
