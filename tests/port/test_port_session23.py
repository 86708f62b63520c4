"""Issue 26, session twenty-three: each change, with a case where the finding must appear and one
where it must not, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

import pytest
from port_helpers import scan_files as _scan
from port_helpers import severities as _found

from rocmkit.port.rules import load_rules
from rocmkit.port.vendor_images import cuda_image

# -- NVIDIA's CUDA library wheels by their names, not every nvidia-* package on PyPI


@pytest.mark.parametrize(
    "name",
    [
        "nvidia-cublas-cu12",
        "nvidia_cudnn_cu12",  # PEP 503: the same distribution
        "nvidia-cublas",  # CUDA 13's unsuffixed wheels
        "nvidia-cuda-runtime",
        "nvidia-nccl-cu13",
        "nvidia-nvjitlink",
        "nvidia-cudss-cu12",
        "nvidia-libnvcomp-cu13",
        "nvidia-mathdx",
        "nvidia-cudnn-frontend",
        "nvidia-cusparselt-cu12",
        "nvidia-cuest-cu12",  # any wheel built for one CUDA major
    ],
)
def test_cuda_library_wheels_are_nvidia_wheels(name: str) -> None:
    rule = load_rules().package_rule(name)
    assert rule is not None and rule.id == "nvidia-wheels"


@pytest.mark.parametrize(
    "name",
    [
        "nvidia-sphinx-theme",  # documentation
        "nvidia-riva-client",  # a gRPC client
        "nvidia-pyindex",  # adds NVIDIA's index to pip's configuration
        "nvidia-nat",  # the NeMo Agent Toolkit
        "nvidia-lm-eval",  # an evaluation harness
        "nvidia-physicsnemo",
    ],
)
def test_other_nvidia_packages_are_not_cuda_library_wheels(name: str) -> None:
    rule = load_rules().package_rule(name)
    assert rule is None or rule.id != "nvidia-wheels"


def test_a_docs_requirement_on_nvidias_sphinx_theme_is_not_a_finding(tmp_path: Path) -> None:
    files = {
        "docs/requirements.txt": "sphinx>=7\nnvidia-sphinx-theme\n",
        "requirements.txt": "torch\nnvidia-cublas-cu12==12.8.4.1\n",
    }
    report = _scan(tmp_path, files)
    assert _found(report, "nvidia-wheels") == {("requirements.txt", 2): "warn"}


# -- NGC's plain Ubuntu base image is not a CUDA image


def test_ngc_base_ubuntu_is_not_a_cuda_image(tmp_path: Path) -> None:
    assert cuda_image("nvcr.io/nvidia/base/ubuntu:noble-20260217") is None
    assert cuda_image("nvcr.io/nvidia/pytorch:25.01-py3") is not None
    files = {
        "docker/Dockerfile.base": "FROM nvcr.io/nvidia/base/ubuntu:noble-20260217\nRUN true\n",
        "docker/Dockerfile": "FROM nvcr.io/nvidia/pytorch:25.01-py3\nRUN true\n",
        "run.sh": "docker run nvcr.io/nvidia/base/ubuntu:noble true\n"
        "docker run nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04 nvidia-smi\n",
    }
    report = _scan(tmp_path, files)
    assert _found(report, "cuda-base-image") == {("docker/Dockerfile", 1): "error"}
    assert set(_found(report, "cuda-image")) == {("run.sh", 2)}


# -- amd_gpu.py is the ROCm counterpart of nvidia_gpu.py

_NVIDIA_MANAGER = """import pynvml


def gpu_model(index):
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    return pynvml.nvmlDeviceGetName(handle)
"""


@pytest.mark.parametrize("amd_side", [True, False])
def test_a_vendor_manager_beside_its_amd_twin_is_the_nvidia_variant(
    tmp_path: Path, amd_side: bool
) -> None:
    files = {"pkg/accelerators/nvidia_gpu.py": _NVIDIA_MANAGER}
    if amd_side:
        files["pkg/accelerators/amd_gpu.py"] = "import amdsmi\n\n\ndef gpu_model(index):\n    ...\n"
    report = _scan(tmp_path, files)
    severities = set(_found(report, "nvml").values())
    if amd_side:  # the NVIDIA half of a vendor pair: reported at info, with the twin named
        assert severities == {"info"}
        note = next(f.note for f in report.findings if f.rule_id == "nvml")
        assert "amd_gpu.py" in note
    else:
        assert "warn" in severities


# -- CUDA images named in a tool's TOML configuration

_CONTAINERS = """# Deployment containers for Slurm (Pyxis/Enroot)
[defaults]
registry = "nvcr.io/nvidia/nemo-evaluator"  # a prefix the tool completes: no tag
tag = "latest"

[deployment]
vllm = "vllm/vllm-openai:latest"
sglang = 'lmsysorg/sglang:v0.5.3-cu126'
base = "{registry}:{tag}"
"""


def test_cuda_images_in_a_toml_config_are_cuda_image_findings(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"tool/resources/containers.toml": _CONTAINERS})
    assert _found(report, "cuda-image") == {
        ("tool/resources/containers.toml", 7): "error",
        ("tool/resources/containers.toml", 8): "error",
    }


def test_a_toml_config_that_also_names_a_rocm_image_is_the_nvidia_variant(tmp_path: Path) -> None:
    text = (
        _CONTAINERS
        + 'vllm_rocm = "rocm/vllm:latest"\nsglang_amd = "lmsysorg/sglang:v0.5.3-rocm630"\n'
    )
    report = _scan(tmp_path, {"containers.toml": text})
    assert set(_found(report, "cuda-image").values()) == {"info"}


def test_toml_files_without_image_references_are_not_image_findings(tmp_path: Path) -> None:
    files = {
        # a comment and a bare repository name are not images the tool runs
        "config.toml": '# built on vllm/vllm-openai:latest\nrepo = "vllm/vllm-openai"\n',
        "docs.toml": 'url = "https://github.com/pytorch/pytorch/issues/1"\n',
    }
    assert _found(_scan(tmp_path, files), "cuda-image") == {}


# -- the nvidia namespace package of NVIDIA's CUDA library wheels

_PRELOAD = """import importlib

_lib = importlib.import_module("nvidia.libnvcomp").load_library()


def compressor():
    try:
        from nvidia import nvcomp
    except ImportError as error:
        raise ImportError("nvcomp compression needs nvidia-nvcomp") from error
    return nvcomp


def preload():
    try:
        import nvidia.cudnn
    except ImportError:
        return None  # optional: cuDNN from the system
    return nvidia.cudnn.__file__
"""


def test_imports_of_nvidias_cuda_library_modules(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"pkg/codec.py": _PRELOAD})
    assert _found(report, "nvidia-library-import") == {
        ("pkg/codec.py", 3): "error",  # a method called on import_module's result still imports it
        ("pkg/codec.py", 8): "error",  # the except clause raises: not optional
        ("pkg/codec.py", 16): "info",  # optional: the program goes on without it
    }


def test_nvidias_other_namespace_modules_are_not_cuda_library_imports(tmp_path: Path) -> None:
    text = "import nvidia.dali.fn as fn\nfrom nvidia import modelopt_helpers\nimport nvidia_smi\n"
    report = _scan(tmp_path, {"loader.py": text})
    assert _found(report, "nvidia-library-import") == {}
    assert ("loader.py", 1) in _found(report, "nvidia-media-library")  # DALI keeps its own rule


# -- imports only a static type checker sees

_TYPED = """from typing import TYPE_CHECKING
import typing

if TYPE_CHECKING:
    from nvidia.dali.plugin.pytorch import DALIGenericIterator
else:
    import pycuda.autoinit

if typing.TYPE_CHECKING:
    import tensorrt


def loader():
    from nvidia.dali.plugin.pytorch import DALIGenericIterator

    return DALIGenericIterator
"""


def test_imports_under_type_checking_are_never_run(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"pkg/loader.py": _TYPED})
    assert _found(report, "nvidia-media-library") == {
        ("pkg/loader.py", 5): "info",  # typing.TYPE_CHECKING is False at run time
        ("pkg/loader.py", 14): "error",  # the import the program runs
    }
    assert _found(report, "tensorrt") == {("pkg/loader.py", 10): "info"}
    assert _found(report, "pycuda") == {("pkg/loader.py", 7): "error"}  # the branch that runs
