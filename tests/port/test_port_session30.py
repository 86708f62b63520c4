"""Issue 26, session thirty: each change, with a case where the finding must appear and one where
it must not, on small synthetic trees."""

from __future__ import annotations

import sys
from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import severities as _found

REPO = Path(__file__).resolve().parents[2]

# -- NVIDIA's Multi-Process Service ----------------------------------------------------------------

_MPS = """import subprocess


def start(pipe):
    subprocess.run(["nvidia-cuda-mps-control", "-d"], env={"CUDA_MPS_PIPE_DIRECTORY": pipe})


def gpu_uuid(index):
    return subprocess.check_output(["nvidia-smi", f"--id={index}", "--query-gpu=uuid"])
"""


def test_the_mps_daemon_is_found_and_a_file_named_mps_for_it_is_not_apples(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"sched/mps.py": _MPS})
    # "mps" in the file's name is NVIDIA's Multi-Process Service here (its daemon is run), so
    # the file is not set aside as Apple's Metal backend: both NVIDIA commands are warned
    assert _found(report, "nvidia-mps") == {("sched/mps.py", 5): "warn"}
    assert _found(report, "nvidia-smi") == {("sched/mps.py", 9): "warn"}


def test_a_file_named_mps_for_apples_backend_still_sets_its_findings_aside(
    tmp_path: Path,
) -> None:
    apple = 'import subprocess\n\nsubprocess.run(["nvidia-smi", "-L"])\n'
    report = _scan(tmp_path, {"backends/mps.py": apple})
    assert _found(report, "nvidia-smi") == {("backends/mps.py", 3): "info"}


# -- a README whose only install is the CUDA build -------------------------------------------------


def test_a_readme_install_beside_a_rocm_one_stays_info_and_alone_is_warned(
    tmp_path: Path,
) -> None:
    cuda = "```bash\npip install torch --index-url https://download.pytorch.org/whl/cu124\n```\n"
    rocm = "On AMD GPUs use https://download.pytorch.org/whl/rocm6.4 instead.\n"
    alone = _scan(tmp_path / "a", {"README.md": "# Tool\n\n" + cuda})
    both = _scan(tmp_path / "b", {"README.md": "# Tool\n\n" + cuda + rocm})
    assert _found(alone, "torch-cuda-index") == {("README.md", 4): "warn"}
    assert _found(both, "torch-cuda-index") == {("README.md", 4): "info"}


# -- docker argv whose program is found by a call; NAME=VALUE settings ------------------------------

_DOCKER = """import shutil
import subprocess


def _docker():
    return shutil.which("docker") or "docker"


ENV = ("NVIDIA_VISIBLE_DEVICES=all", "HF_HOME=/data", "NVIDIA_DRIVER_CAPABILITIES=compute,utility")


def serve(name):
    cmd = [_docker(), "run", "--rm", "--name", name, "--gpus", "all", "vllm/vllm-openai"]
    subprocess.run(cmd)


def build():
    subprocess.run([shutil.which("docker"), "run", "--gpus=all", "img"])
"""


def test_docker_run_argv_led_by_a_call_that_finds_docker_and_env_settings_are_found(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"serve.py": _DOCKER})
    assert _found(report, "docker-gpus") == {("serve.py", 13): "warn", ("serve.py", 18): "warn"}
    assert _found(report, "nvidia-container-env") == {("serve.py", 9): "warn"}


def test_a_call_that_is_not_docker_and_prose_settings_are_not_found(tmp_path: Path) -> None:
    text = (
        "import subprocess\n\n\ndef run(tool):\n"
        '    subprocess.run([tool(), "run", "--gpus", "all"])\n'
        '    print("set NVIDIA_VISIBLE_DEVICES=all on the host to see GPUs")\n'
    )
    report = _scan(tmp_path, {"launch.py": text})
    assert _found(report, "docker-gpus", "nvidia-container-env") == {}


# -- NVIDIA's system packages -----------------------------------------------------------------------

_DOCKERFILE = """FROM ubuntu:22.04
RUN apt-get update \\
    && apt-get install -y --no-install-recommends \\
        git curl \\
        libnccl2=2.21.5-1+cuda12.4 libnccl-dev \\
    && rm -rf /var/lib/apt/lists/*
RUN apt-get install -y python3-pip  # cuda comes from the base image
RUN yum install -y cuda-nvcc-12-2
"""


def test_nvidia_repository_packages_are_found_at_the_package_line(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"Dockerfile": _DOCKERFILE})
    # the continued install names libnccl2 on line 5; a comment's "cuda" is no package
    assert _found(report, "nvidia-system-package") == {
        ("Dockerfile", 5): "error",
        ("Dockerfile", 8): "error",
    }


def test_printed_hints_rocm_packages_and_scripts_named_for_cuda_are_not_warned(
    tmp_path: Path,
) -> None:
    hints = (
        "#!/bin/bash\n"
        'echo "install the driver: sudo apt install nvidia-driver-550"\n'
        "sudo apt-get install -y rocm-hip-sdk rccl miopen-hip\n"
    )
    installer = "#!/bin/bash\nsudo apt-get install -y cuda-toolkit-12-4 libcudnn9-cuda-12\n"
    report = _scan(tmp_path, {"setup.sh": hints, "ci/install_cuda_12.sh": installer})
    # a script for NVIDIA's stack by its name: whoever runs it is the place to change
    assert _found(report, "nvidia-system-package") == {("ci/install_cuda_12.sh", 2): "info"}


# -- the scorer: a CUDA-only library loaded is also what the kind table's extension row names ------


def test_a_libcuda_load_may_be_filed_as_an_extension_without_hip() -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    import port_score

    for rule in ("cuda-driver-library", "nvrtc-python", "nvidia-library-load", "cutlass-dsl"):
        assert {"cuda-extension-no-hip", "cuda-only-import"} <= port_score.RULE_KINDS[rule]
    assert "docker-gpus" in port_score.RULE_KINDS["nvidia-system-package"]


# -- CMake's CUDA architecture lists: places of the CUDA-only build's finding -----------------------

_CMAKE = """cmake_minimum_required(VERSION 3.18)
project(knn LANGUAGES CXX CUDA)
set(CMAKE_CUDA_ARCHITECTURES 70 80 90)
add_library(knn knn.cu)
set_target_properties(knn PROPERTIES CUDA_ARCHITECTURES "80;90")
set(CMAKE_CUDA_ARCHITECTURES OFF)
message(STATUS "archs: ${CMAKE_CUDA_ARCHITECTURES}")
"""


def test_cuda_architecture_settings_are_places_of_the_cuda_only_build(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"CMakeLists.txt": _CMAKE})
    # the SM lists are where a HIP build names its gfx targets instead; OFF and a read are not
    assert _found(report, "cmake-cuda-only") == {
        ("CMakeLists.txt", 2): "warn",
        ("CMakeLists.txt", 3): "warn",
        ("CMakeLists.txt", 5): "warn",
    }
    assert len([f for f in report.findings if f.rule_id == "cmake-cuda-only"]) == 1


def test_a_cmake_build_with_a_hip_option_reports_no_architecture_line(tmp_path: Path) -> None:
    hip = _CMAKE + "option(USE_HIP OFF)\nif(USE_HIP)\n  enable_language(HIP)\nendif()\n"
    report = _scan(tmp_path, {"CMakeLists.txt": hip})
    assert _found(report, "cmake-cuda-only") == {}


# -- an NVML binding the project calls ------------------------------------------------------------


def test_an_nvml_requirement_is_warned_only_where_the_project_calls_nvml(tmp_path: Path) -> None:
    pyproject = '[project]\nname = "mon"\ndependencies = ["nvidia-ml-py>=12"]\n'
    called = "import pynvml\n\n\ndef used():\n    pynvml.nvmlInit()\n"
    report = _scan(tmp_path / "a", {"pyproject.toml": pyproject, "mon/gpu.py": called})
    assert _found(report, "nvml") == {
        ("pyproject.toml", 3): "warn",
        ("mon/gpu.py", 1): "warn",  # the module's only GPU API
        ("mon/gpu.py", 5): "warn",
    }
    guarded = (
        "import torch\n\n\ndef used():\n    if torch.version.hip:\n        return None\n"
        "    import pynvml\n    pynvml.nvmlInit()\n"
    )
    report = _scan(tmp_path / "b", {"pyproject.toml": pyproject, "mon/gpu.py": guarded})
    # the call is behind a vendor test that sends AMD elsewhere: nothing in the project
    # fails on ROCm, so the requirement stays a dependency that installs anywhere
    assert set(_found(report, "nvml").values()) == {"info"}


# -- a `gpu-rocm` extra is the ROCm variant; test fixtures are test data ---------------------------


def test_a_gpu_extra_beside_a_gpu_rocm_extra_is_the_nvidia_variant(tmp_path: Path) -> None:
    pyproject = (
        '[project]\nname = "flood"\ndependencies = ["numpy"]\n\n'
        "[project.optional-dependencies]\n"
        'gpu = ["cupy-cuda12x>=14"]\n'
        'gpu-rocm = ["cupy-rocm-7-0>=14"]\n'
    )
    report = _scan(tmp_path / "a", {"pyproject.toml": pyproject})
    assert _found(report, "cupy-cuda") == {("pyproject.toml", 6): "info"}
    alone = pyproject.replace('gpu-rocm = ["cupy-rocm-7-0>=14"]\n', "")
    report = _scan(tmp_path / "b", {"pyproject.toml": alone})
    assert _found(report, "cupy-cuda") == {("pyproject.toml", 6): "warn"}


def test_build_files_in_a_tests_fixture_folder_are_test_data(tmp_path: Path) -> None:
    pin = '[project]\nname = "sample"\nversion = "0.1"\ndependencies = ["torch==2.5.1"]\n'
    report = _scan(
        tmp_path,
        {"pyproject.toml": pin, "tests/skills/fixtures/pinned/pyproject.toml": pin},
    )
    assert _found(report, "torch-pypi-pin") == {
        ("pyproject.toml", 4): "warn",
        ("tests/skills/fixtures/pinned/pyproject.toml", 4): "info",
    }


# -- nvcc's flags written in a test module -------------------------------------------------------------


def test_nvcc_flags_of_a_test_kernel_build_are_test_values_and_the_package_build_is_warned(
    tmp_path: Path,
) -> None:
    jit = (
        "from torch.utils.cpp_extension import load\n\n\ndef {name}():\n"
        "    return load(name='k', sources=['k.cu'], extra_cuda_cflags=['--expt-relaxed-constexpr'])\n"
    )
    report = _scan(
        tmp_path,
        {"pkg/ops.py": jit.format(name="build"), "tests/test_ops.py": jit.format(name="test_k")},
    )
    assert _found(report, "nvcc-only-flags") == {
        ("pkg/ops.py", 5): "warn",
        ("tests/test_ops.py", 5): "info",
    }


def test_cuda_toolkit_libraries_linked_by_file_name_are_places_of_the_cuda_only_build(
    tmp_path: Path,
) -> None:
    cmake = (
        "cmake_minimum_required(VERSION 3.18)\nproject(x LANGUAGES CXX CUDA)\n"
        "add_library(k k.cu)\ntarget_link_libraries(k PUBLIC\n  cublas ${CUDA_LIBRARIES})\n"
        "target_link_libraries(k2 PRIVATE mylib-cudart fmt)\nset(cublas_hint /opt)\n"
    )
    report = _scan(tmp_path, {"CMakeLists.txt": cmake})
    # cuBLAS by its library name and FindCUDA's variable; not a name that only contains one
    assert _found(report, "cmake-cuda-only") == {
        ("CMakeLists.txt", 2): "warn",
        ("CMakeLists.txt", 5): "warn",
    }
    sys.path.insert(0, str(REPO / "benchmarks"))
    import port_score

    # the kind table files a CUDA library link as an extension without HIP
    assert "cuda-extension-no-hip" in port_score.RULE_KINDS["cmake-cuda-only"]
