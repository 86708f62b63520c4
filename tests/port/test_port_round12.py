"""Issue 26, twelfth round: mechanisms read from the emitters' own definitions (FlashInfer's install
page, Numba's CUDA target, conda's export format, ...), each with a case where it applies and one
where it must not, on small synthetic trees written for these tests."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

# -- FlashInfer: PyPI's flashinfer-python builds CUDA kernels only ---------------------------------

_FLASHINFER_MODEL = """import torch
from flashinfer import BatchDecodeWithPagedKVCacheWrapper


def decode(q):
    return BatchDecodeWithPagedKVCacheWrapper(q)
"""

_FLASHINFER_PROBE = """import torch

try:
    import flashinfer
except ImportError:
    flashinfer = None


def attend(q, k, v):
    if flashinfer is None:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)
    return flashinfer.single_prefill_with_kv_cache(q, k, v)
"""


def test_a_flashinfer_requirement_and_import_are_reported(tmp_path: Path) -> None:
    pyproject = (
        '[project]\nname = "server"\nversion = "1"\n'
        'dependencies = ["torch", "flashinfer-python==0.2.0.post2"]\n'
    )
    report = _scan(tmp_path, {"pyproject.toml": pyproject, "server/model.py": _FLASHINFER_MODEL})
    shown = _shown(report)
    assert ("pyproject.toml", 4, "flashinfer-pypi", "error") in shown
    assert ("server/model.py", 2, "flashinfer", "warn") in shown


def test_a_flashinfer_probe_with_a_torch_fallback_is_not_a_warning(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"server/attention.py": _FLASHINFER_PROBE})
    assert _shown(report) == set()


# -- Numba's CUDA target: NVIDIA GPUs only -----------------------------------------------------------

_NUMBA_KERNEL = """import numba
from numba import cuda


@cuda.jit
def add(a, b, out):
    i = cuda.grid(1)
    out[i] = a[i] + b[i]
"""

_NUMBA_QUERY = """from numba import cuda


def gpu_names():
    try:
        return [gpu.name for gpu in cuda.gpus]
    except Exception:
        return []
"""

_NUMBA_PROBE = """import numba.cuda

HAS_GPU = numba.cuda.is_available()


@numba.cuda.jit
def scale(x):
    x[numba.cuda.grid(1)] *= 2
"""


def test_numba_cuda_kernels_are_an_error_and_device_queries_a_warning(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"pkg/kernels.py": _NUMBA_KERNEL, "pkg/gpus.py": _NUMBA_QUERY})
    shown = _shown(report)
    assert ("pkg/kernels.py", 2, "numba-cuda", "error") in shown
    assert ("pkg/gpus.py", 1, "numba-cuda", "warn") in shown


def test_numba_cuda_probed_with_is_available_or_numba_on_the_cpu_is_no_warning(
    tmp_path: Path,
) -> None:
    cpu_only = "import numba\n\n\n@numba.njit\ndef f(x):\n    return x + 1\n"
    report = _scan(tmp_path, {"pkg/probe.py": _NUMBA_PROBE, "pkg/cpu.py": cpu_only})
    assert _shown(report) == set()
    assert [f.severity for f in report.findings if f.rule_id == "numba-cuda"] == ["info"]


# -- conda's export format used as a requirements file ---------------------------------------------

_CONDA_EXPORT = """# This file may be used to create an environment using:
# $ conda create --name <env> --file <this file>
# platform: linux-64
_libgcc_mutex=0.1=main
numpy=1.23.5=pypi_0
nvidia-cublas-cu12=12.1.3.1=pypi_0
openssl=3.0.13=h7f8727e_0
torch=2.1.0=pypi_0
"""


def test_a_conda_export_is_read_as_what_it_installs(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"bench/requirements.txt": _CONDA_EXPORT})
    shown = _shown(report)
    # pypi_0: pip installs these from PyPI again: the CUDA runtime wheel and PyPI's CUDA torch
    assert ("bench/requirements.txt", 6, "nvidia-wheels", "warn") in shown
    assert ("bench/requirements.txt", 8, "torch-pypi-pin", "warn") in shown
    assert len(shown) == 2


def test_a_conda_export_of_cpu_packages_is_no_finding(tmp_path: Path) -> None:
    cpu = "\n".join(
        line for line in _CONDA_EXPORT.splitlines() if "nvidia" not in line and "torch" not in line
    )
    report = _scan(tmp_path, {"bench/requirements.txt": cpu + "\nscipy=1.11.4=pypi_0\n"})
    assert _shown(report) == set()


# -- an opt-in back end: imports of a library the project declares only in an extra ---------------

_WARP_MODEL = "import warp as wp\n\n\ndef step(x):\n    return wp.array(x)\n"


def _warp_pyproject(where: str) -> str:
    if where == "extra":
        return (
            '[project]\nname = "agents"\nversion = "1"\ndependencies = ["torch"]\n\n'
            '[project.optional-dependencies]\nwarp = ["warp-lang>=1.15"]\n'
        )
    return '[project]\nname = "agents"\nversion = "1"\ndependencies = ["torch", "warp-lang"]\n'


def test_imports_of_a_back_end_declared_only_in_an_extra_leave_the_extra_as_the_finding(
    tmp_path: Path,
) -> None:
    files = {"pyproject.toml": _warp_pyproject("extra"), "agents/warp/model.py": _WARP_MODEL}
    report = _scan(tmp_path, files)
    assert _shown(report) == {("pyproject.toml", 7, "nvidia-only-library", "warn")}
    imports = [f for f in report.findings if f.path == "agents/warp/model.py"]
    assert [f.severity for f in imports] == ["info"]
    assert "pyproject.toml:7 is the finding" in imports[0].evidence


def test_imports_of_a_library_every_install_pulls_stay_errors(tmp_path: Path) -> None:
    files = {"pyproject.toml": _warp_pyproject("base"), "agents/warp/model.py": _WARP_MODEL}
    shown = _shown(_scan(tmp_path, files))
    assert ("pyproject.toml", 4, "nvidia-only-library", "error") in shown
    assert ("agents/warp/model.py", 1, "nvidia-only-library", "error") in shown


def test_a_flashinfer_import_no_requirement_declares_is_an_opt_in_accelerator(
    tmp_path: Path,
) -> None:
    pyproject = '[project]\nname = "server"\nversion = "1"\ndependencies = ["torch"]\n'
    report = _scan(tmp_path, {"pyproject.toml": pyproject, "server/model.py": _FLASHINFER_MODEL})
    assert _shown(report) == set()
    (finding,) = [f for f in report.findings if f.rule_id == "flashinfer"]
    assert "no requirement declares it" in finding.evidence


def test_an_extra_repeating_a_base_dependency_adds_no_second_finding(tmp_path: Path) -> None:
    pyproject = (
        '[project]\nname = "video"\nversion = "1"\n'
        'dependencies = ["torch", "flashinfer-python"]\n\n'
        '[project.optional-dependencies]\nserve = ["uvicorn", "flashinfer-python"]\n'
        'fast = ["vllm"]\n'
    )
    shown = _shown(_scan(tmp_path, {"pyproject.toml": pyproject}))
    # the base line is the finding; the extra that repeats it is info; another extra's own
    # CUDA-only package is still reported
    assert shown == {
        ("pyproject.toml", 4, "flashinfer-pypi", "error"),
        ("pyproject.toml", 8, "vllm-pypi", "warn"),
    }


# -- nvcc flags a setup.py adds only on Windows -------------------------------------------------------

_WINDOWS_FLAGS = """import os
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

nvcc_flags = []
if os.name == "nt":
    nvcc_flags.append("-allow-unsupported-compiler")

setup(
    name="raster",
    ext_modules=[
        CUDAExtension("raster._C", ["raster/k.cu"], extra_compile_args={"nvcc": nvcc_flags})
    ],
    cmdclass={"build_ext": BuildExtension},
)
"""


def test_nvcc_flags_added_only_on_windows_are_not_a_warning(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"setup.py": _WINDOWS_FLAGS})
    flags = [f for f in report.findings if f.rule_id == "nvcc-only-flags"]
    assert [f.severity for f in flags] == ["info"]
    linux = _WINDOWS_FLAGS.replace('if os.name == "nt":', "if True:")
    report = _scan(tmp_path, {"setup.py": linux})
    assert ("setup.py", 7, "nvcc-only-flags", "warn") in _shown(report)
