"""Verdicts that follow from what the code does with a CUDA-only fact (issue 26): a stored
torch.version.cuda is judged where it is used, a capability test that can only switch a path off
is quiet, and an opt-in extra is judged as one. Positives are shapes from the dev part's projects
(AutoGPTQ's setup.py, vLLM's setup.py and its `deepstream` extra, xformers' sp24)."""

from __future__ import annotations

import textwrap

from rocmkit.port import load_rules
from rocmkit.port.python_scan import scan_python
from rocmkit.port.requirements import scan_pyproject


def _found(text: str, **kwargs: object) -> list[tuple[int, str, str]]:
    hits, _ = scan_python(textwrap.dedent(text), load_rules(), **kwargs)  # type: ignore[arg-type]
    return sorted((h.line, h.rule.id, h.severity) for h in hits)


def test_a_stored_cuda_version_used_as_a_value_is_reported_at_the_assignment() -> None:
    # AutoGPTQ 0.7.1 setup.py: None.split on a ROCm torch without ROCM_VERSION.
    text = """\
        import os, torch
        default_cuda_version = torch.version.cuda
        CUDA_VERSION = "".join(os.environ.get("CUDA_VERSION", default_cuda_version).split("."))
        """
    assert _found(text) == [(2, "torch-version-cuda", "warn")]


def test_a_stored_cuda_version_that_is_only_tested_or_repaired_is_quiet() -> None:
    # vLLM 0.33.0 setup.py: `if not cuda_version: cuda_version = <fallback>` before any use.
    text = """\
        import torch
        def variant():
            cuda_version = None
            try:
                cuda_version = torch.version.cuda
            except Exception:
                pass
            if not cuda_version:
                cuda_version = "12.8"
            return "cu" + cuda_version.replace(".", "")[:3]
        """
    assert _found(text) == []


def test_a_recorded_or_equality_tested_cuda_version_is_info_not_warn() -> None:
    text = """\
        import torch
        info = {"cuda": torch.version.cuda, "hip": torch.version.hip}
        legacy = torch.version.cuda == "11.8"
        major = torch.version.cuda.split(".")[0]
        """
    assert _found(text) == [
        (2, "torch-version-cuda", "info"),
        (3, "torch-version-cuda", "info"),
        (4, "torch-version-cuda", "warn"),
    ]


def test_a_capability_test_whose_branch_only_returns_false_is_quiet() -> None:
    # xformers 0.0.35 ops/sp24.py: `if compute_capability >= (9, 0): return False`.
    text = """\
        import torch
        def available():
            cap = torch.cuda.get_device_capability("cuda")
            if cap >= (9, 0):
                return False
            return True
        def use_fp8():
            cap = torch.cuda.get_device_capability()
            if cap >= (8, 9):
                return True
            return False
        """
    # the second read and (session twenty-seven) its comparison are the warning's places
    found = [(line, severity) for line, _, severity in _found(text)]
    assert found == [(3, "info"), (8, "warn"), (9, "warn")]


def test_extras_in_setup_py_are_judged_as_opt_in_groups() -> None:
    text = """\
        from setuptools import setup
        setup(
            name="x",
            install_requires=["pycuda"],
            extras_require={
                "deepstream": ["nvidia-deepstream-videodecode-cu13>=9.0.2"],
                "gpu": ["pycuda", "einops"],
                "dev": ["cupy-cuda12x", "pytest"],
            },
        )
        """
    assert _found(text, is_setup=True) == [
        (4, "pycuda", "error"),  # every install pulls it
        (6, "nvidia-wheels", "info"),  # an extra made only of NVIDIA packages: the NVIDIA variant
        (7, "pycuda", "warn"),  # opt-in: the base install still works
        (8, "cupy-cuda", "info"),  # contributors' group
    ]


def test_pyproject_dependency_groups_are_contributor_only() -> None:
    text = textwrap.dedent(
        """\
        [project]
        name = "x"
        dependencies = ["pycuda"]
        [project.optional-dependencies]
        cuda = ["cupy-cuda12x"]
        serve = ["pycuda-helpers", "tensorrt"]
        [dependency-groups]
        lint = ["cupy-cuda11x"]
        """
    )
    found = sorted((h.line, h.rule.id, h.severity) for h in scan_pyproject(text, load_rules()))
    assert found == [
        (3, "pycuda", "error"),
        # an extra named for CUDA, but CuPy publishes ROCm wheels and nothing here offers them
        (5, "cupy-cuda", "warn"),
        (6, "tensorrt", "warn"),
        (8, "cupy-cuda", "info"),
    ]
