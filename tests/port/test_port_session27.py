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
