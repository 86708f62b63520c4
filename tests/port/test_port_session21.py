"""Issue 26, session twenty-one: each change, with a case where the finding must appear and one
where it must not, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import severities as _found

# -- NVML beside a project's AMD SMI path: only the modules of the vendor choice are its NVIDIA side

_AMD_COLLECTOR = """import amdsmi


def power(handle):
    amdsmi.amdsmi_init()
    return amdsmi.amdsmi_get_power_info(handle)
"""

_NVML_COLLECTOR = """import pynvml


def power(index):
    pynvml.nvmlInit()
    return pynvml.nvmlDeviceGetPowerUsage(pynvml.nvmlDeviceGetHandleByIndex(index))
"""

_CHOOSER = """import amdsmi
import pynvml


def start():
    try:
        pynvml.nvmlInit()
        return "nvidia"
    except pynvml.NVMLError:
        amdsmi.amdsmi_init()
        return "amd"
"""

_POWER_CAP = """import subprocess

import pynvml


def cap(index, watts):
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    pynvml.nvmlDeviceSetPowerManagementLimit(handle, watts * 1000)
    subprocess.run(["nvidia-smi", "-i", str(index), "-pl", str(watts)], check=True)
"""


def test_nvml_outside_the_projects_vendor_choice_keeps_its_severity(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "agent/amd_collector.py": _AMD_COLLECTOR,
            "agent/collector.py": _NVML_COLLECTOR,  # the AMD twin beside it: one side of a pair
            "agent/backends/nvidia.py": _NVML_COLLECTOR,  # the NVIDIA back end by name
            "agent/detect.py": _CHOOSER,  # chooses in the module itself
            "agent/power_control.py": _POWER_CAP,  # calls NVML on its own: no AMD side
        },
    )
    found = _found(report, "nvml", "nvidia-smi")
    assert found[("agent/power_control.py", 7)] != "info"
    assert found[("agent/power_control.py", 10)] != "info"
    for module in ("agent/collector.py", "agent/backends/nvidia.py", "agent/detect.py"):
        lines = [severity for (path, _), severity in found.items() if path == module]
        assert lines, module
        assert set(lines) == {"info"}, module
    notes = {f.path: f.note for f in report.findings if f.rule_id == "nvml"}
    assert "agent/amd_collector.py" in notes["agent/collector.py"]
    assert "AMD SMI" not in notes.get("agent/power_control.py", "")


def test_nvml_in_a_project_without_an_amd_side_is_unchanged(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"agent/collector.py": _NVML_COLLECTOR})
    found = _found(report, "nvml")
    assert found and "info" not in set(found.values())


# -- Ray's opt-out of GPU pinning, set for NVIDIA only -------------------------------------------

_RAY_ACTOR = """import ray

ENV = {"env_vars": {"RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES": "1"}}


def launch(engine):
    return ray.remote(num_gpus=1)(engine).options(runtime_env=ENV).remote()
"""

_EVERY_VENDOR = """NOSET = [
    "RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES",
    "RAY_EXPERIMENTAL_NOSET_ROCR_VISIBLE_DEVICES",
    "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES",
]
"""


def test_ray_noset_for_nvidia_only_is_an_error(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"serve/actors.py": _RAY_ACTOR})
    found = _found(report, "ray-noset-cuda-visible-devices")
    assert found == {("serve/actors.py", 3): "error"}
    finding = next(f for f in report.findings if f.rule_id == "ray-noset-cuda-visible-devices")
    assert "RAY_EXPERIMENTAL_NOSET_ROCR_VISIBLE_DEVICES" in finding.fix


def test_ray_noset_in_a_project_that_also_sets_the_amd_opt_out_is_info(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"serve/actors.py": _RAY_ACTOR, "serve/noset.py": _EVERY_VENDOR})
    found = _found(report, "ray-noset-cuda-visible-devices")
    assert found == {("serve/actors.py", 3): "info", ("serve/noset.py", 2): "info"}
    notes = {f.note for f in report.findings if f.rule_id == "ray-noset-cuda-visible-devices"}
    assert notes == {"the project also sets Ray's AMD opt-out (serve/noset.py)"}


# -- NVIDIA's Kubernetes resource handed to a job builder as its GPU type -------------------------

_JOB_EXAMPLE = """from myjobs import KubernetesJob

job = KubernetesJob(
    name="train",
    image="rocm/pytorch:latest",
    gpu_type="nvidia.com/gpu",
    gpu_limit=1,
)
job.run()
"""

_RESOURCE_CONFIG = """from myjobs import Resources

DEFAULT = Resources(resource_type="nvidia.com/gpu", count=1)
KNOWN = {"nvidia.com/gpu": "GPU"}
"""


def test_nvidia_resource_given_to_a_builder_as_its_gpu_type_is_a_request(tmp_path: Path) -> None:
    report = _scan(
        tmp_path, {"examples/job.py": _JOB_EXAMPLE, "myjobs/config.py": _RESOURCE_CONFIG}
    )
    found = _found(report, "container-gpu-request", "container-nvidia-gpu")
    assert found[("examples/job.py", 6)] == "error"
    # a module that speaks no Kubernetes and hands the name to no GPU keyword: a name of its own
    assert found[("myjobs/config.py", 3)] == "info"
    assert found[("myjobs/config.py", 4)] == "info"


# -- A Rust core's Cargo.toml: CUDA-only crates and CUDA features ------------------------------

_CORE = """[package]
name = "core"
version = "0.1.0"

[dependencies]
candle-core = "0.8"
ort = { version = "2.0.0-rc.9", default-features = false }

[target.'cfg(target_os = "linux")'.dependencies]
cudarc = { version = "0.12", optional = true }

[features]
cuda = ["candle-core/cuda", "dep:cudarc"]
"""

_BINDING = """[package]
name = "core-python"
version = "0.1.0"

[dependencies]
core = { path = "../core", features = ["ort"] }

[features]
cuda = ["core/cuda"]
"""

_BOTH_VENDORS = """[package]
name = "ort-runner"
version = "0.1.0"

[dependencies]
ort = "2.0.0-rc.9"

[workspace.dependencies]
cudarc = "0.12"

[features]
cuda = ["ort/cuda"]
rocm = ["ort/rocm"]
"""


def test_cargo_crates_and_features_that_build_for_cuda_alone(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "core/Cargo.toml": _CORE,
            "python/Cargo.toml": _BINDING,
            "runner/Cargo.toml": _BOTH_VENDORS,
            "python/pyproject.toml": '[build-system]\nrequires = ["maturin>=1.5"]\n',
        },
    )
    crates = _found(report, "cargo-cuda-crate")
    features = _found(report, "cargo-cuda-feature")
    assert crates == {("core/Cargo.toml", 10): "error"}  # not the workspace's version table
    # the binding forwards to its own crate's feature (a path dependency): judged there
    assert features == {("core/Cargo.toml", 13): "warn", ("runner/Cargo.toml", 12): "info"}


def test_a_cargo_manifest_without_cuda_is_not_read(tmp_path: Path) -> None:
    manifest = '[package]\nname = "x"\n\n[dependencies]\nserde = "1"\n'
    report = _scan(tmp_path, {"Cargo.toml": manifest})
    assert report.num_files.get("cargo", 0) == 0
    assert not report.findings


# -- The CUDA driver looked up by its link name ---------------------------------------------------

_DRIVER_LOOKUP = """import ctypes
from ctypes.util import find_library


def count_gpus():
    path = find_library('cuda')
    if not path:
        return 0
    driver = ctypes.CDLL(path)
    driver.cuInit(0)
    return 1


def load_runtime():
    return find_library("cudart")
"""


def test_find_library_of_the_cuda_driver_is_a_driver_load(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"pkg/gpu_detect.py": _DRIVER_LOOKUP})
    found = _found(report, "cuda-driver-library")
    assert found == {("pkg/gpu_detect.py", 6): "warn"}  # the runtime's lookup is not the driver
    finding = next(f for f in report.findings if f.rule_id == "cuda-driver-library")
    assert "find_library('cuda')" in finding.evidence


# -- Container variables, CUDA images and CDI names written into a project's tests ---------------

_DEPLOYER = """def container_env(gpus):
    return {"NVIDIA_VISIBLE_DEVICES": ",".join(gpus), "image": "nvidia/cuda:12.4.1-base-ubuntu22.04"}
"""

_DEPLOYER_TEST = """from deployer import container_env


def test_env():
    env = container_env(["0"])
    assert env["NVIDIA_VISIBLE_DEVICES"] == "0"
    assert env["image"] == "nvidia/cuda:12.4.1-base-ubuntu22.04"
    assert "nvidia.com/gpu=all" not in env.values()
"""


def test_container_values_in_tests_are_test_data(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"deployer.py": _DEPLOYER, "tests/test_deployer.py": _DEPLOYER_TEST})
    found = _found(report, "nvidia-container-env", "cuda-image", "cdi-nvidia-device")
    assert found[("deployer.py", 2)] != "info"
    in_tests = {
        line: severity for (path, line), severity in found.items() if path.startswith("tests/")
    }
    assert set(in_tests) == {6, 7, 8}
    assert set(in_tests.values()) == {"info"}


# -- ONNX Runtime provider lists beside an unrelated ROCm test ------------------------------------

_PADDLE_LIKE = """import os

import onnxruntime as ort
import paddle


def gpu_id():
    if not paddle.device.is_compiled_with_rocm:
        return int(os.environ.get("CUDA_VISIBLE_DEVICES", "0"))
    return int(os.environ.get("HIP_VISIBLE_DEVICES", "0"))


def create_session(path, use_gpu):
    if use_gpu:
        return ort.InferenceSession(
            path, providers=[("CUDAExecutionProvider", {"device_id": gpu_id()})]
        )
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"])
"""

_VENDOR_SWITCH = """import onnxruntime as ort


def cuda_session(path):
    return ort.InferenceSession(path, providers=["CUDAExecutionProvider"])


def session(path, rocm):
    if rocm:
        return load_migraphx_session(path)
    return cuda_session(path)
"""


def test_a_provider_list_beside_an_unrelated_rocm_test_is_reported(tmp_path: Path) -> None:
    report = _scan(
        tmp_path, {"infer/utility.py": _PADDLE_LIKE, "serve/sessions.py": _VENDOR_SWITCH}
    )
    found = _found(report, "ort-nvidia-provider")
    assert found.get(("infer/utility.py", 16)) == "warn"
    # the list a ROCm branch chooses against (load_migraphx_session beside it): not a warning
    assert not [
        line for (path, line), s in found.items() if path == "serve/sessions.py" and s != "info"
    ]


# -- ONNX Runtime providers appended from C++ ------------------------------------------------------

_CPP_SESSION = """#include <onnxruntime_cxx_api.h>

// AppendExecutionProvider_CUDA in a comment is not a call
Ort::SessionOptions Options(bool gpu) {
  Ort::SessionOptions options;
  if (gpu) {
    OrtCUDAProviderOptions cuda;
    options.AppendExecutionProvider_CUDA(cuda);
  }
  return options;
}
"""

_CPP_BOTH = _CPP_SESSION.replace(
    "  return options;", '  if (HasProvider("MIGraphXExecutionProvider")) {}\n  return options;'
)


def test_cpp_sessions_that_append_only_nvidia_providers(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {"csrc/session.cc": _CPP_SESSION, "csrc/both.cc": _CPP_BOTH, "csrc/plain.cc": "int x;\n"},
    )
    found = _found(report, "ort-nvidia-provider")
    assert found == {("csrc/session.cc", 8): "warn", ("csrc/both.cc", 8): "info"}
    assert report.num_files.get("cpp-ort") == 2  # plain.cc names no provider: not read


# -- Paddle Inference's TensorRT engine -----------------------------------------------------------


def test_paddle_tensorrt_engine_and_converter(tmp_path: Path) -> None:
    predictor = (
        "from paddle import inference\n\n\n"
        "def predictor(config: inference.Config, trt: bool):\n"
        "    if trt:\n"
        "        config.enable_tensorrt_engine(workspace_size=1 << 30)\n"
        "    config.enable_use_gpu(500, 0)\n"
        "    return inference.create_predictor(config)\n"
    )
    convert = "def convert(program):\n    from paddle.tensorrt.export import convert\n\n    return convert(program)\n"
    report = _scan(tmp_path, {"infer/predictor.py": predictor, "infer/export.py": convert})
    assert _found(report, "paddle-tensorrt") == {("infer/predictor.py", 6): "warn"}
    assert ("infer/export.py", 2) in _found(report, "tensorrt")
