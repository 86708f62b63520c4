"""Issue 26, fourteenth round (b): setuptools' requires.txt where the sdist ships no other
requirement source, sparse-convolution extensions with no ROCm build (and availability flags named
after a module), CUDA arch guards in a HIP copy of kernels, and the old FindHIP module path. Each
mechanism with a case where it applies and one where it must not, on small synthetic trees written
for these tests."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

from rocmkit.port import PortReport

# -- setuptools' requires.txt -----------------------------------------------------------------------

_REQUIRES = """numpy==1.26.2
torch==2.1.1
torchaudio==2.1.1

[train]
deepspeed==0.12.4

[gpu]
vllm==0.4.0
"""

_SETUP_READS_MISSING_FILE = """from setuptools import setup

with open("requirements.txt") as f:
    requirements = f.read().splitlines()

setup(name="speechkit", install_requires=requirements)
"""


def test_requires_txt_is_read_when_nothing_else_names_the_package(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "setup.py": _SETUP_READS_MISSING_FILE,
            "speechkit.egg-info/requires.txt": _REQUIRES,
            "speechkit/__init__.py": "",
        },
    )
    shown = _shown(report)
    assert ("speechkit.egg-info/requires.txt", 2, "torch-pypi-pin", "warn") in shown
    # an extra is opt-in: vLLM from PyPI there is at most a warning
    assert ("speechkit.egg-info/requires.txt", 9, "vllm-pypi", "warn") in shown


def test_requires_txt_does_not_double_a_requirements_file(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "setup.py": _SETUP_READS_MISSING_FILE,
            "requirements.txt": "numpy==1.26.2\ntorch==2.1.1\ntorchaudio==2.1.1\n",
            "speechkit.egg-info/requires.txt": _REQUIRES,
        },
    )
    paths = {path for path, *_ in _shown(report)}
    assert "requirements.txt" in paths
    rows = {(p, line) for p, line, *_ in _shown(report)}
    assert ("speechkit.egg-info/requires.txt", 2) not in rows  # torch: requirements.txt's finding
    assert ("speechkit.egg-info/requires.txt", 9) in rows  # vllm: named nowhere else


def test_an_import_of_torch_in_setup_py_is_not_a_declaration(tmp_path: Path) -> None:
    setup = "import torch\nfrom setuptools import setup\n\nsetup(name='speechkit')\n"
    report = _scan(tmp_path, {"setup.py": setup, "speechkit.egg-info/requires.txt": _REQUIRES})
    assert ("speechkit.egg-info/requires.txt", 2, "torch-pypi-pin", "warn") in _shown(report)


# -- sparse-convolution extensions with no ROCm build ------------------------------------------------

_SPARSE_MODULE_LEVEL = """import torch
import torchsparse
from torchsparse.nn import Conv3d


def build(channels):
    return Conv3d(channels, channels, 3)
"""

_SPARSE_BEHIND_FLAG = """from mylib.layers import IS_TORCHSPARSE_AVAILABLE

if IS_TORCHSPARSE_AVAILABLE:
    import torchsparse
else:
    torchsparse = None
"""


def test_a_module_level_import_of_a_declared_torchsparse_is_an_error(tmp_path: Path) -> None:
    files = {"mylib/backbone.py": _SPARSE_MODULE_LEVEL, "requirements.txt": "torchsparse\n"}
    report = _scan(tmp_path, files)
    assert ("mylib/backbone.py", 2, "sparse-conv-cuda-only", "error") in _shown(report)


def test_an_import_of_an_undeclared_sparse_conv_backend_is_info(tmp_path: Path) -> None:
    code = (
        "def rotate(x):\n    from MinkowskiEngine import SparseTensor\n    return SparseTensor(x)\n"
    )
    report = _scan(tmp_path, {"tests/test_sparse.py": code, "mylib/b.py": _SPARSE_MODULE_LEVEL})
    assert _shown(report) == set()


def test_an_import_behind_an_availability_flag_named_after_it_is_info(tmp_path: Path) -> None:
    files = {"mylib/backbone.py": _SPARSE_BEHIND_FLAG, "requirements.txt": "torchsparse\n"}
    report = _scan(tmp_path, files)
    assert {p for p, *_ in _shown(report)} == {"requirements.txt"}  # the declaration only
    assert any(f.path == "mylib/backbone.py" for f in report.findings)  # the import at info


def test_a_flag_named_after_another_module_does_not_make_the_import_optional(
    tmp_path: Path,
) -> None:
    code = _SPARSE_BEHIND_FLAG.replace("IS_TORCHSPARSE_AVAILABLE", "IS_SPCONV_AVAILABLE")
    report = _scan(tmp_path, {"mylib/backbone.py": code, "requirements.txt": "torchsparse\n"})
    assert ("mylib/backbone.py", 4, "sparse-conv-cuda-only", "error") in _shown(report)


def test_a_sparse_conv_requirement_is_an_error_and_an_extra_a_warning(tmp_path: Path) -> None:
    pyproject = (
        '[project]\nname = "pointkit"\ndependencies = ["MinkowskiEngine>=0.5"]\n'
        '[project.optional-dependencies]\nsparse = ["torchsparse>=2.1"]\n'
    )
    shown = _shown(_scan(tmp_path, {"pyproject.toml": pyproject}))
    assert ("pyproject.toml", 3, "sparse-conv-cuda-only", "error") in shown
    assert ("pyproject.toml", 5, "sparse-conv-cuda-only", "warn") in shown


# -- __CUDA_ARCH__ in a HIP copy of the kernels -------------------------------------------------------

_HIP_COPY = """#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>

__global__ void scale_half2(const __half* in, __half* out, int n, __half s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
#if __CUDA_ARCH__ > 530
  const __half2* in2 = reinterpret_cast<const __half2*>(in);
  reinterpret_cast<__half2*>(out)[i] = __hmul2(in2[i], __halves2half2(s, s));
#else
  out[i] = __float2half(__half2float(in[i]) * __half2float(s));
#endif
}
"""


def test_an_arch_guard_in_a_hip_copy_loses_a_path_hip_has(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"ops/rocm/hip_kernels.cu": _HIP_COPY})
    assert ("ops/rocm/hip_kernels.cu", 6, "cuda-arch-guard", "warn") in _shown(report)


def test_the_same_guard_in_a_cuda_source_keeps_its_fallback_note(tmp_path: Path) -> None:
    cuda = _HIP_COPY.replace(
        "#include <hip/hip_runtime.h>\n#include <hip/hip_fp16.h>", "#include <cuda_fp16.h>"
    )
    report = _scan(tmp_path, {"ops/cuda/cuda_kernels.cu": cuda})
    assert _shown(report) == set()


def test_a_guard_for_a_feature_amd_lacks_stays_a_note_in_a_hip_copy(tmp_path: Path) -> None:
    # sm_80's tensor-core path: AMD has none of it, so the fallback is the right path there
    code = _HIP_COPY.replace("__CUDA_ARCH__ > 530", "__CUDA_ARCH__ >= 800")
    report = _scan(tmp_path, {"ops/rocm/hip_kernels.cu": code})
    assert ("ops/rocm/hip_kernels.cu", 6, "cuda-arch-guard", "warn") not in _shown(report)


# -- the FindHIP module from the pre-ROCm-6 folder ----------------------------------------------------

_OLD_FINDHIP = """set(CMAKE_MODULE_PATH "${HIP_PATH}/cmake" ${CMAKE_MODULE_PATH})
find_package(HIP QUIET REQUIRED)
list(APPEND HIP_HIPCC_FLAGS -fPIC)
hip_add_library(my_kernels STATIC hip_kernels.cu)
"""

_NEW_FINDHIP = """list(APPEND CMAKE_MODULE_PATH "${ROCM_PATH}/lib/cmake/hip")
find_package(HIP REQUIRED)
hip_add_library(my_kernels STATIC hip_kernels.cu)
"""


def test_hip_add_library_from_the_old_module_folder_is_an_error(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"ops/rocm/CMakeLists.txt": _OLD_FINDHIP})
    assert ("ops/rocm/CMakeLists.txt", 4, "cmake-old-findhip", "error") in _shown(report)


def test_hip_add_library_from_rocm_6s_module_folder_is_fine(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"ops/rocm/CMakeLists.txt": _NEW_FINDHIP})
    assert not any(f.rule_id == "cmake-old-findhip" for f in report.findings)


# -- `pip install vllm` told in a missing-module message ---------------------------------------------

_SERVER = """import sys


def main():
    try:
        import fastapi
    except ImportError:
        print("Install with: pip install vllm fastapi uvicorn")
        sys.exit(1)
"""

_RAISED = """try:
    from fastapi import FastAPI
except ImportError:
    raise ImportError(
        "the server needs extras. Install with: pip install vllm fastapi uvicorn"
    )
"""


def test_an_install_hint_for_vllm_in_an_import_handler_is_a_warning(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"app/server.py": _SERVER, "app/_app.py": _RAISED})
    shown = _shown(report)
    assert ("app/server.py", 8, "vllm-pypi", "warn") in shown
    assert ("app/_app.py", 5, "vllm-pypi", "warn") in shown


def test_an_install_hint_outside_a_handler_or_for_a_portable_package_is_quiet(
    tmp_path: Path,
) -> None:
    usage = 'def usage():\n    print("for serving: pip install vllm")\n'
    portable = _SERVER.replace("pip install vllm fastapi", "pip install fastapi")
    report = _scan(tmp_path, {"app/usage.py": usage, "app/server.py": portable})
    assert _shown(report) == set()


def test_the_import_s_own_error_message_and_a_fallback_hint_are_left_to_the_import(
    tmp_path: Path,
) -> None:
    own = """def serve():
    try:
        from vllm import LLM
    except ImportError:
        raise ImportError("vLLM is required. Install with: pip install vllm")
"""
    fallback = """try:
    import fastapi
except ImportError:
    import warnings

    warnings.warn("faster serving: pip install vllm")
"""
    report = _scan(tmp_path, {"app/serve.py": own, "app/fallback.py": fallback})
    assert not any(f.rule_id == "vllm-pypi" and f.severity != "info" for f in report.findings)


def test_requires_txt_reports_base_requirements_that_pkg_info_repeats(
    tmp_path: Path,
) -> None:
    # round fifteen (b): requires.txt comes before PKG-INFO (each requirement is reported once)
    pkg_info = "Metadata-Version: 2.1\nName: speechkit\nRequires-Dist: torch==2.1.1\n\nREADME\n"
    report = _scan(
        tmp_path,
        {
            "PKG-INFO": pkg_info,
            "setup.py": _SETUP_READS_MISSING_FILE,
            "speechkit.egg-info/requires.txt": _REQUIRES,
        },
    )
    rows = {(p, line) for p, line, *_ in _shown(report)}
    assert ("speechkit.egg-info/requires.txt", 2) in rows
    assert ("PKG-INFO", 3) not in rows  # the same torch pin, reported once
    assert ("speechkit.egg-info/requires.txt", 9) in rows  # the [gpu] extra: requires.txt's


def test_a_fifo_named_like_project_metadata_is_not_waited_on(tmp_path: Path) -> None:
    # port refuses FIFOs unread (a scan of a tree must finish); the project-wide reads (PKG-INFO,
    # a suffixless file's interpreter line, a YAML manifest) go through the same non-blocking open
    os.mkfifo(tmp_path / "PKG-INFO")
    os.mkfifo(tmp_path / "launch")
    os.mkfifo(tmp_path / "job.yaml")
    done: list[PortReport] = []
    files = {
        "setup.py": _SETUP_READS_MISSING_FILE,
        "speechkit.egg-info/requires.txt": _REQUIRES,
        "kernels/k.cu": "__global__ void k() {}\n",
    }
    worker = threading.Thread(target=lambda: done.append(_scan(tmp_path, files)), daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert done, "the scan waited on a FIFO"
    report = done[0]
    assert ("speechkit.egg-info/requires.txt", 2, "torch-pypi-pin", "warn") in _shown(report)
