"""Issue 26, session twenty-seven: each change, with a case where the finding must appear and one
where it must not, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import severities as _found

# -- a compose device reservation that names no driver

_COMPOSE = """services:
  asr:
    image: example/asr:latest
    deploy:
      resources:
        reservations:
          devices:
{devices}
"""


def test_a_compose_reservation_of_gpu_with_no_driver_is_docker_gpus(tmp_path: Path) -> None:
    flow = _COMPOSE.format(devices="            - capabilities: [gpu]")  # line 8
    block = _COMPOSE.format(
        devices="            - count: all\n              capabilities:\n                - gpu"
    )  # capabilities: at line 9
    found = _scan(tmp_path, {"docker-compose.yml": flow, "deploy/serve-compose.yaml": block})
    assert _found(found, "docker-gpus") == {
        ("docker-compose.yml", 8): "warn",
        ("deploy/serve-compose.yaml", 9): "warn",
    }


def test_a_compose_reservation_of_an_nvidia_only_capability_is_compose_nvidia(
    tmp_path: Path,
) -> None:
    # utility and compute are capabilities of NVIDIA's container driver only (AMD's has gpu, amd)
    text = _COMPOSE.format(devices="            - capabilities: [gpu, utility, compute]")
    found = _scan(tmp_path, {"compose.yaml": text})
    assert _found(found, "compose-nvidia") == {("compose.yaml", 8): "error"}
    assert _found(found, "docker-gpus") == {}


def test_a_reservation_that_names_its_driver_or_passes_amd_devices_is_not_docker_gpus(
    tmp_path: Path,
) -> None:
    amd = _COMPOSE.format(devices="            - driver: amd\n              capabilities: [gpu]")
    later = _COMPOSE.format(
        devices="            - capabilities: ['gpu']\n              driver: cdi"
    )
    both = _COMPOSE.format(devices="            - capabilities: [gpu]") + (
        "  rocm:\n    image: rocm/pytorch\n    devices:\n      - /dev/kfd\n      - /dev/dri\n"
    )
    commented = _COMPOSE.format(devices="            # - capabilities: [gpu]")
    found = _scan(
        tmp_path,
        {
            "a/compose.yml": amd,
            "b/compose.yml": later,
            "c/docker-compose.yml": both,
            "d/compose.yml": commented,
        },
    )
    assert _found(found, "docker-gpus") == {("c/docker-compose.yml", 8): "info"}


# -- each line of a CMake build that links a CUDA Toolkit library

_CMAKE = """cmake_minimum_required(VERSION 3.24)
project(kernels LANGUAGES CXX CUDA)
find_package(CUDAToolkit REQUIRED)
add_library(gmm SHARED gmm.cu)
target_link_libraries(gmm PRIVATE CUDA::cublas
    CUDA::cusolver)
add_library(harmony SHARED harmony.cu)
target_link_libraries(harmony PRIVATE CUDA::cublas)
"""


def test_each_line_that_links_a_cuda_toolkit_library_is_a_place_of_the_finding(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"CMakeLists.txt": _CMAKE})
    found = [f for f in report.findings if f.rule_id == "cmake-cuda-only"]
    assert len(found) == 1  # one finding per rule per file, its places listed
    assert {5, 6, 8} <= set(found[0].lines)


# -- RunPod's CUDA images

_RUNPOD = "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04"


def test_runpods_cuda_images_are_cuda_images(tmp_path: Path) -> None:
    found = _scan(
        tmp_path,
        {
            "pods.py": f'DEFAULT_IMAGE = "{_RUNPOD}"\n',  # line 1
            "Dockerfile": f"FROM {_RUNPOD}\nRUN pip install -e .\n",
            "k8s/job.yaml": (
                "apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    spec:\n"
                f"      containers:\n        - name: t\n          image: {_RUNPOD}\n"
            ),  # line 8
        },
    )
    assert _found(found, "cuda-image") == {("pods.py", 1): "error", ("k8s/job.yaml", 8): "error"}
    assert _found(found, "cuda-base-image") == {("Dockerfile", 1): "error"}


def test_runpod_images_whose_tag_names_no_cuda_are_not(tmp_path: Path) -> None:
    found = _scan(
        tmp_path,
        {
            "pods.py": 'IMAGE = "runpod/pytorch:2.1.1-py3.10-rocm6.1-ubuntu22.04"\n',
            "Dockerfile": "FROM runpod/base:0.6.2-cpu\n",
        },
    )
    assert _found(found, "cuda-image", "cuda-base-image") == {}


# -- torch.backends.cudnn.flags(enabled=False): a context manager that turns cuDNN/MIOpen off


def test_cudnn_flags_around_a_convolution_or_in_a_helper_is_cudnn_disabled(tmp_path: Path) -> None:
    code = (
        "import contextlib\n"
        "import torch\n"
        "import torch.nn.functional as F\n\n"
        "def depthwise(x, w):\n"
        "    with torch.backends.cudnn.flags(enabled=False):\n"  # line 6
        "        return F.conv2d(x, w, groups=x.shape[1])\n\n"
        "@contextlib.contextmanager\n"
        "def no_cudnn():\n"
        "    with torch.backends.cudnn.flags(enabled=False):\n"  # line 11: the caller's block
        "        yield\n\n"
        "def later():\n"
        "    return torch.backends.cudnn.flags()\n"  # line 15: enabled defaults to False
    )
    found = _found(_scan(tmp_path, {"heads.py": code}), "cudnn-disabled")
    assert found == {("heads.py", 6): "warn", ("heads.py", 11): "warn", ("heads.py", 15): "warn"}


def test_cudnn_flags_around_a_block_with_no_convolution_or_left_on_is_not(tmp_path: Path) -> None:
    code = (
        "import torch\n"
        "import torch.nn.functional as F\n\n"
        "def sample(img, grid):\n"
        "    with torch.backends.cudnn.flags(enabled=False):\n"  # line 5
        "        return F.grid_sample(img, grid, align_corners=True)\n\n"
        "def fast(x, w):\n"
        "    with torch.backends.cudnn.flags(enabled=True, benchmark=True):\n"
        "        return F.conv2d(x, w)\n"
    )
    found = _found(_scan(tmp_path, {"sampler.py": code}), "cudnn-disabled")
    assert found == {("sampler.py", 5): "info"}


# -- a pip command in a missing-module message ends where the prose starts


def test_packages_only_mentioned_after_a_pip_command_in_a_message_are_not_its_packages(
    tmp_path: Path,
) -> None:
    code = (
        "def load():\n"
        "    try:\n"
        "        import onnxruntime\n"
        "    except ImportError:\n"
        "        raise ImportError(\n"
        '            "Install it with: pip install onnxruntime "\n'
        '            "(or onnxruntime-gpu for GPU support)"\n'
        "        )\n\n"
        "def store():\n"
        "    try:\n"
        "        import faiss\n"
        "    except ImportError:\n"
        "        raise ImportError(\"Install 'pip install faiss-cpu' or 'pip install faiss-gpu'\")\n"
    )
    found = _scan(tmp_path, {"backends.py": code})
    assert [f for f in found.findings if f.severity != "info"] == []


def test_the_pip_command_a_missing_module_message_gives_is_still_read(tmp_path: Path) -> None:
    code = (
        "def serve():\n"
        "    try:\n"
        "        import fastapi\n"
        "    except ImportError:\n"
        '        raise ImportError("needs extras: `pip install vllm fastapi` (see the docs)")\n'
    )
    found = _found(_scan(tmp_path, {"server.py": code}), "vllm-pypi")
    assert found == {("server.py", 5): "warn"}


# -- the comparisons that decide a capability finding are its places


def test_the_comparisons_of_a_stored_capability_are_places_of_its_finding(tmp_path: Path) -> None:
    code = (
        "import torch\n\n"
        "def process(args):\n"
        "    info = torch.cuda.get_device_properties(0)\n"  # line 4: the read
        "    sm_version = info.major * 10 + info.minor\n"
        "    if args.fp8 and sm_version < 89:\n"  # line 6
        "        raise ValueError('FP8 needs Ada or Hopper')\n"
        "    return sm_version\n"
    )
    report = _scan(tmp_path, {"args.py": code})
    found = [f for f in report.findings if f.rule_id == "device-capability"]
    assert len(found) == 1 and found[0].severity == "warn"
    assert {4, 6} <= set(found[0].lines)


# -- a feature predicate that returns a conjunction with a torch.version.cuda test


def test_a_feature_predicate_that_needs_torch_version_cuda_denies_the_feature_on_rocm(
    tmp_path: Path,
) -> None:
    code = (
        "import torch\n\n"
        "def check_bloat16_supported() -> bool:\n"
        "    return (\n"
        "        (torch.version.cuda is not None)\n"  # line 5
        "        and torch.cuda.is_bf16_supported()\n"
        "    )\n\n"
        "def has_bfloat_support():\n"
        "    return torch.cuda.is_available() and bool(torch.version.cuda)\n"  # line 10
    )
    found = _found(_scan(tmp_path, {"utils.py": code}), "torch-version-cuda")
    assert found == {("utils.py", 5): "warn", ("utils.py", 10): "warn"}


def test_a_vendor_predicate_or_a_choice_on_torch_version_cuda_is_not_a_denial(
    tmp_path: Path,
) -> None:
    code = (
        "import torch\n\n"
        "def is_cuda():\n"
        "    return torch.cuda.is_available() and torch.version.cuda is not None\n\n"
        "def cuda_available():\n"
        "    return torch.cuda.is_available() and torch.version.cuda is not None\n\n"
        "def flash_supported():\n"
        "    return torch.cuda.is_available() or torch.version.cuda is not None\n"
    )
    found = _found(_scan(tmp_path, {"device.py": code}), "torch-version-cuda")
    assert "warn" not in found.values() and "error" not in found.values()


# -- inline PTX in the #else of a branch no AMD compile takes is compiled for AMD

_SEMAPHORE = """#include <cuda_runtime.h>

__device__ int fetch(int *lock) {
  int state;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  asm volatile("ld.global.acquire.gpu.b32 %0, [%1];" : "=r"(state) : "l"(lock));
#else
  asm volatile("ld.global.cg.b32 %0, [%1];" : "=r"(state) : "l"(lock));
#endif
  return state;
}
"""


def test_ptx_in_the_else_of_a_cuda_arch_test_is_compiled_for_amd(tmp_path: Path) -> None:
    found = _found(_scan(tmp_path, {"semaphore.cuh": _SEMAPHORE}), "cuda-inline-ptx")
    assert found.get(("semaphore.cuh", 8)) == "error"


def test_ptx_in_the_else_of_an_amd_test_is_not_compiled_for_amd(tmp_path: Path) -> None:
    source = _SEMAPHORE.replace(
        "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700\n"
        '  asm volatile("ld.global.acquire.gpu.b32 %0, [%1];" : "=r"(state) : "l"(lock));\n',
        "#if defined(__HIP_PLATFORM_AMD__)\n  state = __atomic_load_n(lock, __ATOMIC_ACQUIRE);\n",
    )
    found = _found(_scan(tmp_path, {"semaphore.cuh": source}), "cuda-inline-ptx")
    assert "error" not in found.values() and "warn" not in found.values()


# -- torch.cuda.get_gencode_flags() raises on a ROCm torch


def test_get_gencode_flags_is_an_error_and_other_arch_queries_are_not(tmp_path: Path) -> None:
    code = (
        "import torch\n"
        "from torch import cuda\n\n"
        "archs = cuda.get_gencode_flags().replace('compute=', 'arch=').split()\n"  # line 4
        "names = torch.cuda.get_arch_list()\n"
        "flags = torch.cuda.get_device_name()\n"
    )
    found = _found(_scan(tmp_path, {"setup.py": code}), "nvcc-only-flags")
    assert found == {("setup.py", 4): "error"}
