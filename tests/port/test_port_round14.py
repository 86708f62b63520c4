"""Round fourteen (a): what test24/test25 missed or over-reported, each mechanism from its
emitter's definition, with a case that applies and one that must not."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

# -- the CuTe DSL (nvidia-cutlass-dsl) only an extra installs -----------------------------------

_CUTE_EXTRA = """[project]
name = "sparse-attn"
version = "1.0"
dependencies = ["triton>=3.0"]

[project.optional-dependencies]
cute = [
  "nvidia-cutlass-dsl>=4.2",
  "einops",
]
"""

_CUTE_MODULE = """import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute


def kernel():
    return cute, cutlass, cuda
"""

# A copy of another project vendored inside the package, with its own pyproject.toml: pip never
# reads it when it installs the outer project.
_VENDORED_PYPROJECT = """[project]
name = "flash-attn-cute"
version = "0.1"
dependencies = ["nvidia-cutlass-dsl==4.2.0", "torch"]
"""


def _cute_project(base: dict[str, str]) -> dict[str, str]:
    return {
        **base,
        "sparse_attn/__init__.py": "",
        "sparse_attn/ops/__init__.py": "",
        "sparse_attn/ops/fast/__init__.py": "",
        "sparse_attn/ops/fast/flash_fwd.py": _CUTE_MODULE,
        "sparse_attn/ops/fast/block_info.py": _CUTE_MODULE,
        "sparse_attn/ops/fast/pyproject.toml": _VENDORED_PYPROJECT,
    }


def test_imports_of_the_cute_dsl_only_an_extra_installs_are_grouped_at_the_extra(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, _cute_project({"pyproject.toml": _CUTE_EXTRA}))
    shown = _shown(report)
    cute = [(path, line) for path, line, rule, _ in shown if rule in ("cutlass-dsl", "cuda-python")]
    # The extra's requirement is the one finding; the modules' imports are that opt-in path.
    assert ("pyproject.toml", 8) in cute
    assert not [path for path, _ in cute if path.endswith(".py")]


def test_imports_of_the_cute_dsl_every_install_pulls_stay_errors(tmp_path: Path) -> None:
    base = _CUTE_EXTRA.replace(
        'dependencies = ["triton>=3.0"]', 'dependencies = ["nvidia-cutlass-dsl"]'
    )
    report = _scan(tmp_path, _cute_project({"pyproject.toml": base}))
    imports = {
        (path, rule)
        for path, _, rule, _ in _shown(report)
        if path.endswith("flash_fwd.py") and rule in ("cutlass-dsl", "cuda-python")
    }
    assert imports == {
        ("sparse_attn/ops/fast/flash_fwd.py", "cutlass-dsl"),
        ("sparse_attn/ops/fast/flash_fwd.py", "cuda-python"),
    }


def test_imports_of_the_cute_dsl_no_requirement_declares_stay_errors(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"kernels/fwd.py": _CUTE_MODULE})
    rules = {rule for _, _, rule, _ in _shown(report)}
    assert {"cutlass-dsl", "cuda-python"} <= rules


# -- cuEquivariance's kernels: CUDA-only wheels ----------------------------------------------------

_TRIANGLE = """import torch


def kernel_triangular_mult(x, mask):
    from cuequivariance_torch.primitives.triangle import triangle_multiplicative_update

    return triangle_multiplicative_update(x, mask=mask)
"""


def test_cuequivariance_triangle_kernels_and_their_wheels_are_reported(tmp_path: Path) -> None:
    files = {
        "model/tri.py": _TRIANGLE,
        "requirements.txt": "torch\ncuequivariance-ops-torch-cu12==0.8.0\ncuequivariance-torch\n",
    }
    shown = {(path, line, rule) for path, line, rule, _ in _shown(_scan(tmp_path, files))}
    assert ("model/tri.py", 5, "cuequivariance-kernels") in shown
    assert ("requirements.txt", 2, "cuequivariance-kernels") in shown
    # the pure-Python front end alone is no finding of this rule
    assert ("requirements.txt", 3, "cuequivariance-kernels") not in shown


def test_cuequivariance_front_end_without_the_kernels_is_no_finding(tmp_path: Path) -> None:
    # cuequivariance_torch's equivariant tensor products have PyTorch fallbacks: only the kernel
    # packages and the primitives that call them are CUDA-only.
    text = "import cuequivariance as cue\nimport cuequivariance_torch as cuet\n\nx = cuet, cue\n"
    report = _scan(tmp_path, {"layers.py": text})
    assert not [r for _, _, r, _ in _shown(report) if r == "cuequivariance-kernels"]


# -- nvidia.com/gpu in a Kubernetes manifest -------------------------------------------------------

_JOB = """apiVersion: batch/v1
kind: Job
spec:
  template:
    spec:
      containers:
      - name: labeler
        image: python:3.10
        resources:
          requests:
            cpu: "0.1"
            nvidia.com/gpu: "1"
          limits:
            nvidia.com/gpu: 1
"""


def test_a_manifest_requesting_nvidia_gpus_is_reported_at_each_request(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"deploy/job.yaml": _JOB})
    shown = {(path, line, rule, sev) for path, line, rule, sev in _shown(report)}
    assert shown == {
        ("deploy/job.yaml", 12, "container-nvidia-gpu", "warn"),
        ("deploy/job.yaml", 14, "container-nvidia-gpu", "warn"),
    }


def test_a_manifest_that_also_requests_amd_gpus_is_info(tmp_path: Path) -> None:
    amd = _JOB.replace("  limits:\n", "  limits:\n            amd.com/gpu: 1\n")
    report = _scan(tmp_path, {"deploy/job.yaml": amd})
    assert not _shown(report)
    assert any(f.rule_id == "container-nvidia-gpu" for f in report.findings)  # at info


def test_yaml_that_does_not_request_the_resource_is_not_read_as_a_manifest(tmp_path: Path) -> None:
    config = "model:\n  gpus: 1\n  device: cuda  # nvidia.com/gpu is named in this comment\n"
    report = _scan(tmp_path, {"configs/train.yaml": config, "configs/other.yml": "gpu: 1\n"})
    assert not [f for f in report.findings if f.rule_id == "container-nvidia-gpu"]


def test_a_ci_pipeline_handing_a_pod_spec_to_a_plugin_is_not_a_manifest(tmp_path: Path) -> None:
    pipeline = (
        "steps:\n  - label: smoke\n    plugins:\n      - kubernetes:\n          podSpec:\n"
        "            containers:\n              - name: tests\n                resources:\n"
        "                  limits:\n                    nvidia.com/gpu: 1\n"
    )
    report = _scan(tmp_path, {".buildkite/pipeline.yml": pipeline})
    assert not [f for f in report.findings if f.rule_id == "container-nvidia-gpu"]


# -- Triton's CUDA libdevice -----------------------------------------------------------------------

_ROUND_KERNEL = """import triton
import triton.language as tl


@triton.jit
def quantize(x_ptr, out_ptr, use_intel: tl.constexpr):
    x = tl.load(x_ptr)
    if use_intel:
        y = tl.extra.intel.libdevice.rint(x)
    else:
        y = tl.extra.cuda.libdevice.rint(x)  # NVIDIA's
    tl.store(out_ptr, y)
"""


def test_a_kernel_calling_the_cuda_libdevice_is_an_error(tmp_path: Path) -> None:
    shown = _shown(_scan(tmp_path, {"ops/quant.py": _ROUND_KERNEL}))
    assert ("ops/quant.py", 11, "triton-cuda-libdevice", "error") in shown


def test_a_kernel_switching_to_the_hip_libdevice_or_the_neutral_one_is_not_reported(
    tmp_path: Path,
) -> None:
    switched = _ROUND_KERNEL.replace(
        "    if use_intel:",
        "    if IS_HIP:\n        y = tl.extra.hip.libdevice.rint(x)\n    elif use_intel:",
    )
    neutral = _ROUND_KERNEL.replace("tl.extra.cuda.libdevice", "tl.extra.libdevice")
    commented = _ROUND_KERNEL.replace(
        "y = tl.extra.cuda.libdevice.rint(x)", "y = x  # not tl.extra.cuda"
    )
    report = _scan(tmp_path, {"a.py": switched, "b.py": neutral, "c.py": commented})
    assert not [r for _, _, r, _ in _shown(report) if r == "triton-cuda-libdevice"]
    # the switch's CUDA side is still listed, at info
    assert [f.path for f in report.findings if f.rule_id == "triton-cuda-libdevice"] == ["a.py"]


# -- CUDA sources nothing compiles ---------------------------------------------------------------

_PTX_KERNEL = """__device__ float fast_exp2(float x) {
    float y;
    asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
"""


def _ptx_findings(report: object) -> set[tuple[str, str]]:
    return {
        (f.path, f.severity)
        for f in report.findings  # type: ignore[attr-defined]
        if f.rule_id == "cuda-inline-ptx"
    }


def test_cuda_sources_a_bare_setup_never_compiles_are_info(tmp_path: Path) -> None:
    files = {
        "setup.py": "from setuptools import setup\n\nsetup()\n",
        "pyproject.toml": '[build-system]\nbuild-backend = "setuptools.build_meta"\n',
        "csrc/kernel.cu": _PTX_KERNEL,
        "pkg/__init__.py": "import torch\n",
    }
    assert _ptx_findings(_scan(tmp_path, files)) == {("csrc/kernel.cu", "info")}


def test_cuda_sources_an_extension_or_a_jit_load_compiles_stay_errors(tmp_path: Path) -> None:
    built = {
        "setup.py": (
            "from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n\n"
            "setup(ext_modules=[CUDAExtension('k', ['csrc/kernel.cu'])])\n"
        ),
        "csrc/kernel.cu": _PTX_KERNEL,
    }
    assert _ptx_findings(_scan(tmp_path / "a", built)) == {("csrc/kernel.cu", "error")}
    jit = {
        "setup.py": "from setuptools import setup\n\nsetup()\n",
        "csrc/kernel.cu": _PTX_KERNEL,
        "pkg/ops.py": (
            "from torch.utils.cpp_extension import load\n\n\n"
            "def build():\n    return load('k', ['csrc/kernel.cu'])\n"
        ),
    }
    assert _ptx_findings(_scan(tmp_path / "b", jit)) == {("csrc/kernel.cu", "error")}
    cmake = {
        "setup.py": "from setuptools import setup\n\nsetup()\n",
        "csrc/kernel.cu": _PTX_KERNEL,
        "csrc/CMakeLists.txt": "project(k LANGUAGES CXX CUDA)\n",
    }
    assert _ptx_findings(_scan(tmp_path / "c", cmake)) == {("csrc/kernel.cu", "error")}


def test_a_manifest_named_alone_is_read_as_one(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"job.yaml": _JOB}, target="job.yaml")
    assert {line for _, line, rule, _ in _shown(report) if rule == "container-nvidia-gpu"} == {
        12,
        14,
    }


def test_cuequivariance_imports_where_only_an_extra_declares_the_kernels_are_the_extras(
    tmp_path: Path,
) -> None:
    pyproject = (
        '[project]\nname = "eqv"\nversion = "1"\ndependencies = ["torch"]\n\n'
        '[project.optional-dependencies]\nbench = ["cuequivariance-ops-torch-cu12"]\n'
    )
    report = _scan(tmp_path, {"pyproject.toml": pyproject, "eqv/bench.py": _TRIANGLE})
    shown = {(path, rule) for path, _, rule, _ in _shown(report)}
    assert ("pyproject.toml", "cuequivariance-kernels") in shown
    assert ("eqv/bench.py", "cuequivariance-kernels") not in shown


def test_the_cuda_libdevice_as_a_fallback_of_the_neutral_import_is_info(tmp_path: Path) -> None:
    text = (
        "try:\n    from triton.language.extra.libdevice import tanh\n"
        "except ModuleNotFoundError:\n    from triton.language.extra.cuda.libdevice import tanh\n"
    )
    report = _scan(tmp_path, {"ops/act.py": text})
    assert not [r for _, _, r, _ in _shown(report) if r == "triton-cuda-libdevice"]
    assert [f.severity for f in report.findings if f.rule_id == "triton-cuda-libdevice"] == ["info"]
