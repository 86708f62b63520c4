"""Issue 26, second round: the vendor structure a project already has, and packages with no ROCm
build. Each mechanism has a case where it applies and one where it must not."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan


def _rows(report) -> set[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    return {(f.path, f.rule_id, f.severity) for f in report.findings}


# -- (a) an NVIDIA kernel-DSL backend picked at run time -----------------------------------------

_CUTE_KERNEL = "import cutlass.cute as cute\n\ndef kernel():\n    return cute\n"


def test_a_dsl_backend_reached_only_through_a_registry_or_lazy_import_is_info(
    tmp_path: Path,
) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/ops/__init__.py": "import importlib\n\ndef pick(name):\n"
        "    return importlib.import_module(f'pkg.ops.{name}')\n",
        "pkg/ops/cutedsl/__init__.py": "",
        "pkg/ops/cutedsl/rms_norm.py": _CUTE_KERNEL,
        "pkg/ops/rms_norm.py": "def fast():\n    from pkg.ops.cutedsl.rms_norm import kernel\n"
        "    return kernel\n",
    }
    report = _scan(tmp_path, files)
    assert _rows(report) == {("pkg/ops/cutedsl/rms_norm.py", "cutlass-dsl", "info")}
    assert "picks at run time" in report.findings[0].note


def test_a_dsl_folder_imported_at_module_level_stays_a_finding(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/ops/__init__.py": "",
        "pkg/ops/cute/__init__.py": "",
        "pkg/ops/cute/step.py": _CUTE_KERNEL,
        # a try/except ImportError at module level is still what every user imports
        "pkg/modules/__init__.py": "",
        "pkg/modules/layer.py": "try:\n    from ..ops.cute.step import kernel\n"
        "except ImportError:\n    kernel = None\n",
    }
    report = _scan(tmp_path, files)
    assert _rows(report) == {("pkg/ops/cute/step.py", "cutlass-dsl", "error")}


# -- (b) NVIDIA variants beside ROCm ones: folders, extras, wheel indexes -------------------------


def test_a_docker_cuda_folder_beside_docker_rocm_is_the_nvidia_variant(tmp_path: Path) -> None:
    files = {
        "docker/docker-cuda/Dockerfile.base": "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n",
        "docker/docker-rocm/Dockerfile": "FROM rocm/pytorch:latest\n",
        "deploy/docker-cuda/Dockerfile": "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n",
        "deploy/docker-npu/Dockerfile": "FROM ascendai/cann:latest\n",
    }
    report = _scan(tmp_path, files)
    assert _rows(report) == {
        ("docker/docker-cuda/Dockerfile.base", "cuda-base-image", "info"),
        ("deploy/docker-cuda/Dockerfile", "cuda-base-image", "error"),  # no ROCm sibling
    }


_PYPROJECT = """[project]
name = "app"
dependencies = []
[project.optional-dependencies]
{extras}
"""


def test_a_cuda_extra_beside_a_rocm_extra_is_the_nvidia_variant(tmp_path: Path) -> None:
    extras = 'cuda = ["vllm>=0.22", "aiohttp"]\nrocm = ["aiohttp"]\n'
    report = _scan(tmp_path, {"pyproject.toml": _PYPROJECT.format(extras=extras)})
    assert {(r, s) for _, r, s in _rows(report)} == {("vllm-pypi", "info")}
    assert "NVIDIA variant of extra 'rocm'" in report.findings[0].evidence


def test_an_extra_not_named_for_nvidia_without_a_rocm_extra_is_a_finding(tmp_path: Path) -> None:
    extras = 'serve = ["vllm>=0.22", "aiohttp"]\nrocm = ["aiohttp"]\n'
    report = _scan(tmp_path, {"pyproject.toml": _PYPROJECT.format(extras=extras)})
    assert {(r, s) for _, r, s in _rows(report)} == {("vllm-pypi", "warn")}


def test_a_cuda_wheel_index_beside_a_rocm_index_is_the_nvidia_variant(tmp_path: Path) -> None:
    indexes = (
        '[[tool.uv.index]]\nname = "torch-cuda"\nurl = "https://download.pytorch.org/whl/cu128"\n'
    )
    rocm = (
        '[[tool.uv.index]]\nname = "torch-rocm"\nurl = "https://download.pytorch.org/whl/rocm6.4"\n'
    )
    base = _PYPROJECT.format(extras="")
    both = _scan(tmp_path / "both", {"pyproject.toml": base + indexes + rocm})
    alone = _scan(tmp_path / "alone", {"pyproject.toml": base + indexes})
    assert {(r, s) for _, r, s in _rows(both)} == {("torch-cuda-index", "info")}
    assert {(r, s) for _, r, s in _rows(alone)} == {("torch-cuda-index", "error")}


# -- (c) a vendor switch by trial: try nvidia-smi, fall back to rocm-smi --------------------------


def test_nvidia_smi_tried_before_rocm_smi_is_a_vendor_switch(tmp_path: Path) -> None:
    code = (
        "import subprocess\n\ndef platform():\n    try:\n"
        "        subprocess.run(['nvidia-smi'], check=True)\n        return 'cuda'\n"
        "    except FileNotFoundError:\n"
        "        subprocess.run(['rocm-smi'], check=True)\n        return 'rocm'\n"
    )
    report = _scan(tmp_path, {"setup_platform.py": code})
    assert _rows(report) == {("setup_platform.py", "nvidia-smi", "info")}
    assert "vendor switch" in report.findings[0].evidence


def test_nvidia_smi_with_a_plain_fallback_is_still_a_finding(tmp_path: Path) -> None:
    code = (
        "import subprocess\n\ndef count():\n    try:\n"
        "        out = subprocess.check_output(['nvidia-smi', '-L'])\n"
        "        return len(out.splitlines())\n"
        "    except FileNotFoundError:\n        return 0\n"
    )
    report = _scan(tmp_path, {"gpus.py": code})
    assert _rows(report) == {("gpus.py", "nvidia-smi", "warn")}


# -- (d) packages with no ROCm build on PyPI ------------------------------------------------------


def test_packages_without_a_rocm_build_are_errors_with_the_fix_and_source(
    tmp_path: Path,
) -> None:
    files = {
        "requirements/vllm.txt": "vllm<=0.11.0\n",
        "requirements/sglang.txt": "sglang[srt]>=0.4\n",
        "requirements/eetq.txt": "eetq\n",
        "requirements/te.txt": "transformer_engine[pytorch]\n",
        "requirements/base.txt": "vllm-flash-attn-docs-helper\nsglang-router-client\n",
    }
    report = _scan(tmp_path, files)
    by_file = {f.path: f for f in report.findings}
    assert {(p, f.rule_id, f.severity) for p, f in by_file.items()} == {
        ("requirements/vllm.txt", "vllm-pypi", "error"),
        ("requirements/sglang.txt", "sglang-pypi", "error"),
        ("requirements/eetq.txt", "eetq", "error"),
        ("requirements/te.txt", "transformer-engine-pypi", "error"),
    }
    for finding in by_file.values():
        assert finding.fix and finding.source.startswith("https://")


def test_an_extra_with_a_package_without_a_rocm_build_is_a_warning_not_a_variant(
    tmp_path: Path,
) -> None:
    extras = 'vllm = ["vllm>=0.22"]\nflash = ["flash-attn>=2"]\n'
    report = _scan(tmp_path, {"pyproject.toml": _PYPROJECT.format(extras=extras)})
    assert {(r, s) for _, r, s in _rows(report)} == {
        ("vllm-pypi", "warn"),  # opt-in, but breaks the ROCm install of whoever asks for it
        ("flash-attn", "info"),  # flash-attn builds for ROCm: the extra is the NVIDIA variant
    }
