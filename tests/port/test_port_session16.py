"""Issue 26, session sixteen: each change, with a case where the finding must appear and one where
it must not (or where it must stay put), on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import severities as _found

# -- a capability stored through a conditional expression -------------------------------------------

_FP8_GATE = """import torch


def use_fp8():
    major, _ = torch.cuda.get_device_capability() if torch.cuda.is_available() else (0, 0)
    if major >= 9:
        return "float8_e4m3fn"
    return None
"""


def test_a_capability_stored_through_a_conditional_expression_is_judged_where_it_is_compared(
    tmp_path: Path,
) -> None:
    # Python binds the arm it evaluates: on any GPU `major` holds the capability, and the FP8
    # gate it feeds lets MI200 (which reports 9.0 and has no FP8) in.
    report = _scan(tmp_path, {"fp8.py": _FP8_GATE})
    found = _found(report, "device-capability")
    # the read and (session twenty-seven) the comparison that decides it
    assert found == {("fp8.py", 5): "warn", ("fp8.py", 6): "warn"}, found
    evidence = [f.evidence for f in report.findings if f.rule_id == "device-capability"]
    assert "never compared" not in evidence[0], evidence


def test_a_capability_read_under_a_conditional_but_never_compared_stays_info(
    tmp_path: Path,
) -> None:
    source = _FP8_GATE.replace("    if major >= 9:\n", "    print(major)\n    if True:\n")
    report = _scan(tmp_path, {"fp8.py": source})
    found = _found(report, "device-capability")
    assert found == {("fp8.py", 5): "info"}, found
    assert "never compared" in report.findings[0].evidence


# -- a docker argv behind sudo/env, and `--runtime`, `nvidia` as two items --------------------------

_LAUNCH = """import subprocess


def launch(gpus):
    cmd = [
        "sudo",
        "-E",
        "docker",
        "run",
        "--runtime",
        "nvidia",
        "--gpus",
        f"device={gpus}",
        "vllm/vllm-openai:latest",
    ]
    subprocess.run(cmd, check=True)
"""


def test_a_docker_argv_behind_sudo_is_docker_run_and_its_nvidia_runtime_pair_is_found(
    tmp_path: Path,
) -> None:
    report = _scan(
        tmp_path,
        {
            "launch.py": _LAUNCH,
            # env(1) with settings before the command, the runtime added to the argv later
            "env_launch.py": _LAUNCH.replace('"sudo",\n        "-E",', '"env",\n        "A=1",')
            .replace('"--runtime",\n        "nvidia",\n', "")
            .replace(
                "    subprocess.run", '    cmd.extend(["--runtime", "nvidia"])\n    subprocess.run'
            ),
        },
    )
    found = _found(report, "docker-gpus")
    assert found == {
        ("launch.py", 10): "warn",
        ("launch.py", 12): "warn",
        ("env_launch.py", 10): "warn",
        ("env_launch.py", 14): "warn",
    }, found


def test_a_wrapped_argv_of_another_program_and_a_module_passing_amd_devices_are_left_alone(
    tmp_path: Path,
) -> None:
    report = _scan(
        tmp_path,
        {
            # sudo runs python here: --gpus and --runtime are the training script's own options
            "train.py": _LAUNCH.replace(
                '"docker",\n        "run",', '"python",\n        "train.py",'
            ),
            # the same module hands AMD's devices to the container on the other side of a choice
            "both.py": _LAUNCH + '\nAMD = ["--device", "/dev/kfd", "--device", "/dev/dri"]\n',
        },
    )
    found = _found(report, "docker-gpus")
    assert ("train.py", 10) not in found and ("train.py", 12) not in found, found
    assert found.get(("both.py", 10)) == "info", found


# -- what a notebook cell installs --------------------------------------------------------------------


def _notebook(metadata: dict[str, object], *cells: list[str]) -> str:
    import json

    document = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": c,
            }
            for c in cells
        ],
        "metadata": metadata,
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document, indent=1) + "\n"


_SETUP_CELLS = (
    ['%pip install -U "jax[cuda]"\n'],
    ["!pip install -q faiss-gpu\n"],
    ["%%bash\n", "pip install cupy-cuda12x\n"],
    ["import jax\n", "print(jax.devices())\n"],
)


def _line(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def test_what_a_notebook_installs_with_pip_magics_and_shell_lines_is_checked(
    tmp_path: Path,
) -> None:
    # IPython runs %pip in the kernel's own environment: the CUDA builds land where the notebook
    # runs, on an AMD machine too
    text = _notebook({}, *_SETUP_CELLS)
    report = _scan(tmp_path, {"demo.ipynb": text})
    found = {(f.rule_id, line, f.severity) for f in report.findings for line in f.lines}
    assert ("jax-cuda-extra", _line(text, "jax[cuda]"), "warn") in found, found
    assert ("cuda-build-package", _line(text, "faiss-gpu"), "error") in found, found
    assert ("cupy-cuda", _line(text, "cupy-cuda12x"), "error") in found, found


def test_a_colab_only_notebook_installs_for_colab_and_other_magics_are_not_installs(
    tmp_path: Path,
) -> None:
    colab = {"colab": {"provenance": []}, "accelerator": "GPU"}
    text = _notebook(colab, ["from google.colab import drive\n"], *_SETUP_CELLS)
    other = _notebook({}, ["%timeit pip_install_cuda()\n"], ["%env CUDA_HOME=/opt/cuda\n"])
    report = _scan(tmp_path, {"colab.ipynb": text, "other.ipynb": other})
    severities = {f.rule_id: f.severity for f in report.findings if f.path == "colab.ipynb"}
    assert severities.get("jax-cuda-extra") == "info", severities
    assert not [f for f in report.findings if f.path == "other.ipynb"], report.findings


# -- pixi environments that need CUDA -----------------------------------------------------------------

_PYPROJECT_PIXI = """[project]
name = "demo"
version = "0.1"
dependencies = ["numpy"]

[tool.pixi.workspace]
channels = ["conda-forge", "nvidia"]
platforms = ["linux-64"]

[tool.pixi.dependencies]
python = "3.11.*"

[tool.pixi.feature.cuda]
channels = ["conda-forge", "rapidsai"]

[tool.pixi.feature.cuda.dependencies]
cupy = "*"
cucim = "*"
pytorch-cuda = "*"

[tool.pixi.feature.cuda.system-requirements]
cuda = "12"

[tool.pixi.feature.gpu]
system-requirements = { cuda = "13" }

[tool.pixi.feature.gpu.dependencies]
jaxlib = { version = "*", build = "*cuda*" }

[tool.pixi.feature.docs.pypi-dependencies]
sphinx = "*"

[tool.pixi.environments]
cuda = { features = ["cuda"] }
gpu = ["gpu"]
"""


def test_a_pixi_environment_that_needs_cuda_is_found_at_its_lines(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"pyproject.toml": _PYPROJECT_PIXI})
    lines = _PYPROJECT_PIXI.splitlines()

    def at(text: str) -> int:
        return next(i for i, ln in enumerate(lines, 1) if ln.startswith(text))

    found = _found(report, "pixi-cuda", "conda-cuda", "cupy-cuda", "rapids-cuda")
    # in a feature named for NVIDIA: an environment a user asks for, so at most warn
    assert found == {
        ("pyproject.toml", at("cupy")): "warn",
        ("pyproject.toml", at("cucim")): "warn",
        ("pyproject.toml", at("pytorch-cuda")): "warn",
        ("pyproject.toml", at('cuda = "12"')): "warn",
        ("pyproject.toml", at("system-requirements")): "warn",
        ("pyproject.toml", at("jaxlib")): "warn",
    }, found
    # the workspace's channel list (nvidia, rapidsai) gives nothing by itself
    assert not [f for f in report.findings if "channels" in f.evidence]


def test_a_cuda_pixi_feature_beside_a_rocm_one_is_info_and_a_plain_manifest_is_clean(
    tmp_path: Path,
) -> None:
    rocm = _PYPROJECT_PIXI.replace(
        "[tool.pixi.environments]",
        '[tool.pixi.feature.rocm.pypi-dependencies]\ntorch = "*"\n\n[tool.pixi.environments]',
    )
    plain = "[workspace]\nname = 'x'\nplatforms = ['linux-64']\n\n[dependencies]\nnumpy = '*'\n"
    report = _scan(tmp_path, {"a/pyproject.toml": rocm, "b/pixi.toml": plain})
    severities = {f.severity for f in report.findings if f.path == "a/pyproject.toml"}
    assert severities == {"info"}, report.findings
    assert all("ROCm counterpart" in f.evidence for f in report.findings)
    assert not [f for f in report.findings if f.path == "b/pixi.toml"]


def test_a_pixi_toml_outside_any_feature_is_judged_at_the_rules_own_severity(
    tmp_path: Path,
) -> None:
    text = (
        "[workspace]\nname = 'x'\nplatforms = ['linux-64']\n\n[system-requirements]\n"
        "cuda = '12'\n\n[dependencies]\npytorch-cuda = '12.1.*'\n"
    )
    report = _scan(tmp_path, {"pixi.toml": text})
    found = _found(report, "pixi-cuda", "conda-cuda")
    assert found == {("pixi.toml", 6): "warn", ("pixi.toml", 9): "error"}, found
