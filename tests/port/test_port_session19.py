"""Issue 26, session nineteen: each change, with a case where the finding must appear and one where
it must not, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import severities as _found

# -- values in a project's tests are test data ---------------------------------------------------

_K8S = """def limits(gpus):
    return {"cpu": "4", "nvidia.com/gpu": str(gpus)}
"""

_K8S_TEST = """from launcher.k8s import limits


def test_limits():
    assert limits(2) == {"cpu": "4", "nvidia.com/gpu": "2"}
"""

_POD = """apiVersion: v1
kind: Pod
spec:
  containers:
    - name: server
      resources:
        limits:
          nvidia.com/gpu: 1
"""

_ORT_TEST = """import onnxruntime as ort


def test_providers(monkeypatch):
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CUDAExecutionProvider"])
"""


def test_values_in_test_modules_are_info_and_the_code_they_test_is_not(tmp_path: Path) -> None:
    # pytest collects test_*.py / *_test.py and reads tests/ folders: the resource name a test
    # asserts is its expected output. The function it tests is where the value comes from.
    files = {
        "launcher/k8s.py": _K8S,
        "tests/test_k8s.py": _K8S_TEST,
        "launcher/k8s_test.py": _K8S_TEST,
        "tests/golden/job.yaml": _POD,
        "tests/test_ort.py": _ORT_TEST,
    }
    report = _scan(tmp_path, files)
    found = _found(report, "container-nvidia-gpu")
    assert found[("launcher/k8s.py", 2)] in ("warn", "error")
    assert found[("tests/test_k8s.py", 5)] == "info"
    assert found[("launcher/k8s_test.py", 5)] == "info"
    assert found[("tests/golden/job.yaml", 8)] == "info"
    assert set(_found(report, "ort-nvidia-provider").values()) == {"info"}
    notes = [f.evidence for f in report.findings if f.path == "tests/test_k8s.py"]
    assert any("a value in the project's tests" in n for n in notes)


_FAKE_SMI = """import shutil
from unittest.mock import patch

from tool import hardware


def test_which_finds_the_tool(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda _: "/usr/bin/nvidia-smi")
    assert hardware.smi_path() == "/usr/bin/nvidia-smi"


def test_a_missing_tool():
    with patch("subprocess.run", side_effect=FileNotFoundError("nvidia-smi")):
        assert hardware.gpus() == []
"""

_RUN_SMI = """import subprocess


def query(cmd=("nvidia-smi", "-L")):
    return subprocess.run(cmd, capture_output=True)


def test_listed():
    command = ["nvidia-smi", "--query-gpu=name", "--format=csv"]
    assert subprocess.check_output(command)
"""


def test_a_tool_name_a_test_only_hands_around_is_info(tmp_path: Path) -> None:
    # a fake path for shutil.which and an exception's text start nothing
    found = _found(_scan(tmp_path / "a", {"tests/test_hw.py": _FAKE_SMI}), "nvidia-smi")
    assert found and set(found.values()) == {"info"}
    # a test that runs the tool, through a name or a default argument, still fails on AMD
    ran = _found(_scan(tmp_path / "b", {"tests/test_run.py": _RUN_SMI}), "nvidia-smi")
    assert ran and "info" not in set(ran.values())


def test_calls_and_imports_in_tests_are_still_reported(tmp_path: Path) -> None:
    # A test that runs nvidia-smi or imports an NVIDIA-only library fails on an AMD machine: that
    # is the project's test suite breaking, which the maintainer fixes (not data it compares).
    calls = (
        "import subprocess\n\nimport pycuda.autoinit\n\n\ndef test_gpu():\n"
        '    out = subprocess.check_output(["nvidia-smi", "-L"])\n    assert out\n'
    )
    report = _scan(tmp_path, {"tests/test_gpu.py": calls})
    assert set(_found(report, "nvidia-smi").values()) == {"warn"}
    assert set(_found(report, "pycuda").values()) == {"error"}


# -- nvcc flags a comprehension makes ------------------------------------------------------------

_SETUP = """from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

ARCHS = ["80", "90"]
NVCC = ["-O3"] + [f"--generate-code=arch=compute_{a},code=sm_{a}" for a in ARCHS]
HIP_SAFE = ["-O3"] + [f"-DARCH_{a}" for a in ARCHS]

setup(
    name="fused",
    ext_modules=[
        CUDAExtension("fused", ["fused.cu"], extra_compile_args={"cxx": [], "nvcc": NVCC}),
    ],
    cmdclass={"build_ext": BuildExtension},
)
"""


def test_arch_flags_a_comprehension_makes_reach_nvcc(tmp_path: Path) -> None:
    # On a ROCm torch the "nvcc" list goes to hipcc, whose clang rejects --generate-code
    report = _scan(tmp_path / "a", {"setup.py": _SETUP})
    flags = [f for f in report.findings if f.rule_id == "nvcc-only-flags"]
    assert [f.lines for f in flags] == [(5,)] and flags[0].severity != "info"
    # the same comprehension making defines hipcc accepts is not reported
    plain = _SETUP.replace('"nvcc": NVCC', '"nvcc": HIP_SAFE')
    assert not _found(_scan(tmp_path / "b", {"setup.py": plain}), "nvcc-only-flags")


# -- a Modal app runs on Modal's NVIDIA GPUs -----------------------------------------------------

_MODAL = """import modal

image = modal.Image.from_registry("nvidia/cuda:12.4.1-devel-ubuntu22.04").pip_install("vllm")
app = modal.App("bench", image=image)


@app.function(gpu="H100")
def bench():
    import subprocess

    subprocess.run(["nvidia-smi"], check=True)
"""


def test_a_modal_app_is_info_and_the_same_image_elsewhere_is_not(tmp_path: Path) -> None:
    # Modal's GPU types are all NVIDIA's: its app's container never runs on a ROCm machine
    modal_app = _found(_scan(tmp_path / "a", {"deploy_modal.py": _MODAL}), "cuda-image")
    assert set(modal_app.values()) == {"info"}
    plain = _MODAL.replace("import modal\n", "from . import modal\n")  # the project's own module
    local = _found(_scan(tmp_path / "b", {"deploy.py": plain}), "cuda-image")
    assert set(local.values()) == {"error"}


# -- tensorflow[and-cuda] --------------------------------------------------------------------------

_NOTEBOOK = """{"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": null,
  "source": ["!pip install tensorflow[and-cuda] keras\\n", "import tensorflow as tf"]}],
 "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
"""

_PYPROJECT = """[project]
name = "plates"
version = "1.0"
dependencies = ["tensorflow>=2.15"]

[project.optional-dependencies]
gpu = ["tensorflow[and-cuda]>=2.15"]
"""


def test_tensorflow_and_cuda_is_reported_and_plain_tensorflow_is_not(tmp_path: Path) -> None:
    # TensorFlow's pip package defines `and-cuda` as NVIDIA's CUDA/cuDNN wheels (install page:
    # "for GPU users"); PyPI's TensorFlow runs its models on the CPU of a ROCm machine
    report = _scan(tmp_path, {"train.ipynb": _NOTEBOOK, "pyproject.toml": _PYPROJECT})
    found = _found(report, "tensorflow-cuda-extra")
    assert set(found) == {("train.ipynb", 1), ("pyproject.toml", 7)}
    assert "info" not in set(found.values())
    assert not any(f.line == 4 and f.path == "pyproject.toml" for f in report.findings)


def test_onnxruntime_genai_cuda_is_the_cuda_build(tmp_path: Path) -> None:
    # ONNX Runtime GenAI's install page: onnxruntime-genai (CPU), onnxruntime-genai-cuda (CUDA)
    pyproject = (
        '[project]\nname = "bench"\nversion = "0.1"\ndependencies = ["onnxruntime-genai"]\n\n'
        '[project.optional-dependencies]\nonnx-gpu = ["onnxruntime-genai-cuda"]\n'
    )
    found = _found(_scan(tmp_path, {"pyproject.toml": pyproject}), "onnxruntime-gpu")
    assert found == {("pyproject.toml", 7): "warn"}
