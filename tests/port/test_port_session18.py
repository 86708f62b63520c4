"""Issue 26, session eighteen: each change, with a case where the finding must appear and one where
it must not, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import severities as _found

# -- Apptainer's --nv in a command line a Python program builds ----------------------------------

_SLURM_TEMPLATE = """CONTAINER = load_config()["containerization"]["module_name"]

TEMPLATE = {
    "setup": "module load cuda",
    "command": f"{CONTAINER} exec --nv {{env}} --containall {{image}} \\\\",
}


def launch(image):
    return "singularity exec --no-home --writable-tmpfs --nv " + image
"""


def test_an_apptainer_run_with_nv_built_in_a_string_is_reported(tmp_path: Path) -> None:
    # Apptainer's --nv binds NVIDIA's devices and driver only: on an AMD node the container has no
    # GPU. The program name may be a formatted value (the module never names Apptainer).
    found = _found(_scan(tmp_path, {"slurm.py": _SLURM_TEMPLATE}), "apptainer-nv")
    assert found == {("slurm.py", 5): "warn", ("slurm.py", 10): "warn"}


def test_a_rocm_choice_a_test_assertion_and_other_programs_are_not(tmp_path: Path) -> None:
    rocm = _SLURM_TEMPLATE + '\nROCM = "singularity exec --rocm {image}"\n'
    found = _found(_scan(tmp_path / "a", {"slurm.py": rocm}), "apptainer-nv")
    assert set(found.values()) == {"info"}  # one side of a choice the module makes
    checked = 'def test_cmd(cmd):\n    assert "apptainer exec --nv" in cmd\n'
    other = 'CMD = "docker exec --nv-flag box"\nRUN = "ssh host run --nvme"\n'
    files = {"test_slurm.py": checked, "other.py": other}
    assert not _found(_scan(tmp_path / "b", files), "apptainer-nv")


# -- cuda-python's cuda.core and NVIDIA's NVSHMEM bindings -----------------------------------------

_NVSHMEM = """import torch


def initialize(stream):
    import cuda.core as cc
    import nvshmem.core as nvshmem

    device = cc.Device()
    nvshmem.init(device=device)
    return torch.empty(1, device="cuda")
"""


def test_cuda_core_and_nvshmem_imports_are_errors(tmp_path: Path) -> None:
    # cuda.core drives the CUDA driver and NVRTC; NVSHMEM4Py binds NVIDIA's NVSHMEM: no AMD path
    report = _scan(tmp_path, {"moe/comm.py": _NVSHMEM})
    assert _found(report, "cuda-python") == {("moe/comm.py", 5): "error"}
    assert _found(report, "nvidia-only-library") == {("moe/comm.py", 6): "error"}


def test_other_cuda_and_shmem_names_are_not(tmp_path: Path) -> None:
    # the project's own `cuda` package, torch.cuda and an OpenSHMEM module of another name
    files = {
        "pkg/cuda/core.py": "X = 1\n",
        "pkg/run.py": "import torch.cuda\nfrom pkg.cuda import core\nimport shmem\n",
    }
    report = _scan(tmp_path, files)
    assert not _found(report, "cuda-python", "nvidia-only-library")


# -- NVIDIA-only kernel packages named by their own READMEs and builds -----------------------------

_QUARTET_SETUP = """from setuptools import setup

setup(
    name="qat",
    install_requires=["torch", "fast_hadamard_transform>=1.0.4", "qutlass>=0.1.0"],
)
"""
_QUARTET_MODULE = """from fast_hadamard_transform import hadamard_transform
from qutlass import matmul_mxf4_bf16_tn
from quack.gemm_interface import gemm
"""


def test_blackwell_and_cute_kernel_packages_are_nvidia_only(tmp_path: Path) -> None:
    files = {"setup.py": _QUARTET_SETUP, "qat/linear.py": _QUARTET_MODULE}
    found = _found(_scan(tmp_path, files), "nvidia-only-library")
    assert found == {
        ("setup.py", 5): "error",
        ("qat/linear.py", 1): "error",
        ("qat/linear.py", 2): "error",
        ("qat/linear.py", 3): "error",
    }


def test_a_guarded_import_and_look_alike_names_are_not_errors(tmp_path: Path) -> None:
    guarded = "try:\n    import qutlass\nexcept ImportError:\n    qutlass = None\n"
    other = "import quackery\nfrom hadamard import transform\n"
    report = _scan(tmp_path, {"ops.py": guarded, "other.py": other})
    found = _found(report, "nvidia-only-library")
    assert ("other.py", 1) not in found and ("other.py", 2) not in found
    assert found.get(("ops.py", 2)) != "error"  # behind a fallback: the project runs without it


# -- torchvision's own version numbers ------------------------------------------------------------


def test_a_torchvision_range_is_read_against_torchvisions_own_releases(tmp_path: Path) -> None:
    # torchvision 0.25 goes with torch 2.10, which has ROCm wheels: the range admits them. Before,
    # its versions were compared with torch's floor (2.8.0) and every 0.x range looked too old.
    current = '[project]\nname = "p"\ndependencies = [\n  "torch>=2.10,<3",\n  "torchvision>=0.25,<1",\n]\n'
    assert not _found(_scan(tmp_path / "a", {"pyproject.toml": current}), "torch-pypi-pin")
    # ... while a torchvision cap below 0.23 (torch 2.8) still excludes every ROCm 6.4 wheel
    old = '[project]\nname = "p"\ndependencies = [\n  "torchvision>=0.15,<0.20",\n  "torchaudio<2.4",\n]\n'
    found = _found(_scan(tmp_path / "b", {"pyproject.toml": old}), "torch-pypi-pin")
    assert found == {("pyproject.toml", 4): "warn", ("pyproject.toml", 5): "warn"}


# -- torch.version.cuda handed to a class to hold ----------------------------------------------------

_STATUS = """import dataclasses

import torch


@dataclasses.dataclass
class TorchStatus:
    cuda_version: str | None


def status():
    cuda_version = torch.version.cuda
    return TorchStatus(cuda_version=cuda_version)


def wheel_tag():
    return "cu" + torch.version.cuda.replace(".", "")
"""


def test_a_cuda_version_held_by_a_class_is_recorded_and_a_parsed_one_is_not(
    tmp_path: Path,
) -> None:
    found = _found(_scan(tmp_path, {"env.py": _STATUS}), "torch-version-cuda")
    assert found.get(("env.py", 12), "info") == "info"  # None kept in a field: nothing fails
    assert found[("env.py", 17)] == "warn"  # None.replace(...): AttributeError on ROCm
