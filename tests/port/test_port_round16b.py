"""Issue 26, sixteenth round (b): pip constraints files, conda's CUDA builds on command lines,
PyTorch's CUDA image by its tag scheme, JAX's CUDA extras in README installs. Each mechanism with
a case where it applies and one where it must not, on small synthetic trees written for these
tests."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

from rocmkit.port.project import classify

# -- pip constraints files ----------------------------------------------------------------------

_PINS = "torch==2.6.0\nvllm==0.8.5\n"


def test_a_constraints_file_by_name_installs_nothing(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"constraints-dev.txt": _PINS, "requirements.txt": "numpy\n"})
    assert not _shown(report)
    notes = [f.evidence for f in report.findings if f.path == "constraints-dev.txt"]
    assert notes and all("constraints file" in n for n in notes)


def test_a_file_passed_with_dash_c_is_a_constraint(tmp_path: Path) -> None:
    files = {"pins.txt": _PINS, "install.sh": "pip install -c pins.txt .\n"}
    assert not {s for s in _shown(_scan(tmp_path, files)) if s[0] == "pins.txt"}


def test_the_same_pins_in_a_requirements_file_are_reported(tmp_path: Path) -> None:
    shown = _shown(_scan(tmp_path, {"requirements.txt": _PINS}))
    assert ("requirements.txt", 2, "vllm-pypi", "error") in shown


def test_a_constraints_file_also_passed_with_dash_r_installs(tmp_path: Path) -> None:
    files = {
        "constraints.txt": _PINS,
        "Dockerfile": "FROM python:3.12\nRUN pip install -r constraints.txt\n",
    }
    assert ("constraints.txt", 2, "vllm-pypi", "error") in _shown(_scan(tmp_path, files))


# -- conda install / conda create command lines -------------------------------------------------

_CONDA_LINE = (
    "conda create -y -n env python=3.9 pytorch torchvision cudatoolkit=11.3 numba"
    " -c pytorch -c conda-forge\n"
)


def test_a_conda_cuda_toolkit_in_a_shell_script(tmp_path: Path) -> None:
    assert ("install.sh", 1, "conda-cuda", "error") in _shown(
        _scan(tmp_path, {"install.sh": _CONDA_LINE})
    )


def test_a_conda_cpu_install_is_not_reported(tmp_path: Path) -> None:
    line = "conda install -n env pytorch torchvision cpuonly -c pytorch\nconda run -n env pip install x\n"
    assert not _shown(_scan(tmp_path, {"install.sh": line}))


def test_a_continued_dockerfile_run_reports_the_toolkit_line(tmp_path: Path) -> None:
    dockerfile = (
        "FROM ubuntu:22.04\n"
        "RUN conda create -n env python=3.9 \\\n"
        "        pytorch \\\n"
        "        pytorch-cuda=12.1 \\\n"
        "        -c pytorch -c nvidia\n"
    )
    shown = _shown(_scan(tmp_path, {"Dockerfile": dockerfile}))
    assert ("Dockerfile", 4, "conda-cuda", "error") in shown
    assert not {s for s in shown if s[1] in (1, 2, 3)}


def test_a_readme_conda_line_stays_unreported(tmp_path: Path) -> None:
    # left out on purpose: READMEs of CUDA-first projects give such lines where no list counts one
    readme = "# Tool\n\n## Installation\n```\n" + _CONDA_LINE + "pip install tool\n```\n"
    report = _scan(tmp_path, {"README.md": readme, "install.sh": _CONDA_LINE})
    assert {(s[0], s[2]) for s in _shown(report)} == {("install.sh", "conda-cuda")}


def test_a_readme_conda_line_in_prose_is_not_a_command(tmp_path: Path) -> None:
    readme = (
        "# Tool\n\nWe tested with cudatoolkit=11.3 from the pytorch channel; see install docs.\n"
    )
    assert not _shown(_scan(tmp_path, {"README.md": readme}))


_ENV_CPU = """name: env
channels:
  - pytorch
dependencies:
  - cudatoolkit=11.2.2=he111cf0_8
  - pytorch-mutex=1.0=cpu
  - pip:
    - torchaudio==0.10.0+cu113
"""


def test_a_prefixed_conda_file_is_read_and_a_cpu_mutex_lowers_the_toolkit(tmp_path: Path) -> None:
    assert classify("ffcv-conda.yml") == "conda"
    assert classify("cuda-environment.yaml") == "conda"
    assert classify("workflow.yml") is None
    shown = _shown(_scan(tmp_path, {"proj-conda.yml": _ENV_CPU}))
    assert ("proj-conda.yml", 8, "cuda-local-version", "error") in shown
    assert not {s for s in shown if s[2] == "conda-cuda"}  # pytorch-mutex cpu: a CPU conda torch


def test_a_cuda_conda_env_keeps_its_toolkit_finding(tmp_path: Path) -> None:
    env = "name: env\ndependencies:\n  - pytorch\n  - cudatoolkit=11.3\n"
    assert ("my-conda.yml", 4, "conda-cuda", "error") in _shown(
        _scan(tmp_path, {"my-conda.yml": env})
    )


# -- PyTorch's Docker Hub image ----------------------------------------------------------------


def test_pytorch_image_latest_and_untagged_are_cuda(tmp_path: Path) -> None:
    files = {
        "a/Dockerfile": "FROM pytorch/pytorch:latest\n",
        "b/Dockerfile": "FROM pytorch/pytorch\n",
        "c/Dockerfile": "FROM pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime AS base\n",
    }
    shown = _shown(_scan(tmp_path, files))
    for name in files:
        assert (name, 1, "cuda-base-image", "error") in shown


def test_rocm_pytorch_image_is_not_reported(tmp_path: Path) -> None:
    files = {
        "Dockerfile": "FROM rocm/pytorch:latest\n",
        "b/Dockerfile": "FROM pytorch/pytorch-rocm:1\n",
    }
    assert not _shown(_scan(tmp_path, files))


def test_docker_run_gpus_in_a_dockerfile_comment_is_not_run(tmp_path: Path) -> None:
    dockerfile = "FROM rocm/pytorch:latest\n# run: docker run -it --gpus all img bash\n"
    assert not _shown(_scan(tmp_path, {"Dockerfile": dockerfile}))


# -- JAX's CUDA extras in README install lines ---------------------------------------------------


def test_a_readme_whose_only_install_is_a_jax_cuda_extra_is_warned(tmp_path: Path) -> None:
    readme = "# Fold\n\n```shell\npip install fold[alphafold] jax[cuda12]\n```\n"
    report = _scan(tmp_path, {"README.md": readme})
    # the README's only install (info from session fourteen to twenty-nine)
    assert [(f.rule_id, f.line, f.severity) for f in report.findings] == [
        ("jax-cuda-extra", 4, "warn")
    ]


def test_a_readme_that_gives_the_rocm_plugin_too_keeps_it_info(tmp_path: Path) -> None:
    readme = (
        "# Fold\n\n```shell\npip install fold jax[cuda12]\n```\n"
        "On AMD GPUs:\n```shell\npip install fold jax[rocm]\n```\n"
    )
    report = _scan(tmp_path, {"README.md": readme})
    assert not _shown(report)
    assert any(f.rule_id == "jax-cuda-extra" for f in report.findings)
