"""Issue 26, session fifteen: each change, with a case where the finding must appear and one where
it must not (or where it must stay put), on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan


def _found(report: object, *rules: str) -> set[tuple[str, int, str]]:
    """(path, line, severity) of every line of the given rules' findings."""
    return {
        (f.path, line, f.severity)
        for f in report.findings  # type: ignore[attr-defined]
        if f.rule_id in rules
        for line in f.lines
    }


# -- Triton's CUDA libdevice: imported but never called ---------------------------------------------

# fp8-coat's header, copied into every kernel module: only some modules call libdevice.
_HEADER = """import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice
"""
_CALLS = """

@triton.jit
def silu(x_ptr, out_ptr):
    x = tl.load(x_ptr)
    tl.store(out_ptr, x / (1 + libdevice.exp(-x)))
"""
_NO_CALL = """

@triton.jit
def add(x_ptr, y_ptr, out_ptr):
    tl.store(out_ptr, tl.load(x_ptr) + tl.load(y_ptr))  # libdevice is not needed here
"""


def test_a_cuda_libdevice_import_the_module_never_uses_is_info_and_a_used_one_an_error(
    tmp_path: Path,
) -> None:
    files = {
        "silu.py": _HEADER + _CALLS,
        "add.py": _HEADER + _NO_CALL,
        # an alias, and names imported from the wrapper itself, count where they are used
        "alias.py": _HEADER.replace("import libdevice", "import libdevice as ld")
        + _CALLS.replace("libdevice.exp", "ld.exp"),
        "names.py": _HEADER.replace(
            "extra.cuda import libdevice", "extra.cuda.libdevice import exp"
        )
        + _CALLS.replace("libdevice.exp", "exp"),
        "unused_names.py": _HEADER.replace(
            "extra.cuda import libdevice", "extra.cuda.libdevice import exp, tanh as th"
        )
        + _NO_CALL,
    }
    found = _found(_scan(tmp_path, files), "triton-cuda-libdevice")
    assert found == {
        ("silu.py", 4, "error"),
        ("alias.py", 4, "error"),
        ("names.py", 4, "error"),
        ("add.py", 4, "info"),  # the word in a comment is no use
        ("unused_names.py", 4, "info"),
    }


# -- uv.lock: torch locked as the CUDA build -------------------------------------------------------


def _lock(*packages: str) -> str:
    return 'version = 1\nrequires-python = ">=3.10"\n\n' + "\n".join(packages)


# PyPI's torch as uv locks it on Linux (mini-vllm's shape): NVIDIA's runtime wheels as dependencies.
_PYPI_TORCH = """[[package]]
name = "torch"
version = "2.9.1"
source = { registry = "https://pypi.org/simple" }
dependencies = [
    { name = "filelock" },
    { name = "nvidia-cublas-cu12", marker = "platform_machine == 'x86_64' and sys_platform == 'linux'" },
]
"""
# The same release locked for macOS only (tabm's other entry): its NVIDIA wheels never apply.
_MAC_TORCH = _PYPI_TORCH.replace("and sys_platform == 'linux'", "and sys_platform == 'darwin'")
# A torch from PyTorch's ROCm index beside it, chosen by an extra.
_ROCM_TORCH = """[[package]]
name = "torch"
version = "2.9.1+rocm6.4"
source = { registry = "https://download.pytorch.org/whl/rocm6.4" }
dependencies = [{ name = "filelock" }, { name = "pytorch-triton-rocm" }]
"""
_CU_TORCH = """[[package]]
name = "torch"
version = "2.9.1+cu128"
source = { registry = "https://download.pytorch.org/whl/cu128" }
wheels = [
    { url = "https://download.pytorch.org/whl/cu128/torch-2.9.1%2Bcu128-cp311-cp311-manylinux_2_28_x86_64.whl" },
]
"""
_CU_WINDOWS_TORCH = _CU_TORCH.replace("manylinux_2_28_x86_64", "win_amd64")


def test_a_uv_lock_with_the_cuda_torch_for_linux_is_reported_at_the_torch_entry(
    tmp_path: Path,
) -> None:
    files = {
        "pypi/uv.lock": _lock(_MAC_TORCH, _PYPI_TORCH),
        "cu/uv.lock": _lock(_CU_TORCH),
        "mac/uv.lock": _lock(_MAC_TORCH),
        "windows/uv.lock": _lock(_CU_WINDOWS_TORCH),
        "both/uv.lock": _lock(_PYPI_TORCH, _ROCM_TORCH),
    }
    assert _found(_scan(tmp_path, files), "uv-lock-cuda-torch") == {
        ("pypi/uv.lock", 14, "warn"),  # the `name = "torch"` line of the Linux entry
        ("cu/uv.lock", 5, "warn"),
        ("both/uv.lock", 5, "info"),  # an extra or a marker picks the ROCm torch
    }


# -- extras named for CUDA that pull CuPy's or JAX's CUDA build ------------------------------------

# thinc's shape: one extra per CUDA release, each pulling that release's CuPy wheel, no ROCm one.
_SETUP_CFG = """[metadata]
name = arrays

[options]
install_requires =
    numpy>=1.19

[options.extras_require]
cuda80 =
    cupy-cuda80>=5.0.0b4
cuda12x =
    cupy-cuda12x>=11.5.0
"""


def test_cuda_named_extras_of_cupy_or_jax_are_reported_when_no_rocm_build_is_offered(
    tmp_path: Path,
) -> None:
    # CuPy publishes ROCm wheels (cupy-rocm-5-0): an AMD user of this project has no extra to ask
    bare = _scan(tmp_path / "a", {"setup.cfg": _SETUP_CFG})
    assert _found(bare, "cupy-cuda", "jax-cuda-extra") == {
        ("setup.cfg", 10, "warn"),
        ("setup.cfg", 12, "warn"),
    }
    # the same extras beside one that installs the ROCm wheel are the NVIDIA variants: info
    offered = _SETUP_CFG + "rocm =\n    cupy-rocm-5-0>=13\n"
    offered_found = _found(
        _scan(tmp_path / "b", {"setup.cfg": offered}), "cupy-cuda", "jax-cuda-extra"
    )
    assert offered_found == {("setup.cfg", 10, "info"), ("setup.cfg", 12, "info")}
    # JAX's CUDA extra in an extra named for CUDA, likewise (numpyro's shape)
    jax = '[project]\nname = "p"\n[project.optional-dependencies]\ncuda12 = ["jax[cuda12]>=0.7"]\n'
    assert _found(
        _scan(tmp_path / "c", {"pyproject.toml": jax}), "cupy-cuda", "jax-cuda-extra"
    ) == {("pyproject.toml", 4, "warn")}
    rocm = jax + 'rocm = ["jax[rocm7-local]>=0.7"]\n'
    assert _found(
        _scan(tmp_path / "d", {"pyproject.toml": rocm}), "cupy-cuda", "jax-cuda-extra"
    ) == {("pyproject.toml", 4, "info")}


def test_a_gpu_extra_installing_tensorflow_gpu_is_reported(tmp_path: Path) -> None:
    # bert-serving-server's shape: extras_require={"gpu": ["tensorflow-gpu>=1.10.0"]}
    setup = (
        "from setuptools import setup\n\n"
        'setup(name="srv", extras_require={"cpu": ["tensorflow>=1.10.0"],\n'
        '      "gpu": ["tensorflow-gpu>=1.10.0"]})\n'
    )
    report = _scan(tmp_path, {"setup.py": setup})
    found = {(f.line, f.rule_id, f.severity) for f in report.findings}
    assert (4, "cuda-gpu-framework", "warn") in found
    # the CPU extra's tensorflow is no GPU request
    assert not [f for f in report.findings if f.line == 3 and f.severity != "info"]


# -- NVML queried through a binding another module holds ------------------------------------------

# labml's shape: the scanner imports py3nvml and initialises it; the process monitor is handed it.
_SCANNER = """try:
    from py3nvml import py3nvml as nvml
except ImportError:
    nvml = None

from .process import ProcessMonitor


def scan():
    nvml.nvmlInit()
    return ProcessMonitor(nvml)
"""
_PROCESS = """class ProcessMonitor:
    def __init__(self, nvml):
        self.nvml = nvml

    def track(self, idx):
        handle = self.nvml.nvmlDeviceGetHandleByIndex(idx)
        return self.nvml.nvmlDeviceGetComputeRunningProcesses(handle)
"""


def test_nvml_queries_through_a_binding_another_module_holds_are_reported(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path / "a", {"mon/scanner.py": _SCANNER, "mon/process.py": _PROCESS})
    process = [f for f in report.findings if f.path == "mon/process.py"]
    assert [(f.rule_id, f.severity, f.lines) for f in process] == [("nvml", "warn", (6, 7))]
    # a module that also reads AMD's management library has the other vendor's side
    amd = _PROCESS.replace("class ProcessMonitor:", "import amdsmi\n\n\nclass ProcessMonitor:")
    quiet = _scan(tmp_path / "b", {"mon/process.py": amd})
    assert not [f for f in quiet.findings if f.rule_id == "nvml"]


# -- an out-of-memory error recognised by CUDA's words only --------------------------------------

_OOM = """import torch


def halve_on_oom(step, batch):
    try:
        return step(batch)
    except RuntimeError as e:
        if "CUDA out of memory" not in str(e):
            raise
        return step(batch[: len(batch) // 2])
"""


def test_an_oom_recognised_by_cuda_words_alone_is_reported_and_one_with_another_way_is_not(
    tmp_path: Path,
) -> None:
    found = _scan(tmp_path / "a", {"tune.py": _OOM})
    assert [(f.line, f.rule_id, f.severity) for f in found.findings] == [
        (8, "cuda-oom-message", "warn")
    ]
    # vsgan's shape: a word a ROCm torch prints too ("Tried to allocate ...") beside it
    either = _OOM.replace(
        '"CUDA out of memory" not in str(e)',
        'not ("allocate" in str(e) or "CUDA out of memory" in str(e))',
    )
    # gptqmodel's: HIP's own message named in the module
    hip = _OOM.replace("raise\n", 'raise\n        _ = "HIP out of memory"\n')
    # a message the project prints is words, not a test
    printed = 'print("CUDA out of memory: lower --batch-size")\n'
    quiet = _scan(tmp_path / "b", {"a.py": either, "b.py": hip, "c.py": printed})
    assert not [f for f in quiet.findings if f.rule_id == "cuda-oom-message"]


def test_cuda_and_out_of_memory_tested_together_is_reported(tmp_path: Path) -> None:
    # Lightning's is_cuda_out_of_memory (toma's shape)
    lightning = (
        "def is_cuda_out_of_memory(exception):\n"
        "    return (\n"
        "        isinstance(exception, RuntimeError)\n"
        "        and len(exception.args) == 1\n"
        '        and "CUDA" in exception.args[0]\n'
        '        and "out of memory" in exception.args[0]\n'
        "    )\n"
    )
    any_gpu = lightning.replace('"CUDA" in exception.args[0]', '"memory" in exception.args[0]')
    report = _scan(tmp_path, {"memory.py": lightning, "other.py": any_gpu})
    found = [(f.path, f.line) for f in report.findings if f.rule_id == "cuda-oom-message"]
    assert found == [("memory.py", 5)]


# -- the docker SDK's NVIDIA runtime ---------------------------------------------------------------


def test_a_docker_sdk_container_run_on_the_nvidia_runtime_is_reported(tmp_path: Path) -> None:
    # carla-driving-simulator-client's shape, and xmanager's conditional keyword
    pool = (
        "import docker\n\n\n"
        "def start(client, image, gpu):\n"
        '    run_kwargs = {"detach": True}\n'
        "    if gpu:\n"
        '        run_kwargs["runtime"] = "nvidia"\n'
        "    return client.containers.run(image, **run_kwargs)\n"
    )
    adapter = (
        "import docker\n\n\n"
        "def run(client, image, gpus):\n"
        "    return client.containers.run(image, runtime='nvidia' if gpus else None)\n"
    )
    # a module that also starts AMD's runtime chooses between the two
    both = adapter.replace("if gpus else None", "if gpus == 'nvidia' else 'amd'")
    # a function's own `runtime` argument in a module that does not drive docker
    other = "def launch(runtime='nvidia'):\n    return runtime\n\n\nlaunch(runtime='nvidia')\n"
    report = _scan(
        tmp_path, {"pool.py": pool, "adapter.py": adapter, "both.py": both, "o.py": other}
    )
    found = _found(report, "container-nvidia-gpu")
    assert found == {("pool.py", 7, "error"), ("adapter.py", 5, "error"), ("both.py", 5, "info")}


def test_cuda_and_out_of_memory_beside_another_way_to_know_the_error_is_not_reported(
    tmp_path: Path,
) -> None:
    either = (
        "import torch\n\n\n"
        "def is_oom(e):\n"
        '    return ("CUDA" in str(e) and "out of memory" in str(e)) or isinstance(\n'
        "        e, torch.OutOfMemoryError\n"
        "    )\n"
    )
    report = _scan(tmp_path, {"oom.py": either})
    assert not _found(report, "cuda-oom-message")
