"""Issue 26, fifth round: the mechanisms behind test6's and test7's misses and false positives,
each with a case where it applies and one where it must not, on small synthetic trees (shapes
from Docker's ARG/FROM rules, TOML escapes, uv's explicit indexes, PEP 517 build isolation and
torch.utils.cpp_extension's CUDA_HOME, not copied from the corpus)."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan

from rocmkit.port import PortConfig, scan_project


def _rows(report) -> set[tuple[str, int, str, str]]:  # type: ignore[no-untyped-def]
    return {(f.path, line, f.rule_id, f.severity) for f in report.findings for line in f.lines}


def _shown(report) -> set[tuple[str, int, str, str]]:  # type: ignore[no-untyped-def]
    return {r for r in _rows(report) if r[3] != "info"}


# -- a requirement string with escaped quotes is found at its own line --------------------------

_EXTRAS = """[project]
name = "demo"
version = "1"

[project.optional-dependencies]
test = ["pytest"]
serve = [
    "vllm>=0.8; python_version < \\"3.11\\"",
    "vllm>=0.9; python_version >= \\"3.11\\"",
]
"""


def test_a_requirement_with_escaped_marker_quotes_is_reported_at_its_line(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"pyproject.toml": _EXTRAS})
    assert _shown(report) == {
        ("pyproject.toml", 8, "vllm-pypi", "warn"),
        ("pyproject.toml", 9, "vllm-pypi", "warn"),
    }


def test_a_requirement_that_is_not_there_is_not_placed_on_another_line(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"pyproject.toml": _EXTRAS.replace("vllm", "httpx")})
    assert _shown(report) == set()


# -- bitblas from PyPI ------------------------------------------------------------------------


def test_bitblas_in_an_extra_is_a_warning_and_a_similar_name_is_not(tmp_path: Path) -> None:
    text = '[project]\nname = "d"\nversion = "1"\n[project.optional-dependencies]\n'
    text += 'bitblas = ["bitblas==0.1.0.post1"]\ndocs = ["bitblas-docs"]\n'
    report = _scan(tmp_path, {"pyproject.toml": text})
    assert _shown(report) == {("pyproject.toml", 5, "bitblas-pypi", "warn")}


# -- a CUDA base image through an ARG default -------------------------------------------------


def test_a_cuda_image_reaching_from_through_an_arg_default_is_an_error(tmp_path: Path) -> None:
    text = "ARG BASE=nvidia/cuda:12.8.1-base-ubuntu24.04\nFROM ${BASE}\nRUN echo hi\n"
    report = _scan(tmp_path, {"Dockerfile": text})
    assert _shown(report) == {("Dockerfile", 1, "cuda-base-image", "error")}


def test_an_arg_that_from_does_not_read_or_a_rocm_default_is_not(tmp_path: Path) -> None:
    text = (
        "ARG BASE=rocm/pytorch:latest\nARG TOOLS=nvidia/cuda:12.8.1-base-ubuntu24.04\n"
        "FROM $BASE\nARG LATE=nvidia/cuda:12.8.1-base-ubuntu24.04\nFROM ubuntu:24.04\n"
    )
    report = _scan(tmp_path, {"Dockerfile": text})
    assert _shown(report) == set()


# -- a folder named for an NVIDIA-only product, as one word of its name -------------------------


def test_a_folder_named_for_tensorrt_llm_among_other_words_is_nvidia_only(tmp_path: Path) -> None:
    files = {
        "pkg/runtime/triton_trtllm/model.py": "import tensorrt_llm\n",
        "pkg/runtime/triton_trtllm/Dockerfile.server": "FROM nvcr.io/nvidia/tritonserver:24.12\n",
    }
    report = _scan(tmp_path, files)
    assert _rows(report) and _shown(report) == set()
    assert all(
        "NVIDIA-only part of the project (triton_trtllm/)" in f.note for f in report.findings
    )


def test_a_folder_named_only_for_the_vendor_keeps_its_findings(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"pkg/ops_nvidia/model.py": "import tensorrt_llm\n"})
    assert _shown(report) == {("pkg/ops_nvidia/model.py", 1, "tensorrt", "error")}


# -- uv's explicit indexes ----------------------------------------------------------------------

_UV = """[project]
name = "demo"
version = "1"
[project.optional-dependencies]
{extra} = ["torch>=2.4"]
[tool.uv.sources]
torch = [{{ index = "pytorch-cuda", extra = "{extra}" }}]
[[tool.uv.index]]
name = "pytorch-cuda"
url = "https://download.pytorch.org/whl/cu128"
explicit = {explicit}
"""


def test_an_explicit_cuda_index_used_only_by_a_cuda_extra_is_the_nvidia_variant(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"pyproject.toml": _UV.format(extra="cuda", explicit="true")})
    assert ("pyproject.toml", 10, "torch-cuda-index", "info") in _rows(report)
    assert _shown(report) == set()


def test_an_explicit_cuda_index_of_another_extra_warns_and_a_default_index_stays_an_error(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path / "a", {"pyproject.toml": _UV.format(extra="gpu2", explicit="true")})
    # At the [tool.uv.sources] entry that routes torch to the explicit index (round eight), with
    # the index's URL as the finding's other place (round thirteen).
    assert _shown(report) == {
        ("pyproject.toml", 7, "torch-cuda-index", "warn"),
        ("pyproject.toml", 10, "torch-cuda-index", "warn"),
    }
    report = _scan(tmp_path / "b", {"pyproject.toml": _UV.format(extra="cuda", explicit="false")})
    assert _shown(report) == {("pyproject.toml", 10, "torch-cuda-index", "error")}


# -- torch as a build requirement of a CUDA extension (PEP 517 isolated builds) ----------------

_BUILD = '[build-system]\nrequires = ["setuptools", "torch>=2.4"]\n'
_EXT = "from torch.utils.cpp_extension import CUDAExtension\next = [CUDAExtension('x', ['x.cu'])]\n"


def test_torch_as_a_build_requirement_of_a_cuda_extension_warns(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"pyproject.toml": _BUILD, "setup.py": _EXT})
    assert ("pyproject.toml", 2, "torch-pypi-pin", "warn") in _shown(report)
    alone = scan_project(PortConfig(path=tmp_path / "pyproject.toml"))
    assert [(f.line, f.rule_id) for f in alone.findings] == [(2, "torch-pypi-pin")]


def test_torch_as_a_build_requirement_without_a_cuda_extension_is_not(tmp_path: Path) -> None:
    setup = "from torch.utils.cpp_extension import LIB_EXT\nimport subprocess\n"
    report = _scan(tmp_path, {"pyproject.toml": _BUILD, "setup.py": setup})
    assert _shown(report) == set()


# -- a CUDAExtension added only where nvcc runs -------------------------------------------------

_NVCC_GATED = """from subprocess import DEVNULL, call
from torch.utils import cpp_extension


def have_nvcc():
    try:
        call(["nvcc"], stdout=DEVNULL)
        return True
    except FileNotFoundError:
        return False


exts = [cpp_extension.CppExtension("x.cpu", ["x.cpp"])]
if have_nvcc():
    exts.append(cpp_extension.CUDAExtension("x.gpu", ["x.cu"]))
"""


def test_a_cuda_extension_added_only_where_nvcc_runs_warns(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"setup.py": _NVCC_GATED})
    assert ("setup.py", 14, "cuda-extension", "warn") in _shown(report)


def test_the_same_gate_in_a_build_that_looks_for_rocm_is_not(tmp_path: Path) -> None:
    text = _NVCC_GATED.replace("if have_nvcc():", "if have_nvcc() or cpp_extension.ROCM_HOME:")
    report = _scan(tmp_path, {"setup.py": text})
    assert _shown(report) == set()


# -- a build module with no ROCm side, as a ROCm machine runs it --------------------------------

_TEMPLATE = """import torch
from torch.utils.cpp_extension import CUDAExtension, CUDA_HOME


def nvcc_version(home):
    version = "12.4"
    return version


flags = []
if CUDA_HOME is not None:
    version = nvcc_version(CUDA_HOME)
if version >= "11.8":
    flags += ["-DX"]
cap = torch.cuda.get_device_capability()
cap = f"{cap[0]}{cap[1]}"
flags.append(f"--generate-code=arch=compute_{cap},code=sm_{cap}")
url = f"https://example.org/x-1.0+cu{torch.version.cuda}torch2.4-cp312-linux_x86_64.whl"
ext = CUDAExtension("x", ["x.cu"], extra_compile_args={"nvcc": flags})
"""


def test_a_build_with_no_rocm_side_is_read_as_a_rocm_machine_runs_it(tmp_path: Path) -> None:
    rows = _shown(_scan(tmp_path, {"setup.py": _TEMPLATE}))
    assert ("setup.py", 13, "cuda-extension", "error") in rows  # NameError: version
    assert ("setup.py", 15, "device-capability", "warn") in rows  # the gfx number as sm_XX
    assert ("setup.py", 17, "nvcc-only-flags", "warn") in rows  # --generate-code in an f-string
    assert ("setup.py", 18, "cuda-local-version", "error") in rows  # a +cu wheel it fetches


def test_the_same_build_with_a_rocm_side_or_a_binding_everywhere_is_not(tmp_path: Path) -> None:
    rocm = _TEMPLATE.replace("import torch\n", "import torch\nIS_ROCM = torch.version.hip\n")
    rows = _shown(_scan(tmp_path / "a", {"setup.py": rocm}))
    assert not {r for r in rows if r[2] in ("cuda-extension", "cuda-local-version")}
    assert not {r for r in rows if r[2] == "device-capability"}
    bound = _TEMPLATE.replace("flags = []\n", 'flags = []\nversion = "0"\n')
    rows = _shown(_scan(tmp_path / "b", {"setup.py": bound}))
    assert not {r for r in rows if r[2] == "cuda-extension"}


# -- CUTLASS in a CUDA source -------------------------------------------------------------------

_CUTLASS = '#include <torch/extension.h>\n#include "cutlass/gemm/device/gemm_grouped.h"\n'


def test_a_cutlass_include_in_a_source_is_an_error_and_in_a_header_or_switch_not(
    tmp_path: Path,
) -> None:
    files = {
        "csrc/gemm.cu": _CUTLASS,
        "csrc/common.cuh": "#pragma once\n" + _CUTLASS,
        "csrc/switched.cu": "#ifndef USE_ROCM\n" + _CUTLASS + "#endif\n",
    }
    report = _scan(tmp_path, files)
    assert _shown(report) == {("csrc/gemm.cu", 2, "cuda-extension", "error")}
    assert ("csrc/switched.cu", 3, "cuda-extension", "info") in _rows(report)


# -- faster-whisper: its releases' own ctranslate2 requirement decides -------------------------


def test_faster_whisper_below_one_is_an_error_and_its_import_follows_the_pin(
    tmp_path: Path,
) -> None:
    files = {
        "requirements.txt": "faster-whisper==0.10.1\n",
        "asr.py": "from faster_whisper import WhisperModel\n",
    }
    rows = _shown(_scan(tmp_path, files))
    assert rows == {
        ("requirements.txt", 1, "faster-whisper-ctranslate2", "error"),
        ("asr.py", 1, "faster-whisper-ctranslate2", "error"),
    }


def test_faster_whisper_from_one_warns_once_at_the_requirement_not_the_import(
    tmp_path: Path,
) -> None:
    files = {
        "requirements.txt": "faster-whisper>=1.0\n",
        "asr.py": "from faster_whisper import WhisperModel\n",
    }
    report = _scan(tmp_path, files)
    assert _shown(report) == {("requirements.txt", 1, "faster-whisper-ctranslate2", "warn")}
    assert ("asr.py", 1, "faster-whisper-ctranslate2", "info") in _rows(report)


# -- CUDA_VISIBLE_DEVICES read as "an NVIDIA host" ---------------------------------------------

_ACCEL = """import os


def container_args(env):
    args = []
    for key, value in env.items():
        if key == "CUDA_VISIBLE_DEVICES":
            args += ["--gpus", "all"]
    return args
"""


def test_cuda_visible_devices_taken_as_an_nvidia_host_warns(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"engine.py": _ACCEL})
    assert _shown(report) == {("engine.py", 7, "cuda-visible-devices", "warn")}


def test_cuda_visible_devices_passed_on_or_with_vendor_neutral_options_stays_info(
    tmp_path: Path,
) -> None:
    neutral = _ACCEL.replace('["--gpus", "all"]', '["-e", f"{key}={value}"]')
    report = _scan(tmp_path, {"engine.py": neutral})
    assert _shown(report) == set()
    assert ("engine.py", 7, "cuda-visible-devices", "info") in _rows(report)


def test_a_read_under_another_test_of_cuda_home_is_guarded(tmp_path: Path) -> None:
    guarded = _TEMPLATE.replace('if version >= "11.8":', 'if CUDA_HOME and version >= "11.8":')
    rows = _shown(_scan(tmp_path, {"setup.py": guarded}))
    assert not {r for r in rows if r[2] == "cuda-extension"}
