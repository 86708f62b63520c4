"""Issue 26, tenth round: mechanisms read from the emitters' own definitions (ONNX Runtime's
provider names and what get_available_providers() lists per build, ...), each with a case where
it applies and one where it must not, on small synthetic trees written for these tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

# -- ONNX Runtime provider choices with no AMD branch --------------------------------------------

_CUDA_ONLY_CHOICE = """import onnxruntime as ort
import torch


def providers():
    if torch.cuda.is_available() and "CUDAExecutionProvider" in ort.get_available_providers():
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]
"""

_WITH_AMD_BRANCH = """import onnxruntime as ort


def providers():
    if "CUDAExecutionProvider" in ort.get_available_providers():
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    elif "ROCMExecutionProvider" in ort.get_available_providers():
        return ["ROCMExecutionProvider", "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]
"""


def test_a_cuda_only_provider_choice_is_reported_at_its_test(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"app/session.py": _CUDA_ONLY_CHOICE})
    assert ("app/session.py", 6, "ort-nvidia-provider", "warn") in _shown(report)


@pytest.mark.parametrize(
    "source",
    [
        # the same choice already has the ROCm branch (rembg's sessions/base.py shape)
        _WITH_AMD_BRANCH,
        # MIGraphX named in a table of the same function counts too
        _CUDA_ONLY_CHOICE.replace(
            '    return ["CPUExecutionProvider"]',
            '    amd = ["MIGraphXExecutionProvider"]\n    return amd + ["CPUExecutionProvider"]',
        ),
        # (A default `providers=('CUDAExecutionProvider',)` was here until session eleven: by ONNX
        # Runtime's definition the AMD build runs it on the CPU, and the lists of seven projects
        # judged such literals hazards; test_port_session11.py reports it.)
        # `not in` guards a warning, it does not pick the providers
        "import onnxruntime as ort\n\ndef check():\n"
        "    if 'CUDAExecutionProvider' not in ort.get_available_providers():\n"
        "        print('CPU only')\n",
    ],
)
def test_a_choice_with_an_amd_branch_or_no_test_is_not_reported(
    tmp_path: Path, source: str
) -> None:
    report = _scan(tmp_path, {"app/session.py": source})
    assert not [f for f in report.findings if f.rule_id == "ort-nvidia-provider"]


def test_the_amd_branch_counts_only_in_its_own_function(tmp_path: Path) -> None:
    # another function's ROCm branch does not cover this one (rembg's matting.py)
    source = (
        _WITH_AMD_BRANCH
        + "\n\n"
        + _CUDA_ONLY_CHOICE.split("\n\n\n")[1].replace("def providers", "def matting_providers")
    )
    report = _scan(tmp_path, {"app/session.py": "import torch\n" + source})
    lines = {line for (_p, line, rule, _s) in _shown(report) if rule == "ort-nvidia-provider"}
    assert lines == {14}


# -- RAPIDS: CUDA builds by their own naming, and CMake lookups of its libraries ------------------


def test_rapids_cuda_wheels_and_dask_cuda_are_reported(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "requirements.txt": "numpy\ndask-cuda>=22.12\ncudf-cu12==25.2\n",
            "pyproject.toml": '[project]\nname = "x"\nversion = "1"\n'
            '[project.optional-dependencies]\ngpu = ["rmm-cu13"]\n',
        },
    )
    shown = _shown(report)
    assert ("requirements.txt", 2, "dask-cuda", "warn") in shown
    assert ("requirements.txt", 3, "rapids-cuda", "error") in shown
    # an opt-in extra: the base install works, so warn
    assert ("pyproject.toml", 5, "rapids-cuda", "warn") in shown


def test_the_cpu_relatives_of_rapids_names_are_not_reported(tmp_path: Path) -> None:
    # dask itself, a package merely named like RAPIDS' (cudf-like names without the suffix are
    # conda/source names), and a CPU tool that shares a prefix
    report = _scan(tmp_path, {"requirements.txt": "dask[distributed]\nrmm-tools\ncuml-docs\n"})
    assert not [f for f in report.findings if f.rule_id in ("rapids-cuda", "dask-cuda")]


_CMAKE_RAFT = """find_package(CUDAToolkit)
if(CUDAToolkit_FOUND)
  set(X 1)
  set(Y 2)
  set(Z 3)
  set(W 4)
  enable_language(CUDA)
  include(rapids-cmake)
  rapids_cpm_rmm()
  rapids_cpm_find(raft 26.02 GLOBAL_TARGETS raft::raft)
  add_library(k kernels.cu)
endif()
"""


def test_a_cmake_build_that_links_raft_and_its_cuda_lines_are_shown(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"CMakeLists.txt": _CMAKE_RAFT})
    shown = _shown(report)
    # both the toolkit lookup and the language switch, six lines apart
    assert {("CMakeLists.txt", 1, "cmake-cuda-only", "warn")} <= shown
    assert ("CMakeLists.txt", 7, "cmake-cuda-only", "warn") in shown
    assert ("CMakeLists.txt", 9, "rapids-cuda", "error") in shown
    assert ("CMakeLists.txt", 10, "rapids-cuda", "error") in shown


def test_a_raft_lookup_is_reported_in_a_cmake_file_that_never_says_cuda(tmp_path: Path) -> None:
    source = "project(knn LANGUAGES CXX)\nfind_package(raft REQUIRED)\n"
    report = _scan(tmp_path, {"CMakeLists.txt": source})
    assert _shown(report) == {("CMakeLists.txt", 2, "rapids-cuda", "error")}


def test_a_cmake_build_with_a_hip_path_is_left_alone(tmp_path: Path) -> None:
    source = _CMAKE_RAFT.replace("endif()", "else()\n  enable_language(HIP)\nendif()")
    report = _scan(tmp_path, {"CMakeLists.txt": source})
    assert not [f for f in report.findings if f.path == "CMakeLists.txt"]


# -- notebooks: code cells as Python, `!` lines as shell, at the raw JSON line --------------------


def _notebook(*cells: list[str]) -> str:
    document = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# run `nvidia-smi` first\n"]},
            *(
                {
                    "cell_type": "code",
                    "execution_count": None,
                    "metadata": {},
                    "outputs": [],
                    "source": cell,
                }
                for cell in cells
            ),
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document, indent=1) + "\n"


def test_a_notebook_cell_that_runs_nvidia_smi_is_reported_at_its_json_line(
    tmp_path: Path,
) -> None:
    text = _notebook(
        [
            "import subprocess\n",
            "if subprocess.run('nvidia-smi').returncode:\n",
            "    raise SystemExit\n",
        ],
        ["!nvidia-smi -L\n", "%matplotlib inline\n"],
    )
    report = _scan(tmp_path, {"demo.ipynb": text})
    raw = text.splitlines()
    python_line = next(i for i, ln in enumerate(raw, 1) if "subprocess.run('nvidia-smi')" in ln)
    bang_line = next(i for i, ln in enumerate(raw, 1) if "!nvidia-smi -L" in ln)
    lines = {line for (path, line, rule, _s) in _shown(report) if rule == "nvidia-smi"}
    assert lines == {python_line, bang_line}


def test_the_same_line_in_two_cells_is_reported_at_each_cells_own_json_line(
    tmp_path: Path,
) -> None:
    filler = [f"x{i} = {i}\n" for i in range(200)]
    text = _notebook(["!nvidia-smi\n"], filler, ["!nvidia-smi\n"])
    report = _scan(tmp_path, {"demo.ipynb": text})
    raw = text.splitlines()
    expected = {i for i, ln in enumerate(raw, 1) if '"!nvidia-smi\\n"' in ln}
    assert len(expected) == 2
    lines = {line for (path, line, rule, _s) in _shown(report) if rule == "nvidia-smi"}
    assert lines == expected


def test_markdown_and_other_language_cells_are_not_scanned(tmp_path: Path) -> None:
    # the markdown cell names nvidia-smi; a %%writefile cell is a file's text, not code run here
    # (what a cell installs is checked since session sixteen: test_port_session16)
    text = _notebook(
        ["%%writefile run.txt\n", "nvidia-smi\n"],
        ["print('no GPU query')\n", "!pip install -q rich\n"],
        ["%%bash\n", "pip install rich==13.7.1\n"],
    )
    report = _scan(tmp_path, {"demo.ipynb": text, "broken.ipynb": "{not json"})
    assert not report.findings


def test_a_bash_cell_is_scanned_as_shell(tmp_path: Path) -> None:
    text = _notebook(["%%bash\n", "docker run --gpus all img\n"])
    report = _scan(tmp_path, {"demo.ipynb": text})
    raw = text.splitlines()
    line = next(i for i, ln in enumerate(raw, 1) if "docker run --gpus" in ln)
    assert ("demo.ipynb", line, "docker-gpus", "warn") in _shown(report)


# -- ROCm target lists without the current Instinct targets ----------------------------------------


def test_an_instinct_target_list_without_gfx942_is_reported_even_in_a_rocm_folder(
    tmp_path: Path,
) -> None:
    dockerfile = 'FROM rocm/pytorch\nENV PYTORCH_ROCM_ARCH="gfx906;gfx908;gfx90a;gfx1100"\n'
    report = _scan(tmp_path, {"docker/rocm/Dockerfile": dockerfile})
    assert ("docker/rocm/Dockerfile", 2, "rocm-arch-list", "warn") in _shown(report)


@pytest.mark.parametrize(
    "line",
    [
        'export PYTORCH_ROCM_ARCH="gfx90a;gfx942"',  # has a current Instinct target
        "export PYTORCH_ROCM_ARCH=gfx950",
        "export GPU_TARGETS=gfx1100",  # a Radeon build: no Instinct target asked for
        "# PYTORCH_ROCM_ARCH=gfx90a (a comment)",
    ],
)
def test_a_current_or_radeon_target_list_is_not_reported(tmp_path: Path, line: str) -> None:
    report = _scan(tmp_path, {"build.sh": f"#!/bin/bash\n{line}\n"})
    assert not [f for f in report.findings if f.rule_id == "rocm-arch-list"]
