"""Issue 26, session thirty-one: each change, with a case where the finding must appear and one
where it must not, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import severities as _found

from rocmkit.port.container_gpus import names_docker

# -- uv's torch-backend setting ----------------------------------------------------------------------

_PROJECT = '[project]\nname = "tool"\nversion = "1.0"\ndependencies = ["torch>=2.6"]\n\n'


def test_a_cuda_torch_backend_in_pyproject_is_the_cuda_index(tmp_path: Path) -> None:
    uv = _scan(
        tmp_path / "a", {"pyproject.toml": _PROJECT + '[tool.uv]\ntorch-backend = "cu130"\n'}
    )
    pip = _scan(
        tmp_path / "b",
        {"pyproject.toml": _PROJECT + '[tool.uv.pip]\npython = "3.11"\ntorch-backend = "cu126"\n'},
    )
    # uv installs torch from PyTorch's CUDA index, as --index-url .../whl/cu130 would
    assert _found(uv, "torch-cuda-index") == {("pyproject.toml", 7): "error"}
    assert _found(pip, "torch-cuda-index") == {("pyproject.toml", 8): "error"}


def test_auto_rocm_and_a_rocm_index_beside_it_are_not_a_cuda_install(tmp_path: Path) -> None:
    auto = _scan(
        tmp_path / "a", {"pyproject.toml": _PROJECT + '[tool.uv]\ntorch-backend = "auto"\n'}
    )
    rocm = _scan(
        tmp_path / "b", {"pyproject.toml": _PROJECT + '[tool.uv.pip]\ntorch-backend = "rocm6.4"\n'}
    )
    both = _scan(
        tmp_path / "c",
        {
            "pyproject.toml": _PROJECT
            + '[tool.uv]\ntorch-backend = "cu128"\n\n[[tool.uv.index]]\nname = "rocm"\n'
            + 'url = "https://download.pytorch.org/whl/rocm6.4"\nexplicit = true\n'
        },
    )
    assert _found(auto, "torch-cuda-index") == {}  # `auto` detects AMD GPUs (uv 0.7.14 on)
    assert _found(rocm, "torch-cuda-index") == {}
    assert _found(both, "torch-cuda-index") == {("pyproject.toml", 7): "info"}


# -- an image given as a variable's default --------------------------------------------------------

_COMPOSE = """services:
  worker:
    build:
      context: .
      args:
        - BASE_IMAGE=${BASE_IMAGE:-IMAGE}
"""


def test_a_cuda_image_as_a_compose_or_shell_default_is_found(tmp_path: Path) -> None:
    compose = _COMPOSE.replace("IMAGE}", "nvidia/cuda:12.6.3-devel-ubuntu24.04}")
    script = 'IMG="${GBS_IMAGE:-nvidia/cuda:12.4.1-devel-ubuntu22.04}"\ndocker run "$IMG" nvcc -V\n'
    report = _scan(tmp_path, {"docker-compose.yml": compose, "scripts/run.sh": script})
    assert _found(report, "cuda-image") == {
        ("docker-compose.yml", 6): "error",
        ("scripts/run.sh", 1): "error",
    }


def test_a_rocm_image_as_a_default_or_a_longer_name_is_not(tmp_path: Path) -> None:
    rocm = _COMPOSE.replace("IMAGE}", "rocm/pytorch:rocm6.4_ubuntu22.04_py3.10}")
    vllm = _COMPOSE.replace("IMAGE}", "vllm/vllm-openai-rocm:nightly}")
    other = _COMPOSE.replace("IMAGE}", "my-nvidia/cuda:1}")  # another repository's name
    report = _scan(
        tmp_path,
        {"a/docker-compose.yml": rocm, "b/docker-compose.yml": vllm, "c/compose.yml": other},
    )
    assert _found(report, "cuda-image") == {}


# -- docker named in a module (a faster test, the same answer) ---------------------------------------


def test_docker_or_podman_named_anywhere_in_any_case_and_nothing_else() -> None:
    assert names_docker("import x\nDOCKER_HOST = 1\n")
    assert names_docker("run = ['Podman', 'run']")
    assert names_docker("from ._docker import client")
    assert not names_docker("import subprocess\nsubprocess.run(['nvidia-smi'])\n")


# -- CMAKE_CUDA_ARCHITECTURES where a build starts ---------------------------------------------------

_BUILD = (
    '#!/bin/bash\ncmake -S csrc -B build -DCMAKE_CUDA_ARCHITECTURES="80;90"\ncmake --build build\n'
)


def test_cuda_architectures_given_to_cmake_are_found_in_scripts_python_and_pyproject(
    tmp_path: Path,
) -> None:
    setup = 'from skbuild import setup\n\nsetup(name="k", cmake_args=["-DCMAKE_CUDA_ARCHITECTURES=90"])\n'
    pyproject = (
        '[project]\nname = "k"\nversion = "1"\n\n[tool.scikit-build.cmake.define]\n'
        'CMAKE_CUDA_ARCHITECTURES = "90;100"\n'
    )
    docker = (
        "FROM ubuntu:22.04\nRUN cmake -S . -B b -DCMAKE_CUDA_ARCHITECTURES=89 && cmake --build b\n"
    )
    report = _scan(
        tmp_path,
        {"build.sh": _BUILD, "setup.py": setup, "pyproject.toml": pyproject, "Dockerfile": docker},
    )
    assert _found(report, "cmake-cuda-architectures") == {
        ("build.sh", 2): "warn",
        ("setup.py", 3): "warn",
        ("pyproject.toml", 6): "warn",
        ("Dockerfile", 2): "warn",
    }


def test_hints_comments_hip_choices_and_release_wheel_settings_are_not_warned(
    tmp_path: Path,
) -> None:
    hint = '#!/bin/bash\necho "build with -DCMAKE_CUDA_ARCHITECTURES=89"\n# cmake -DCMAKE_CUDA_ARCHITECTURES=90\n'
    both = (
        "def flag(vendor, archs):\n"
        '    if vendor == "cuda":\n'
        '        return f"-DCMAKE_CUDA_ARCHITECTURES={archs}"\n'
        '    return f"-DCMAKE_HIP_ARCHITECTURES={archs}"\n'
    )
    wheels = (
        '[project]\nname = "k"\nversion = "1"\n\n[tool.cibuildwheel]\n'
        'config-settings = {"cmake.define.CMAKE_CUDA_ARCHITECTURES" = "all"}\n'
    )
    report = _scan(tmp_path, {"hint.sh": hint, "pkg/build.py": both, "pyproject.toml": wheels})
    assert _found(report, "cmake-cuda-architectures") == {
        ("pkg/build.py", 3): "info",  # the same module names the HIP targets: a vendor choice
        ("pyproject.toml", 6): "info",  # cibuildwheel: the maintainers' release wheels
    }


# -- the line of a match inside an f-string --------------------------------------------------------


def test_a_match_in_a_multi_line_f_string_is_reported_at_its_own_line(tmp_path: Path) -> None:
    writer = (
        "def dockerfile(ops, arch):\n"
        '    return f"""FROM ubuntu:22.04\n'
        "{{OPS}}\n"
        "{ops}\n"
        "RUN pip install -r requirements.txt\n"
        "RUN cmake .. -GNinja -DCMAKE_CUDA_ARCHITECTURES=89\n"
        '"""\n'
    )
    report = _scan(tmp_path, {"stubs/dockerfile.py": writer})
    # Python 3.11 gives the f-string's constant parts the f-string's first line; the finding is
    # at the line that holds the match, not two lines above it
    assert _found(report, "cmake-cuda-architectures") == {("stubs/dockerfile.py", 6): "warn"}


# -- nvmlShutdown() closes what nvmlInit() opened --------------------------------------------------

_POWER = """import pynvml


def energy(seconds):
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    watts = pynvml.nvmlDeviceGetPowerUsage(handle) / 1000
    pynvml.nvmlShutdown()
    return watts * seconds
"""


def test_the_nvml_shutdown_of_a_module_that_starts_nvml_is_one_of_its_places(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"power.py": _POWER})
    # the life cycle amdsmi_init()/amdsmi_shut_down() replaces, at the finding's severity
    assert _found(report, "nvml") == {
        ("power.py", 1): "warn",
        ("power.py", 5): "warn",
        ("power.py", 6): "warn",
        ("power.py", 7): "warn",
        ("power.py", 8): "warn",
    }
    # a module that names AMD SMI too lists no queries beside its NVML start (nor the shutdown)
    amd = _scan(tmp_path / "amd", {"power.py": "import amdsmi\n" + _POWER})
    assert ("power.py", 9) not in _found(amd, "nvml")
