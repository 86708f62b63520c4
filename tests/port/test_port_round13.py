"""Round thirteen (a): what test22/test23 missed or over-reported, each mechanism from its
emitter's definition, with a case that applies and one that must not."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

# -- nvidia-smi: a module-level command string launched from a function ----------------------------

_SMI_WRAPPER = """import shlex
import subprocess

GET_GPUS = "nvidia-smi --query-gpu=index,name --format=csv,noheader"
GET_PROCS = "nvidia-smi --query-compute-apps=pid --format=csv,noheader"


def gpus():
    return subprocess.check_output(shlex.split(GET_GPUS))


def processes():
    out = subprocess.check_output(GET_PROCS.split())
    return out.decode()
"""


def test_a_command_string_launched_from_functions_is_reported_at_each_launch(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"smi.py": _SMI_WRAPPER})
    lines = {line for _, line, rule, _ in _shown(report) if rule == "nvidia-smi"}
    # the launches, and (session twenty-one) the constants that name the tool (lines 4, 5)
    assert lines == {4, 5, 9, 13}


def test_a_command_string_no_function_launches_stays_at_the_string(tmp_path: Path) -> None:
    text = (
        'import subprocess\n\nGET = "nvidia-smi -L"\n\n\ndef other():\n    subprocess.run(["ls"])\n'
    )
    report = _scan(tmp_path, {"smi.py": text})
    assert {line for _, line, rule, _ in _shown(report) if rule == "nvidia-smi"} == {3}


# -- an assert that refuses ROCm -------------------------------------------------------------------

_HIP_REFUSED = """import torch


def attention_with_lse(q, k, v):
    assert q.device.type == "cuda", "Must be CUDA tensors"
    assert torch.version.hip is None, "HIP is not supported"
    return torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, None, True)
"""


def test_an_assert_that_torch_version_hip_is_none_rejects_rocm(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"ops.py": _HIP_REFUSED})
    assert ("ops.py", 6, "torch-version-cuda", "warn") in _shown(report)


def test_an_assert_that_requires_hip_is_no_finding(tmp_path: Path) -> None:
    text = "import torch\n\nassert torch.version.hip is not None, 'build the ROCm wheel here'\n"
    text += "assert torch.version.hip == '6.4'\n"
    report = _scan(tmp_path, {"check_rocm_wheel.py": text})
    assert _shown(report) == set()


# -- Numba's CUDA target reached through names imported from it ------------------------------------

_NUMBA_FROM_TARGET = """import numpy as np
from numba.cuda import jit, grid


@jit
def scale(x):
    x[grid(1)] *= 2
"""


def test_kernels_written_with_a_jit_imported_from_numba_cuda_are_an_error(tmp_path: Path) -> None:
    aliased = "from numba import cuda as nc\n\n\n@nc.jit\ndef k(x):\n    x[0] = 1\n"
    report = _scan(tmp_path, {"kern.py": _NUMBA_FROM_TARGET, "alias.py": aliased})
    shown = _shown(report)
    assert ("kern.py", 2, "numba-cuda", "error") in shown
    assert ("alias.py", 1, "numba-cuda", "error") in shown


def test_a_name_from_numba_cuda_that_only_probes_or_the_cpu_jit_is_no_warning(
    tmp_path: Path,
) -> None:
    probe = "from numba.cuda import is_available, jit\n\nUSE_GPU = is_available()\n\n\n@jit\ndef f(x):\n    x[0] = 1\n"
    cpu = "from numba import jit\n\n\n@jit(nopython=True)\ndef f(x):\n    return x + 1\n"
    report = _scan(tmp_path, {"probe.py": probe, "cpu.py": cpu})
    assert _shown(report) == set()
    assert [f.severity for f in report.findings if f.rule_id == "numba-cuda"] == ["info"]


# -- uv sources routing torch to an explicit CUDA index; cibuildwheel's environment ----------------

_UV_ROUTED = """[project]
name = "asr"
version = "1"
dependencies = ["torch~=2.8.0"]

[tool.uv.sources]
torch = [
  { index = "pytorch", marker = "platform_machine == 'x86_64'" },
]

[[tool.uv.index]]
name = "pytorch"
url = "https://download.pytorch.org/whl/cu128"
explicit = true
"""


def test_a_uv_index_routed_to_by_sources_is_reported_at_the_entry_and_the_url(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"pyproject.toml": _UV_ROUTED})
    lines = {line for _, line, rule, _ in _shown(report) if rule == "torch-cuda-index"}
    assert lines == {8, 13}


_CIBUILDWHEEL = """[project]
name = "ext"
version = "1"
dependencies = ["numpy"]

[tool.cibuildwheel]
build = "cp3*-manylinux_x86_64"
environment = {PIP_EXTRA_INDEX_URL = "https://download.pytorch.org/whl/cu130"}

[tool.other]
index = "https://download.pytorch.org/whl/cu130"
"""


def test_a_cuda_index_in_the_release_wheel_build_settings_is_info(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"pyproject.toml": _CIBUILDWHEEL})
    shown = {(line, rule) for _, line, rule, _ in _shown(report)}
    assert (8, "torch-cuda-index") not in shown
    assert (11, "torch-cuda-index") in shown  # outside [tool.cibuildwheel]: still a finding
    assert any(f.rule_id == "torch-cuda-index" and f.severity == "info" for f in report.findings)


# -- Isaac Gym and NVRTC bindings: CUDA-only libraries by their own install docs -------------------


def test_isaac_gym_and_pynvrtc_on_a_code_path_are_reported(tmp_path: Path) -> None:
    train = "import isaacgym\nimport torch\nfrom isaacgymenvs.tasks import task_map\n"
    sru = (
        "import torch\n\n\ndef load_kernels(code):\n"
        "    from pynvrtc.compiler import Program\n\n"
        "    return Program(code, 'k.cu').compile()\n"
    )
    report = _scan(tmp_path, {"examples/train.py": train, "model/sru.py": sru})
    shown = _shown(report)
    assert ("examples/train.py", 1, "isaac-gym", "error") in shown
    assert ("model/sru.py", 5, "nvrtc-python", "error") in shown


def test_an_isaac_gym_probe_with_a_fallback_is_no_warning(tmp_path: Path) -> None:
    probe = (
        "try:\n    import isaacgym\n    HAS_GYM = True\nexcept ImportError:\n    HAS_GYM = False\n"
    )
    report = _scan(tmp_path, {"envs.py": probe})
    assert _shown(report) == set()
    assert [f.severity for f in report.findings if f.rule_id == "isaac-gym"] == ["info"]


# -- a CUDAExtension built only where CUDA_HOME is found, decided inside a module-level try --------

_CUDA_HOME_IN_TRY = """import os
import warnings
from setuptools import setup

FORCE = os.getenv("FORCE_CUDA_EXTENSION", "0") == "1"
BUILD_CPP = BUILD_CUDA = False
try:
    import torch
    from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CUDAExtension

    BUILD_CPP = True
    BUILD_CUDA = FORCE or (torch.cuda.is_available() and ({test}))
except ImportError as e:
    warnings.warn(f"no extensions: {{e}}")


def extensions():
    if BUILD_CUDA:
        return [CUDAExtension("ops_cuda", ["ops.cu"])]
    return []


setup(name="ops", ext_modules=extensions(), cmdclass={{"build_ext": BuildExtension}})
"""


def test_a_cuda_extension_gated_on_cuda_home_inside_a_try_is_not_built_on_rocm(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"setup.py": _CUDA_HOME_IN_TRY.format(test="CUDA_HOME is not None")})
    assert ("setup.py", 12, "cuda-extension", "error") in _shown(report)


def test_the_same_gate_without_cuda_home_is_no_finding(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"setup.py": _CUDA_HOME_IN_TRY.format(test="True")})
    assert not any(rule == "cuda-extension" for _, _, rule, _ in _shown(report))


# -- serving images whose tag names the vendor (SGLang, vLLM) --------------------------------------


def test_sglang_and_vllm_cuda_images_are_cuda_base_images(tmp_path: Path) -> None:
    sglang = (
        "ARG SGLANG_VERSION=v0.5.21\nFROM lmsysorg/sglang:${SGLANG_VERSION}\nRUN pip install x\n"
    )
    vllm = "FROM vllm/vllm-openai:v0.11.0\nRUN pip install x\n"
    report = _scan(tmp_path, {"sglang/Dockerfile": sglang, "vllm/Dockerfile": vllm})
    shown = _shown(report)
    assert ("sglang/Dockerfile", 2, "cuda-base-image", "error") in shown
    assert ("vllm/Dockerfile", 1, "cuda-base-image", "error") in shown


def test_their_rocm_images_are_no_finding(tmp_path: Path) -> None:
    by_arg = "ARG V=v0.5.3-rocm630-mi30x\nFROM lmsysorg/sglang:${V}\n"
    files = {
        "a/Dockerfile": by_arg,
        "b/Dockerfile": "FROM lmsysorg/sglang:v0.5.3-rocm630-mi30x\n",
        "c/Dockerfile": "FROM vllm/vllm-openai-rocm:latest\n",
        "d/Dockerfile": "FROM lmsysorg/sglang-router:latest\n",
    }
    assert _shown(_scan(tmp_path, files)) == set()


# -- a Makefile recipe installing flash-attn from a page of prebuilt CUDA wheels -------------------

_MAKEFILE = """UV ?= $(shell which uv)
FLASH_ATTN_PACKAGE ?= flash-attn
LINKS ?= https://github.com/someone/flash-attention-prebuild-wheels/releases/expanded_assets/v0.9.4

test:
\t$(UV) pip install --no-build-isolation $(FLASH_ATTN_PACKAGE) --find-links {links}
\t$(UV) run pytest
"""


def test_flash_attn_from_links_of_prebuilt_wheels_in_a_makefile_warns(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"Makefile": _MAKEFILE.format(links="$(LINKS)")})
    assert ("Makefile", 6, "flash-attn", "warn") in _shown(report)


def test_flash_attn_built_from_source_in_a_makefile_stays_info(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"Makefile": _MAKEFILE.format(links="./wheels")})
    assert _shown(report) == set()
    assert any(f.rule_id == "flash-attn" for f in report.findings)  # read, at info


# -- a per-vendor module named only by its vendor (build_profiles/cuda.py beside rocm.py) ----------

_CUDA_PROFILE = """from torch.utils import cpp_extension


def extensions(threads):
    flags = ["-O3", f"--threads={threads}"]
    return [cpp_extension.CUDAExtension("pkg.ops", ["ops.cu"], extra_compile_args={"nvcc": flags})]
"""


def test_a_module_named_cuda_beside_one_named_rocm_is_the_nvidia_variant(tmp_path: Path) -> None:
    files = {
        "profiles/cuda.py": _CUDA_PROFILE,
        "profiles/rocm.py": "def extensions(t):\n    return []\n",
    }
    report = _scan(tmp_path, files)
    assert _shown(report) == set()
    notes = {f.note for f in report.findings if f.path == "profiles/cuda.py"}
    assert notes == {"has a ROCm counterpart: profiles/rocm.py"}


def test_a_module_named_cuda_with_no_rocm_sibling_keeps_its_findings(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"profiles/cuda.py": _CUDA_PROFILE})
    assert ("profiles/cuda.py", 5, "nvcc-only-flags", "warn") in _shown(report)
