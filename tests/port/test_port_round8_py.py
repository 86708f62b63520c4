"""Issue 26, eighth round, Python and packaging side: mechanisms read from the emitters' own
definitions (Docker's device drivers, Kubernetes device plugins' resource names, NVIDIA's library
file names, Warp's and tiny-cuda-nn's install pages, Python's import system, interpreter lines),
each with a case where it applies and one where it must not, on small synthetic trees (shapes
written for these tests, not copied from the corpus)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

from rocmkit.port.container_gpus import device_request_verdict
from rocmkit.port.cuda_libraries import library_kind


def _info(report) -> set[tuple[str, int, str]]:  # type: ignore[no-untyped-def]
    return {
        (f.path, line, f.rule_id)
        for f in report.findings
        for line in f.lines
        if f.severity == "info"
    }


# -- container GPU requests, by the device drivers that can serve them --------------------------


@pytest.mark.parametrize(
    ("device_request", "nvidia_only"),
    [
        ('DeviceRequest(count=1, capabilities=[["compute", "utility"]])', True),
        ('DeviceRequest(count=-1, capabilities=[["gpu", "video"]])', True),
        ('DeviceRequest(driver="nvidia", count=1)', True),
        ('DeviceRequest(count=-1, capabilities=[["gpu"]])', False),  # docker --gpus: amd serves it
        ('DeviceRequest(capabilities=[["compute"], ["amd"]])', False),  # an AMD alternative
        ("DeviceRequest(count=1, capabilities=caps)", False),  # not written out: undecided
    ],
)
def test_a_device_request_is_judged_by_the_drivers_capability_sets(
    device_request: str, nvidia_only: bool
) -> None:
    call = ast.parse(device_request).body[0].value  # type: ignore[attr-defined]
    assert (device_request_verdict(call) is not None) is nvidia_only


def test_docker_sdk_requests_and_the_nvidia_kubernetes_resource_are_errors(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "sched/docker_run.py": (
                "from docker.types import DeviceRequest\n\n"
                "def requests(n):\n"
                '    return [DeviceRequest(count=n, capabilities=[["compute", "utility"]])]\n'
            ),
            "sched/k8s.py": (
                'def resources(n):\n    return {"limits": {"nvidia.com/gpu": str(n)}}\n'
            ),
        },
    )
    assert _shown(report) == {
        ("sched/docker_run.py", 4, "container-nvidia-gpu", "error"),
        ("sched/k8s.py", 2, "container-nvidia-gpu", "error"),
    }


def test_a_gpu_capability_request_and_a_module_naming_amds_resource_are_not_errors(
    tmp_path: Path,
) -> None:
    report = _scan(
        tmp_path,
        {
            "sched/docker_run.py": (
                "from docker.types import DeviceRequest\n\n"
                'REQUEST = DeviceRequest(count=-1, capabilities=[["gpu"]])\n'
            ),
            "sched/k8s.py": (
                "def resources(n, vendor):\n"
                '    key = "amd.com/gpu" if vendor == "amd" else "nvidia.com/gpu"\n'
                "    return {key: str(n)}\n"
            ),
        },
    )
    # not an error: the request `docker run --gpus` sends, which the AMD Container Toolkit's
    # driver serves; session twelve reports it as --gpus itself is (docker-gpus, warn)
    assert _shown(report) == {("sched/docker_run.py", 3, "docker-gpus", "warn")}
    assert _info(report) == {("sched/k8s.py", 2, "container-nvidia-gpu")}


def test_gpus_appended_to_a_docker_argv_is_found_where_it_is_added(tmp_path: Path) -> None:
    launcher = (
        "import shlex\n\n"
        "def command(image, gpus, name):\n"
        '    cmd = ["docker", "run", f"--name={name}"]\n'
        "    if gpus:\n"
        '        cmd += ["--gpus", "all"]\n'
        '    cmd.extend(["--rm", image])\n'
        "    return shlex.join(cmd)\n"
    )
    report = _scan(tmp_path, {"launch.py": launcher})
    assert _shown(report) == {("launch.py", 6, "docker-gpus", "warn")}


def test_gpus_in_a_program_argv_that_is_not_docker_is_not_reported(tmp_path: Path) -> None:
    launcher = (
        "def command(gpus):\n"
        '    cmd = ["python", "train.py"]\n'
        '    cmd += ["--gpus", str(gpus)]\n'
        "    return cmd\n"
    )
    assert _scan(tmp_path, {"launch.py": launcher}).findings == ()


# -- NVIDIA's libraries loaded by file name -----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("libcuda.so.1", "driver"),
        ("/usr/lib/x86_64-linux-gnu/libcuda.so", "driver"),
        ("nvcuda.dll", "driver"),
        ("libnvidia-ml.so.1", "nvml"),
        ("nvml.dll", "nvml"),
        ("libcudart.so.12", "cuda"),
        ("cudart64_12.dll", "cuda"),
        ("libnvrtc.so", "cuda"),
        ("libcudaxx.so", None),
        ("libamdhip64.so", None),
        ("libc.so.6", None),
    ],
)
def test_library_files_are_named_by_nvidias_file_names(name: str, kind: str | None) -> None:
    assert library_kind(name) == kind


def test_the_cuda_driver_tried_from_a_list_is_reported_at_the_load(tmp_path: Path) -> None:
    loader = (
        "import ctypes\n\n"
        "def load():\n"
        '    names = ["libcuda.so.1", "libcuda.so"]\n'
        "    for name in names:\n"
        "        try:\n"
        "            return ctypes.CDLL(name)\n"
        "        except OSError:\n"
        "            pass\n\n"
        "def nvml():\n"
        '    return ctypes.CDLL("libnvidia-ml.so.1")\n\n'
        "def runtime():\n"
        '    return ctypes.CDLL("libcudart.so")\n'
    )
    report = _scan(tmp_path, {"driver.py": loader})
    assert _shown(report) == {
        ("driver.py", 7, "cuda-driver-library", "warn"),
        ("driver.py", 12, "nvml", "warn"),
    }
    assert ("driver.py", 15, "cuda-driver-library") in _info(report)  # what it is for decides


def test_a_loader_that_also_tries_hips_library_and_other_libraries_are_left_alone(
    tmp_path: Path,
) -> None:
    loader = (
        "import ctypes\n\n"
        "def load():\n"
        '    for name in ("libcuda.so", "libamdhip64.so"):\n'
        "        try:\n"
        "            return ctypes.CDLL(name)\n"
        "        except OSError:\n"
        "            pass\n\n"
        'LIBC = ctypes.CDLL("libc.so.6")\n'
    )
    assert _scan(tmp_path, {"driver.py": loader}).findings == ()


# -- libraries whose GPU back end is CUDA only --------------------------------------------------


def test_warp_is_an_error_even_behind_an_import_error_fallback(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "pyproject.toml": '[project]\nname = "m"\nversion = "1"\ndependencies = ["warp-lang>=1.5"]\n',
            "m/ops.py": "try:\n    import warp as wp\nexcept ImportError:\n    wp = None\n",
        },
    )
    assert _shown(report) == {
        ("pyproject.toml", 4, "nvidia-only-library", "error"),
        ("m/ops.py", 2, "nvidia-only-library", "error"),
    }
    finding = next(f for f in report.findings if f.path == "m/ops.py")
    assert "installs and imports on ROCm" in finding.evidence


def test_tinycudann_behind_an_import_error_fallback_is_info(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {"m/net.py": "try:\n    import tinycudann as tcnn\nexcept ImportError:\n    tcnn = None\n"},
    )
    assert _shown(report) == set()
    assert _info(report) == {("m/net.py", 2, "nvidia-only-library")}


# -- an import the package's __init__.py already makes ------------------------------------------


def test_imports_below_a_package_init_that_makes_them_point_there(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/kernels/__init__.py": "import warp as wp\n",
            "pkg/kernels/a.py": "import warp as wp\n",
            "pkg/kernels/deep/b.py": "import warp\n",
            "pkg/other.py": "import warp\n",  # not below kernels/: its own finding
        },
    )
    assert _shown(report) == {
        ("pkg/kernels/__init__.py", 1, "nvidia-only-library", "error"),
        ("pkg/other.py", 1, "nvidia-only-library", "error"),
    }
    below = next(f for f in report.findings if f.path == "pkg/kernels/a.py")
    assert below.severity == "info" and "pkg/kernels/__init__.py:1" in below.note


def test_an_init_that_does_not_import_it_leaves_the_modules_findings(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {"pkg/__init__.py": "import torch\n", "pkg/a.py": "import warp\n"},
    )
    assert _shown(report) == {("pkg/a.py", 1, "nvidia-only-library", "error")}


# -- scripts without a suffix ---------------------------------------------------------------------


def test_a_script_without_a_suffix_is_scanned_by_its_interpreter_line(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "scripts/gpu-top": "#!/usr/bin/env python\nimport pynvml\npynvml.nvmlInit()\n",
            "scripts/launch": "#!/bin/bash\ndocker run --gpus all demo\n",
        },
    )
    assert _shown(report) == {
        ("scripts/gpu-top", 3, "nvml", "warn"),
        ("scripts/gpu-top", 2, "nvml", "warn"),  # round nine: the binding, its only GPU API
        ("scripts/launch", 2, "docker-gpus", "warn"),
    }


def test_a_suffixless_file_of_another_language_or_no_interpreter_is_not_scanned(
    tmp_path: Path,
) -> None:
    report = _scan(
        tmp_path,
        {
            "scripts/report": "#!/usr/bin/perl\nsystem('nvidia-smi');\n",
            "NOTES": "docker run --gpus all demo\n",
        },
    )
    assert report.findings == ()
    assert sum(report.num_files.values()) == 0


# -- build files ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("binding", "reported"),
    [
        ("Extension = CUDAExtension if WITH_GPU else CppExtension", True),
        ("Extension = CppExtension", False),  # CUDAExtension only imported, never used
    ],
)
def test_torch_in_build_requires_counts_a_cuda_extension_bound_to_a_name(
    tmp_path: Path, binding: str, reported: bool
) -> None:
    setup_py = (
        "from setuptools import setup\n"
        "from torch.utils.cpp_extension import BuildExtension, CUDAExtension, CppExtension\n"
        "WITH_GPU = True\n"
        f"{binding}\n"
        'setup(name="pkg", ext_modules=[Extension("pkg._C", ["a.cpp"])])\n'
    )
    report = _scan(
        tmp_path,
        {
            "setup.py": setup_py,
            "pyproject.toml": '[build-system]\nrequires = ["setuptools", "torch"]\n',
        },
    )
    found = ("pyproject.toml", 2, "torch-pypi-pin", "warn") in _shown(report)
    assert found is reported


# -- packages, extras and build files -------------------------------------------------------------


def test_a_pure_wheel_that_jit_builds_with_nvcc_only_is_an_error_as_a_dependency(
    tmp_path: Path,
) -> None:
    report = _scan(
        tmp_path,
        {
            "pyproject.toml": (
                '[project]\nname = "m"\nversion = "1"\n'
                'dependencies = ["gsplat==1.4.0", "nerfacc", "numpy"]\n'
            ),
            "m/render.py": "import gsplat\n",  # the import works: the call fails, not the import
        },
    )
    assert _shown(report) == {("pyproject.toml", 4, "nvcc-jit-package", "error")}
    assert report.findings[0].lines == (4,)


@pytest.mark.parametrize(
    ("extras", "severity"),
    [
        ('gpu = ["onnxruntime-gpu>=1.17"]\ncpu = ["onnxruntime"]\n', "warn"),  # every GPU user
        ('gpu = ["onnxruntime-gpu>=1.17"]\nrocm = ["onnxruntime-rocm"]\n', "info"),  # a variant
        ('cuda = ["onnxruntime-gpu>=1.17"]\n', "info"),  # named for NVIDIA
    ],
)
def test_an_extra_named_for_any_gpu_is_what_an_amd_user_installs(
    tmp_path: Path, extras: str, severity: str
) -> None:
    pyproject = '[project]\nname = "m"\nversion = "1"\n\n[project.optional-dependencies]\n' + extras
    report = _scan(tmp_path, {"pyproject.toml": pyproject})
    finding = next(f for f in report.findings if f.rule_id == "onnxruntime-gpu")
    assert finding.severity == severity


def test_hard_coded_nvcc_architectures_in_a_makefile_and_cmake_are_found(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "Makefile": (
                "NVCC := $(CUDA_HOME)/bin/nvcc\n"
                "ARCH := -gencode arch=compute_70,code=sm_70 \\\n"
                "\t-gencode=arch=compute_80,code=sm_80\n"
                "all:\n\t$(NVCC) $(ARCH) -c k.cu\n"
            ),
            "CMakeLists.txt": (
                "project(k LANGUAGES CXX CUDA)\n"
                'set(CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS} -gencode=arch=compute_80,code=sm_80")\n'
            ),
        },
    )
    assert _shown(report) == {
        ("Makefile", 2, "nvcc-only-flags", "warn"),
        ("Makefile", 3, "nvcc-only-flags", "warn"),
        ("CMakeLists.txt", 1, "cmake-cuda-only", "warn"),
        ("CMakeLists.txt", 2, "nvcc-only-flags", "warn"),
    }


def test_nvcc_architectures_in_a_build_file_with_a_hip_path_are_left_alone(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "Makefile": (
                "ifeq ($(USE_ROCM),1)\nCXX := hipcc --offload-arch=gfx942\nelse\n"
                "ARCH := -gencode arch=compute_80,code=sm_80\nendif\n"
            ),
            "build.sh": "# nvcc -gencode arch=compute_80,code=sm_80 (a comment)\nmake\n",
        },
    )
    assert report.findings == ()


def test_visible_devices_blanked_before_nvml_picks_gpus_hides_amd_gpus(tmp_path: Path) -> None:
    picker = (
        "import os\nimport pynvml\n\n"
        "def grab(n):\n"
        '    os.environ["CUDA_VISIBLE_DEVICES"] = ""\n'
        "    try:\n        pynvml.nvmlInit()\n    except Exception:\n        return 0\n"
        '    os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'
        "    return n\n"
    )
    report = _scan(tmp_path, {"pick.py": picker})
    assert ("pick.py", 5, "cuda-visible-devices", "error") in _shown(report)


def test_visible_devices_blanked_without_nvml_is_not_an_error(tmp_path: Path) -> None:
    cpu_only = 'import os\n\ndef cpu_only():\n    os.environ["CUDA_VISIBLE_DEVICES"] = ""\n'
    report = _scan(tmp_path, {"cpu.py": cpu_only})
    assert _shown(report) == set()
    assert _info(report) == {("cpu.py", 4, "cuda-visible-devices")}


_SHARED_MEMORY = """import torch

SHARED_BYTES = {{"8.0": 163000, "8.6": 99000, "9.0": 227000}}
props = torch.cuda.get_device_properties(0)
capability = f"{{props.major}}.{{props.minor}}"
{rocm}if capability not in SHARED_BYTES:
    raise NotImplementedError
budget = SHARED_BYTES[capability]
"""


def test_a_table_of_nvidia_capabilities_looked_up_with_the_devices_is_an_error(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"limits.py": _SHARED_MEMORY.format(rocm="")})
    assert _shown(report) == {
        ("limits.py", 6, "device-capability", "error"),
        ("limits.py", 8, "device-capability", "error"),
    }


def test_a_capability_table_in_a_module_that_handles_rocm_is_left_alone(tmp_path: Path) -> None:
    rocm = 'if torch.version.hip:\n    capability = "8.0"  # 64 KB of LDS: the smallest entry\n'
    report = _scan(tmp_path, {"limits.py": _SHARED_MEMORY.format(rocm=rocm)})
    assert _shown(report) == set()


def test_cudnn_off_in_a_project_without_what_miopen_serves_is_info(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "m/init.py": "import torch\n\ndef init():\n    torch.backends.cudnn.enabled = False\n",
            "m/layers.py": "import torch\n\nclass Mlp(torch.nn.Module):\n    pass\n",
        },
    )
    assert _shown(report) == set()
    finding = next(f for f in report.findings if f.rule_id == "cudnn-disabled")
    assert "no convolution" in finding.note


def test_cudnn_off_beside_a_convolution_keeps_its_warning(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "m/init.py": "import torch\n\ndef init():\n    torch.backends.cudnn.enabled = False\n",
            "m/layers.py": "import torch\n\nconv = torch.nn.Conv2d(3, 8, 3)\n",
        },
    )
    assert _shown(report) == {("m/init.py", 4, "cudnn-disabled", "warn")}


_UV_PYPROJECT = """[project]
name = "m"
version = "1"
dependencies = ["torch>=2.4"]

[tool.uv.sources]
torch = [
  {{ index = "pytorch-cu126" }},
]

[[tool.uv.index]]
name = "pytorch-cu126"
url = "https://download.pytorch.org/whl/cu126"
{explicit}"""


def test_an_explicit_cuda_index_is_reported_at_the_source_entry_that_routes_torch(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"pyproject.toml": _UV_PYPROJECT.format(explicit="explicit = true\n")})
    # One finding: the entry first, the index's URL as its other place (round thirteen).
    assert _shown(report) == {
        ("pyproject.toml", 8, "torch-cuda-index", "error"),
        ("pyproject.toml", 13, "torch-cuda-index", "error"),
    }
    assert [f.line for f in report.findings if f.rule_id == "torch-cuda-index"] == [8]


def test_a_default_cuda_index_stays_at_its_url(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"pyproject.toml": _UV_PYPROJECT.format(explicit="")})
    assert _shown(report) == {("pyproject.toml", 13, "torch-cuda-index", "error")}


def test_a_cuda_library_linked_by_name_in_a_build_without_a_hip_path_is_an_error(
    tmp_path: Path,
) -> None:
    setup_py = (
        "import sys\nfrom setuptools import setup\n"
        "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
        "libraries = []\n"
        'libraries.append("cusparse")\n'
        'windows = sys.platform == "win32"\n'
        'extra = ["cublas"] if windows else []\n'
        'ext = CUDAExtension("m._C", ["k.cu"], libraries=libraries + extra)\n'
        'setup(name="m", ext_modules=[ext], cmdclass={"build_ext": BuildExtension})\n'
    )
    report = _scan(tmp_path, {"setup.py": setup_py})
    assert ("setup.py", 5, "cuda-extension", "error") in _shown(report)
    assert ("setup.py", 7, "cuda-extension", "error") not in _shown(report)  # Windows only


def test_a_cuda_library_in_a_build_with_a_hip_path_is_left_to_it(tmp_path: Path) -> None:
    setup_py = (
        "import torch\nfrom setuptools import setup\n"
        "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
        'libraries = ["hipsparse"] if torch.version.hip else ["cusparse"]\n'
        'ext = CUDAExtension("m._C", ["k.cu"], libraries=libraries)\n'
        'setup(name="m", ext_modules=[ext], cmdclass={"build_ext": BuildExtension})\n'
    )
    report = _scan(tmp_path, {"setup.py": setup_py})
    assert not any(f.evidence.startswith("links NVIDIA") for f in report.findings)
