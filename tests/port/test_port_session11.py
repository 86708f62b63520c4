"""Issue 26, session eleven: ONNX Runtime provider lists that name only NVIDIA's providers (ONNX
Runtime tries them in order and runs on the CPU when the build lacks them), and NVIDIA's GPU
libraries with no ROCm back end (DALI, CV-CUDA, PyNvVideoCodec; Warp's ALCHEMI Toolkit-Ops,
cuFINUFFT). Each case with one where the finding must not appear, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan

from rocmkit.port.findings import PortFinding


def _by_line(root: Path, files: dict[str, str], rule: str) -> dict[int, PortFinding]:
    report = _scan(root, files)
    return {line: f for f in report.findings if f.rule_id == rule for line in f.lines}


_ORT = "ort-nvidia-provider"

# A benchmark helper whose default asks for CUDA's provider only (ppq's shape): on an AMD machine
# with onnxruntime-migraphx the session warns and runs on the CPU, and the figure is the CPU's.
_DEFAULT_LIST = """import onnxruntime as ort


def benchmark(path, steps=100, providers=['CUDAExecutionProvider']):
    return ort.InferenceSession(path, providers=providers)


def gpu_session(path, index):
    return ort.InferenceSession(path, providers=[("CUDAExecutionProvider", {"device_id": index})])
"""


def test_a_literal_nvidia_only_provider_list_is_a_warning(tmp_path: Path) -> None:
    found = _by_line(tmp_path, {"tools/bench.py": _DEFAULT_LIST}, _ORT)
    assert set(found) == {4, 9}
    assert {f.severity for f in found.values()} == {"warn"}
    assert "no AMD provider in the module" in found[4].evidence


def test_a_module_that_names_an_amd_provider_is_left_alone(tmp_path: Path) -> None:
    amd = (
        _DEFAULT_LIST
        + """

AMD = ["MIGraphXExecutionProvider", "CPUExecutionProvider"]
"""
    )
    assert _by_line(tmp_path, {"tools/bench.py": amd}, _ORT) == {}


def test_names_bound_to_providers_are_read_and_tests_on_lists_are_not_choices(
    tmp_path: Path,
) -> None:
    # wyoming-faster-whisper's shape: module constants, a (name, options) pair; a membership test
    # and a list handed by position to a checker choose nothing.
    module = """_CUDA_PROVIDER = "CUDAExecutionProvider"
_CPU_PROVIDER = "CPUExecutionProvider"


def providers(index):
    return [(_CUDA_PROVIDER, {"device_id": index}), _CPU_PROVIDER]


def needs_device_id(provider):
    return provider in ("CUDAExecutionProvider", "TensorrtExecutionProvider")


def test_gpu_list():
    assert check("cuda", ["CUDAExecutionProvider", "CPUExecutionProvider"])
"""
    found = _by_line(tmp_path, {"asr/device.py": module}, _ORT)
    assert set(found) == {6}


_MEDIA = "nvidia-media-library"


def test_nvidia_media_libraries_are_errors_where_the_install_pulls_them(tmp_path: Path) -> None:
    files = {
        "requirements.txt": "torch\nnvidia-dali-cuda120\ncvcuda-cu12\n",
        "data/pipe.py": "from nvidia.dali import fn\nimport cvcuda\n",
    }
    report = _scan(tmp_path, files)
    places = {
        (f.path, line, f.severity)
        for f in report.findings
        if f.rule_id == _MEDIA
        for line in f.lines
    }
    assert ("requirements.txt", 2, "error") in places
    assert ("requirements.txt", 3, "error") in places
    assert ("data/pipe.py", 1, "error") in places and ("data/pipe.py", 2, "error") in places
    # nvidia-dali-* is the media rule's, not the generic nvidia-* wheels rule's.
    assert not any(f.rule_id == "nvidia-wheels" for f in report.findings)


def test_a_media_library_only_in_an_opt_in_extra_is_that_extras_finding(tmp_path: Path) -> None:
    files = {
        "pyproject.toml": """[project]
name = "demo"
version = "0.1"
dependencies = ["torch"]

[project.optional-dependencies]
video = ["PyNvVideoCodec>=2.0"]
""",
        "demo/video.py": "def decode(path):\n    import PyNvVideoCodec as nvc\n    return nvc.SimpleDecoder(path)\n",
    }
    report = _scan(tmp_path, files)
    places = {(f.path, f.severity) for f in report.findings if f.rule_id == _MEDIA}
    assert ("pyproject.toml", "warn") in places
    assert ("demo/video.py", "info") in places


_LIBRARY = "nvidia-only-library"


def test_warp_kernels_of_alchemi_fail_on_amd_even_behind_an_import_fallback(
    tmp_path: Path,
) -> None:
    # nvalchemi-toolkit-ops installs and imports on ROCm (Warp's CPU back end): the fallback to
    # the torch neighbour list never runs, and the Warp kernels get AMD GPU tensors.
    module = """try:
    from nvalchemiops.torch.neighbors import neighbor_list
    HAVE_ALCHEMI = True
except ImportError:
    HAVE_ALCHEMI = False
"""
    files = {"requirements.txt": "torch\nnvalchemi-toolkit-ops\n", "md/graph.py": module}
    report = _scan(tmp_path, files)
    found = [f for f in report.findings if f.rule_id == _LIBRARY and f.path == "md/graph.py"]
    assert [(f.line, f.severity) for f in found] == [(2, "error")]
    assert "fallback" in found[0].evidence


def test_cufinufft_behind_an_import_fallback_is_an_optional_back_end(tmp_path: Path) -> None:
    module = """try:
    import cufinufft
    HAVE_GPU = True
except ImportError:
    HAVE_GPU = False
"""
    files = {
        "pyproject.toml": """[project]
name = "nufft"
version = "0.1"
dependencies = ["torch", "finufft"]

[project.optional-dependencies]
cuda = ["cufinufft>=2.2"]
""",
        "nufft/ops.py": module,
    }
    report = _scan(tmp_path, files)
    places = {(f.path, f.severity) for f in report.findings if f.rule_id == _LIBRARY}
    assert ("nufft/ops.py", "info") in places
    assert not any(s != "info" for p, s in places if p == "nufft/ops.py")


def test_a_submodule_imported_from_its_parent_is_found(tmp_path: Path) -> None:
    # cuda-python's own idiom names cuda.cudart without spelling it; the file has nothing else
    # for a scan to notice, so the finding also shows that the pre-filter reads this form.
    module = """import torch


def register(buffer):
    from cuda import cudart

    return cudart.cudaGraphicsGLRegisterBuffer(buffer, 0)
"""
    report = _scan(tmp_path, {"render/interop.py": module})
    found = [(f.line, f.rule_id) for f in report.findings if f.path == "render/interop.py"]
    assert found == [(5, "cuda-python")]
    # `from cuda import something_else` is not cuda-python's runtime module
    other = _scan(tmp_path / "other", {"m.py": "from cuda import helpers\n"})
    assert not [f for f in other.findings if f.rule_id == "cuda-python"]


def test_numba_cuda_device_arrays_and_streams_are_errors_a_probe_is_not(tmp_path: Path) -> None:
    # torchlpc's shape: the kernels are compiled from strings, the module hands torch tensors to
    # them through cuda.as_cuda_array on a cuda.stream(): all of it needs NVIDIA's driver.
    runner = """from numba import cuda


def run(kernel, y, a):
    stream = cuda.stream()
    kernel[1, 32, stream](cuda.as_cuda_array(y), cuda.as_cuda_array(a))
"""
    probed = runner.replace("    stream = cuda.stream()\n", "    assert cuda.is_available()\n")
    found = _by_line(tmp_path / "a", {"lpc/core.py": runner}, "numba-cuda")
    assert [(line, f.severity) for line, f in found.items()] == [(1, "error")]
    assert "device arrays or streams" in found[1].evidence
    found = _by_line(tmp_path / "b", {"lpc/core.py": probed}, "numba-cuda")
    assert [f.severity for f in found.values()] == ["info"]


def test_an_optional_poetry_dependency_keeps_its_version_in_its_extra(tmp_path: Path) -> None:
    # embedchain's shape: an exact torch in an opt-in extra replaces a ROCm torch with PyPI's CUDA
    # wheel for whoever installs the extra; a range that admits the ROCm torch is no finding.
    pyproject = """[tool.poetry]
name = "demo"
version = "0.1"

[tool.poetry.dependencies]
python = "^3.9"
torch = { version = "2.3.0", optional = true }
numpy = { version = "^1.26", optional = true }

[tool.poetry.extras]
opensource = ["torch", "numpy"]
"""
    report = _scan(tmp_path / "pinned", {"pyproject.toml": pyproject})
    assert [(f.line, f.rule_id, f.severity) for f in report.findings] == [
        (7, "torch-pypi-pin", "warn")
    ]
    ranged = pyproject.replace('version = "2.3.0"', 'version = ">=2.3"')
    report = _scan(tmp_path / "ranged", {"pyproject.toml": ranged})
    assert not [f for f in report.findings if f.severity != "info"]


_V1 = "flash-attn-v1-api"


def test_flash_attention_1x_names_are_errors_unless_a_2x_fallback_follows(tmp_path: Path) -> None:
    module = """from flash_attn.flash_attn_interface import flash_attn_unpadded_func

try:
    from flash_attn.flash_attn_interface import flash_attn_unpadded_qkvpacked_func
except ImportError:
    from flash_attn.flash_attn_interface import (
        flash_attn_varlen_qkvpacked_func as flash_attn_unpadded_qkvpacked_func,
    )
from flash_attn.flash_attn_interface import flash_attn_varlen_func
"""
    report = _scan(tmp_path, {"model/attn.py": module})
    places = {(f.line, f.severity) for f in report.findings if f.rule_id == _V1}
    assert places == {(1, "error"), (4, "info")}
    # the 2.x name is flash-attn's own rule (info: ROCm builds exist), not the 1.x one
    assert any(f.rule_id == "flash-attn" and 9 in f.lines for f in report.findings)


def test_a_fallback_within_the_same_package_is_still_not_optional(tmp_path: Path) -> None:
    # `except ImportError: from cuda.bindings import runtime` needs cuda-python as much as the
    # `from cuda import cudart` it replaces: the import keeps its severity.
    module = """try:
    from cuda import cudart
except ImportError:
    from cuda.bindings import runtime as cudart
"""
    report = _scan(tmp_path, {"interop.py": module})
    places = {(f.line, f.severity) for f in report.findings if f.rule_id == "cuda-python"}
    assert (2, "error") in places


_HEADER = "cuda-header-no-hip"


def test_a_cuda_header_hip_lacks_is_an_error_unless_the_file_switches_on_hip(
    tmp_path: Path,
) -> None:
    kernel = """#include <cuda_runtime.h>
#include <mma.h>
#include <cuda/std/limits>
#include <cooperative_groups.h>
"""
    found = _by_line(tmp_path / "a", {"csrc/k.cu": kernel}, _HEADER)
    # cuda_runtime.h and cooperative_groups.h are what PyTorch's hipify rewrites to HIP's
    assert {line: f.severity for line, f in found.items()} == {2: "error", 3: "error"}
    assert "no HIP" in found[2].evidence
    switched = """#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#else
#include <mma.h>
#endif
#include <cuda_fp8.h>
"""
    found = _by_line(tmp_path / "b", {"csrc/k.cu": switched}, _HEADER)
    # inside the switch: left to it; outside it, in a file with a HIP path: the CUDA side's
    assert {line: f.severity for line, f in found.items()} == {6: "info"}


def test_the_torch_hipify_include_list_matches_the_installed_torch() -> None:
    import pytest

    from rocmkit.hipify.fold import load_torch_mapping_module
    from rocmkit.port.cpp_scan import TORCH_HIPIFY_INCLUDES

    # hipify's own loader runs torch's mapping module alone (no torch import)
    mappings = load_torch_mapping_module()
    if mappings is None:
        pytest.skip("torch is not installed")
    keys = {
        k.removeprefix("include <").removeprefix('include "') for k in mappings.CUDA_INCLUDE_MAP
    }
    keys = {k.strip("<>") for k in keys}
    listed = set(TORCH_HIPIFY_INCLUDES)
    # every key torch rewrites is covered by one of the listed names (cub/ stands for its headers)
    assert all(k in listed or any(name in k for name in listed) for k in keys), sorted(
        k for k in keys if k not in listed and not any(name in k for name in listed)
    )


_KERNEL = """__global__ void add(float* x) {
  int lane = threadIdx.x % 32;
  x[lane] += __shfl_down_sync(0xffffffff, x[lane], 16);
}
"""
_SETUP = "from setuptools import setup\nsetup(name='kernels', packages=['kernels'])\n"


def test_a_run_time_build_reads_only_the_sources_its_modules_name(tmp_path: Path) -> None:
    # torchpq's shape: CuPy compiles the .cu files its modules open by name; a source no module
    # names (an old variant left in the sdist) is never compiled, and its hazards are info.
    loader = """import cupy as cp


def module(version):
    with open(f"kernels/cuda/topk_v{version}.cu") as f:
        return cp.RawModule(code=f.read())


def select():
    return cp.RawModule(code=open("kernels/cuda/select.cu").read())
"""
    files = {
        "setup.py": _SETUP,
        "kernels/load.py": loader,
        "kernels/cuda/topk_v2.cu": _KERNEL,
        "kernels/cuda/select.cu": _KERNEL,
        "kernels/cuda/select_old.cu": _KERNEL,
    }
    report = _scan(tmp_path, files)
    by_file: dict[str, set[str]] = {}
    for f in report.findings:
        if f.path.endswith(".cu"):
            by_file.setdefault(f.path, set()).add(f.severity)
    assert by_file["kernels/cuda/select_old.cu"] == {"info"}
    assert by_file["kernels/cuda/select.cu"] != {"info"}
    assert by_file["kernels/cuda/topk_v2.cu"] != {"info"}  # f"topk_v{version}.cu" may read it
    old = next(f for f in report.findings if f.path == "kernels/cuda/select_old.cu")
    assert "none names this one" in old.note


def test_a_module_that_globs_its_sources_reads_them_all(tmp_path: Path) -> None:
    loader = """import glob
import cupy as cp

MODULES = [cp.RawModule(code=open(p).read()) for p in glob.glob("kernels/cuda/*.cu")]
"""
    files = {"setup.py": _SETUP, "kernels/load.py": loader, "kernels/cuda/any_name.cu": _KERNEL}
    report = _scan(tmp_path, files)
    assert {f.severity for f in report.findings if f.path.endswith(".cu")} - {"info"}
