"""Issue 26, session ten: `nvidia.com/gpu` in Python is NVIDIA's Kubernetes resource only where
a Kubernetes object is read or written; elsewhere it is a name of the project's own. Each case
with one where the finding must stay, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan

from rocmkit.port.findings import PortFinding

_RULE = "container-nvidia-gpu"


def _by_line(root: Path, files: dict[str, str]) -> dict[int, PortFinding]:
    report = _scan(root, files)
    return {line: f for f in report.findings if f.rule_id == _RULE for line in f.lines}


# A serving framework's own resource config: the key names the GPU kind its allocator hands out.
_OWN_KEY = """NVIDIA_GPU = "nvidia.com/gpu"


class Runnable:
    SUPPORTED_RESOURCES = ("nvidia.com/gpu", "cpu")


def workers(config: dict) -> int:
    gpus = config.get("nvidia.com/gpu", [])
    return len(gpus)
"""


def test_a_resource_key_of_the_projects_own_config_is_info_with_the_reason(
    tmp_path: Path,
) -> None:
    found = _by_line(tmp_path, {"serve/resources.py": _OWN_KEY})
    assert set(found) == {1, 5, 9}
    assert {f.severity for f in found.values()} == {"info"}
    assert "no Kubernetes object" in found[1].evidence


def test_the_resource_in_a_pod_specs_limits_is_still_an_error(tmp_path: Path) -> None:
    spec = """def container(gpus: int) -> dict:
    limits = {"cpu": "4"}
    if gpus:
        limits["nvidia.com/gpu"] = str(gpus)
    return {"name": "worker", "resources": {"limits": limits}}
"""
    found = _by_line(tmp_path, {"launch/k8s.py": spec})
    assert found[4].severity == "error"
    assert "Kubernetes resource" in found[4].evidence


def test_a_node_capacity_read_or_a_client_model_counts_as_kubernetes(tmp_path: Path) -> None:
    capacity = """def gpu_nodes(nodes: list) -> list:
    return [n for n in nodes if int(n["status"]["capacity"].get("nvidia.com/gpu", 0))]
"""
    client = """from kubernetes import client


def resources(n: int):
    return client.V1ResourceRequirements(requests={"nvidia.com/gpu": n})
"""
    found = _by_line(tmp_path, {"ops/nodes.py": capacity, "ops/pods.py": client})
    assert found[2].severity == "error" and found[5].severity == "error"
    assert {f.path for f in found.values()} == {"ops/nodes.py", "ops/pods.py"}


# -- Apptainer / Singularity --nv ------------------------------------------------------------------


def _apptainer(root: Path, files: dict[str, str]) -> set[tuple[str, int, str]]:
    report = _scan(root, files, show_info=True)
    return {
        (f.path, line, f.severity)
        for f in report.findings
        if f.rule_id == "apptainer-nv"
        for line in f.lines
    }


def test_a_script_that_binds_rocm_on_amd_hosts_is_one_side_of_a_choice(tmp_path: Path) -> None:
    script = """#!/bin/bash
if command -v rocm-smi >/dev/null; then GPU=--rocm; else GPU=--nv; fi
apptainer exec --nv image.sif python train.py
"""
    assert _apptainer(tmp_path / "a", {"run.sh": script}) == set()
    alone = "#!/bin/bash\napptainer exec --nv image.sif python train.py\n"
    assert _apptainer(tmp_path / "b", {"run.sh": alone}) == {("run.sh", 2, "warn")}


def test_python_argv_nv_needs_apptainer_in_the_module_and_rocm_makes_it_info(
    tmp_path: Path,
) -> None:
    both = 'ARGS = ["singularity", "exec"]\nNV = ["--nv"]\nROCM = ["--rocm"]\n'
    other = 'ARGS = ["mytool", "--nv"]\n'
    found = _apptainer(tmp_path, {"a.py": both, "b.py": other})
    assert found == {("a.py", 2, "info")}


# -- CDI device names -----------------------------------------------------------------------------


def test_a_cdi_device_beside_amds_in_one_module_is_one_side_of_a_choice(tmp_path: Path) -> None:
    module = """def devices(vendor: str) -> list[str]:
    if vendor == "amd":
        return ["--device", "amd.com/gpu=all"]
    return ["--device", "nvidia.com/gpu=all"]
"""
    report = _scan(tmp_path, {"gpu.py": module}, show_info=True)
    found = {(f.rule_id, f.severity, line) for f in report.findings for line in f.lines}
    assert found == {("cdi-nvidia-device", "info", 4)}


def test_a_cdi_device_under_a_visible_devices_test_is_that_tests_side(tmp_path: Path) -> None:
    module = """import os


def args() -> list[str]:
    found = ["--device", "/dev/kfd"]
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        found += ["--device", "nvidia.com/gpu=all"]
    return found
"""
    report = _scan(tmp_path, {"engine.py": module}, show_info=True)
    found = {(f.rule_id, f.severity, line) for f in report.findings for line in f.lines}
    assert ("cuda-visible-devices", "warn", 6) in found
    assert ("cdi-nvidia-device", "info", 7) in found


# -- a 32-bit mask read only by a call no AMD compile takes ---------------------------------------

_VERSIONED_SHUFFLE = """template <typename T>
__device__ T shfl_xor(T value, int lane, int width = warpSize, unsigned int mask = 0xffffffff)
{
#if CUDA_VERSION >= 9000
    return __shfl_xor_sync(mask, value, lane, width);
#else
    return __shfl_xor(value, lane, width);
#endif
}

__device__ float reduce(float v) {
    unsigned int all = 0xffffffff;
    return v + __shfl_down_sync(all, v, 1);
}
"""


def test_a_mask_declared_for_a_branch_hip_never_compiles_is_info(tmp_path: Path) -> None:
    # HIP defines no CUDA_VERSION: the _sync call and the parameter only it reads are dead on AMD;
    # the mask a compiled call reads stays an error
    report = _scan(tmp_path, {"kernels/softmax.h": _VERSIONED_SHUFFLE}, show_info=True)
    found = {
        (line, f.severity)
        for f in report.findings
        if f.rule_id == "cuda-warp-mask-32"
        for line in f.lines
    }
    assert {(2, "info"), (5, "info")} <= found
    assert {(12, "error"), (13, "error")} <= found


# -- an import under a find_spec test ----------------------------------------------------------------

_SPEC_GATED = """import importlib.util


def is_bnb_available():
    return importlib.util.find_spec("bitsandbytes") is not None


if is_bnb_available():
    import bitsandbytes as bnb

if importlib.util.find_spec("pycuda") is not None:
    import pycuda.driver

if is_bnb_available():
    import pycuda.autoinit
"""


def test_an_import_under_a_find_spec_test_is_optional(tmp_path: Path) -> None:
    # importlib.util.find_spec gives None where the module is not installed: the body runs only
    # where it is; a test of another module guards nothing (pycuda under the bnb test)
    report = _scan(tmp_path, {"engine/lora.py": _SPEC_GATED}, show_info=True)
    found = {(line, f.severity) for f in report.findings for line in f.lines}
    assert {(9, "info"), (12, "info")} <= found
    assert (15, "error") in found
    reasons = {line: f.evidence for f in report.findings for line in f.lines}
    assert "only where find_spec finds it" in reasons[9]


# -- a command a helper returns, run where its name is handed on ----------------------------------

_ENV_REPORT = """import re


def get_nvidia_smi():
    smi = "nvidia-smi"
    return smi


def get_driver_version(run_lambda):
    smi = get_nvidia_smi()
    return parse(run_lambda, smi, r"Driver Version: (.*?) ")


def get_gpu_info(run_lambda):
    smi = get_nvidia_smi()
    print(smi)
    rc, out, _ = run_lambda(smi + " -L")
    return out
"""


def _command_lines(root: Path, files: dict[str, str]) -> set[tuple[int, str]]:
    report = _scan(root, files, show_info=True)
    return {
        (line, f.severity) for f in report.findings if f.rule_id == "nvidia-smi" for line in f.lines
    }


def test_a_returned_command_is_found_where_its_name_is_handed_to_a_call(tmp_path: Path) -> None:
    # torch's collect_env shape: the helper only names the tool; the callers run it (through a
    # function they are given); a print of the name runs nothing
    # (session twenty-one: the helper's line that names the tool is a place of the finding too)
    found = _command_lines(tmp_path / "a", {"env.py": _ENV_REPORT})
    assert found == {(5, "warn"), (11, "warn"), (17, "warn")}
    # a module that looks at ROCm (torch.version.hip) keeps the finding at the name
    aware = _ENV_REPORT + "\nHIP = __import__('torch').version.hip\n"
    assert _command_lines(tmp_path / "b", {"env.py": aware}) == {(5, "warn")}


def test_a_helper_that_returns_what_the_tool_printed_keeps_the_finding_at_its_launch(
    tmp_path: Path,
) -> None:
    module = """from subprocess import getoutput


def gpu_memory():
    out = getoutput("nvidia-smi --query-gpu=memory.total --format=csv")
    return out


def report():
    mem = gpu_memory()
    return len(mem)
"""
    assert _command_lines(tmp_path, {"mem.py": module}) == {(5, "warn")}


# -- a CMake switch for a CUDA backend with none for HIP ----------------------------------------------

_CUDA_SWITCH = """cmake_minimum_required(VERSION 3.18)
project(harmonics LANGUAGES CXX)
option(HARMONICS_ENABLE_CUDA "Build the CUDA backend" OFF)
if (HARMONICS_ENABLE_CUDA)
    list(APPEND SOURCES "src/cuda_base.cpp")
else()
    list(APPEND SOURCES "src/cuda_stub.cpp")
endif()
"""


def test_a_cmake_cuda_switch_without_a_hip_one_is_reported_at_the_option_and_its_if(
    tmp_path: Path,
) -> None:
    def lines(root: Path, text: str) -> set[int]:
        report = _scan(root, {"CMakeLists.txt": text}, show_info=True)
        return {line for f in report.findings if f.rule_id == "cmake-cuda-only" for line in f.lines}

    assert lines(tmp_path / "a", _CUDA_SWITCH) == {3, 4}
    # a HIP switch beside it, or a switch that only brings in other CMake files (judged there)
    hip = _CUDA_SWITCH + 'option(HARMONICS_ENABLE_HIP "Build the HIP backend" OFF)\n'
    assert lines(tmp_path / "b", hip) == set()
    delegating = _CUDA_SWITCH.replace(
        'list(APPEND SOURCES "src/cuda_base.cpp")', "add_subdirectory(cuda)"
    )
    assert lines(tmp_path / "c", delegating) == set()


# -- a number computed from a stored capability --------------------------------------------------


def test_a_number_made_from_a_stored_capability_is_judged_where_it_is_compared(
    tmp_path: Path,
) -> None:
    module = """import torch


def supports_fp8() -> bool:
    if torch.cuda.is_available():
        capability = torch.cuda.get_device_capability()
        actual = capability[0] * 10 + capability[1]
        return actual >= 89
    return False
"""
    report = _scan(tmp_path, {"platform.py": module}, show_info=True)
    (finding,) = [f for f in report.findings if f.rule_id == "device-capability"]
    assert finding.severity == "warn" and "(8, 9), NVIDIA's FP8 line" in finding.evidence


def test_a_threshold_kept_in_a_name_is_read_as_its_constant(tmp_path: Path) -> None:
    module = """import torch
from typing import Final


class Platform:
    def supports_fp8(self) -> bool:
        if torch.cuda.is_available():
            min_fp8: Final = 89

            capability = torch.cuda.get_device_capability()
            actual = capability[0] * 10 + capability[1]
            return actual >= min_fp8
        return True


def fallback_needed() -> bool:
    needed = (7, 0)
    return torch.cuda.get_device_capability() < needed
"""
    report = _scan(tmp_path, {"platform.py": module}, show_info=True)
    found = {
        (line, f.severity): f.evidence
        for f in report.findings
        if f.rule_id == "device-capability"
        for line in f.lines
    }
    assert "NVIDIA's FP8 line" in found[(10, "warn")]
    # below (7, 0) every AMD GPU takes the right branch: the named threshold is read as safe
    assert (18, "info") in found


# -- torch's CUDA_HOME is None on ROCm ---------------------------------------------------------------

_CUDA_HOME_BUILD = """import os

from torch.utils.cpp_extension import CUDA_HOME


def nvcc() -> str:
    return CUDA_HOME + "/bin/nvcc"


def include() -> str:
    if CUDA_HOME is None:
        raise RuntimeError("no CUDA toolkit")
    return os.path.join(CUDA_HOME, "include")
"""


def test_a_path_made_from_torchs_cuda_home_is_an_error_unless_tested_or_rocm_built(
    tmp_path: Path,
) -> None:
    def found(root: Path, text: str) -> set[tuple[int, str]]:
        report = _scan(root, {"build.py": text}, show_info=True)
        return {
            (line, f.severity)
            for f in report.findings
            if f.rule_id == "cuda-home-none"
            for line in f.lines
        }

    assert found(tmp_path / "a", _CUDA_HOME_BUILD) == {(7, "error"), (13, "info")}
    rocm = _CUDA_HOME_BUILD + "\nfrom torch.utils.cpp_extension import ROCM_HOME\n"
    assert found(tmp_path / "b", rocm) == {(7, "info"), (13, "info")}


# -- JAX lowerings registered for the cuda platform only -------------------------------------------


def test_a_jax_lowering_for_cuda_alone_is_an_error_and_beside_rocm_is_info(tmp_path: Path) -> None:
    alone = """from jax.interpreters import mlir

mlir.register_lowering(prim, lower_cpu, platform="cpu")
mlir.register_lowering(prim, lower_gpu, "cuda")
"""
    both = alone + 'mlir.register_lowering(prim, lower_gpu, platform="rocm")\n'
    report = _scan(tmp_path, {"a/ops.py": alone, "b/ops.py": both}, show_info=True)
    found = {
        (f.path, line, f.severity)
        for f in report.findings
        if f.rule_id == "jax-cuda-platform"
        for line in f.lines
    }
    assert found == {("a/ops.py", 4, "error"), ("b/ops.py", 4, "info")}


# -- a framework's CUDA image named with its registry ---------------------------------------------


def test_a_cuda_image_with_docker_hubs_registry_in_front_is_found(tmp_path: Path) -> None:
    module = """PYTORCH_IMAGE = "docker.io/pytorch/pytorch:2.1.2-cuda11.8-cudnn8-runtime"
PADDLE_IMAGE = "docker.io/paddlepaddle/paddle:2.4.0rc0-gpu-cuda11.2-cudnn8.1-trt8.0"
ROCM_IMAGE_NAME = "rocm/pytorch:latest"
OTHER = "quay.io/example/pytorch/pytorch:2.1-cuda11.8"
"""
    report = _scan(tmp_path, {"constants.py": module}, show_info=True)
    found = {line for f in report.findings if f.rule_id == "cuda-image" for line in f.lines}
    assert found == {1, 2}
