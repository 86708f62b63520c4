"""Issue 26, fifteenth round (c): nvidia-smi started through a lookup function, ONNX Runtime
device maps, run-time installs and non-Python launchers. Each mechanism with a case where it
applies and one where it must not, on small synthetic trees written for these tests."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

# -- nvidia-smi started through a function that looks it up ---------------------------------------

_SMI_LOOKUP = """import os
import subprocess

SMI = os.environ.get("BURN_SMI", "nvidia-smi")


def find_smi():
    if os.path.exists("/usr/bin/nvidia-smi"):
        return "/usr/bin/nvidia-smi"
    return SMI


def query(what):
    executable = find_smi()
    result = subprocess.run(
        [executable, f"--query-{what}", "--format=csv"], capture_output=True, text=True
    )
    return result.stdout
"""


def test_nvidia_smi_found_at_the_launch_of_a_looked_up_path(tmp_path: Path) -> None:
    shown = _shown(_scan(tmp_path, {"burn/cli.py": _SMI_LOOKUP}))
    # the launch (line 15) is where an AMD machine loses the query, not the constant
    assert ("burn/cli.py", 15, "nvidia-smi", "warn") in shown


def test_a_lookup_function_that_returns_another_program_is_not_followed(tmp_path: Path) -> None:
    text = _SMI_LOOKUP.replace('return "/usr/bin/nvidia-smi"', 'return "/usr/bin/amd-smi"')
    text = text.replace('"BURN_SMI", "nvidia-smi"', '"BURN_SMI", "amd-smi"')
    shown = _shown(_scan(tmp_path, {"burn/cli.py": text}))
    assert not [s for s in shown if s[1] == 15]


# -- containers and launchers outside Python ------------------------------------------------------

_SLURM_TEMPLATE = """#!/bin/bash
#SBATCH --nodes={{ nodes }}
{%- if memory_measure %}
srun --ntasks=1 --overlap nvidia-smi
{%- endif %}
which nvidia-smi && nvidia-smi || echo "no nvidia-smi"
if command -v nvidia-smi >/dev/null; then
    nvidia-smi -L
fi
"""


def test_nvidia_smi_in_a_jinja_template_of_a_shell_script(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"pkg/templates/slurm.sh.j2": _SLURM_TEMPLATE})
    shown = _shown(report)
    assert ("pkg/templates/slurm.sh.j2", 4, "nvidia-smi", "warn") in shown
    # asked for first (which / command -v): where it is missing the script goes on
    assert not [s for s in shown if s[1] in (6, 8)]
    infos = {(f.line, f.severity) for f in report.findings if f.rule_id == "nvidia-smi"}
    assert (6, "info") in infos


def test_a_jinja_template_of_another_kind_is_not_read_as_shell(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"pkg/templates/page.html.j2": _SLURM_TEMPLATE})
    assert not report.findings


_LAUNCHER = """#!/bin/bash
DOCKER_IMAGE_NAME=$1
if [[ "${DOCKER_IMAGE_NAME}" == *"cu"* ]]; then
    if ! type "nvidia-docker" 1> /dev/null 2> /dev/null; then
        DOCKER_BINARY="docker"
        CUDA_ENV=" --gpus all "${CUDA_ENV}
    else
        DOCKER_BINARY="nvidia-docker"
    fi
else
    DOCKER_BINARY="docker"
fi
TRAIN_ARGS="--gpus 4 --epochs 2"
${DOCKER_BINARY} run --rm --pid=host \\
    -v "$(pwd)":/workspace \\
    ${CUDA_ENV} \\
    "${DOCKER_IMAGE_NAME}" python train.py ${TRAIN_ARGS}
"""


def test_docker_gpus_passed_through_shell_variables(tmp_path: Path) -> None:
    shown = _shown(_scan(tmp_path, {"scripts/docker/bash.sh": _LAUNCHER}))
    assert ("scripts/docker/bash.sh", 6, "docker-gpus", "warn") in shown
    assert ("scripts/docker/bash.sh", 8, "docker-gpus", "warn") in shown
    # --gpus of the program run inside the container is the program's own option
    assert not [s for s in shown if s[1] == 13]


def test_launcher_that_passes_amd_devices_too_is_a_vendor_choice(tmp_path: Path) -> None:
    text = _LAUNCHER.replace(
        'DOCKER_BINARY="docker"\nfi',
        'DOCKER_BINARY="docker"\n    CUDA_ENV="--device=/dev/kfd --device=/dev/dri"\nfi',
    )
    shown = _shown(_scan(tmp_path, {"scripts/docker/bash.sh": text}))
    assert not [s for s in shown if s[2] == "docker-gpus"]


_RUNTIME = """def configure_runtime(run_options, runtime_output):
    if "nvidia-container-runtime" in runtime_output:
        return run_options + ["--runtime=nvidia", "--gpus all"]
    return run_options
"""


def test_nvidia_runtime_option_built_in_python(tmp_path: Path) -> None:
    shown = _shown(_scan(tmp_path, {"sky/docker_utils.py": _RUNTIME}))
    assert ("sky/docker_utils.py", 3, "docker-gpus", "warn") in shown


def test_nvidia_runtime_beside_amd_devices_is_info(tmp_path: Path) -> None:
    text = _RUNTIME.replace(
        "    return run_options\n",
        '    return run_options + ["--device=/dev/kfd", "--device=/dev/dri"]\n',
    )
    report = _scan(tmp_path, {"sky/docker_utils.py": text})
    assert not [s for s in _shown(report) if s[2] == "docker-gpus"]
    assert any(f.rule_id == "docker-gpus" and f.severity == "info" for f in report.findings)


# -- ONNX Runtime: the device "cuda" mapped to NVIDIA's provider --------------------------------

_ORT_MAP = """import onnxruntime as ort


def providers_for(device):
    provider = {
        "cpu": "CPUExecutionProvider",
        "cuda": "CUDAExecutionProvider",
        "coreml": "CoreMLExecutionProvider",
    }.get(device)
    if provider not in ort.get_available_providers():
        raise RuntimeError(f"{provider} was requested but is unavailable")
    return [provider]
"""

_ORT_BRANCH = """import onnxruntime as ort

SETTINGS = {"cpu": "CPUExecutionProvider", "rocm": "ROCMExecutionProvider"}


class Model:
    def __init__(self, path, device="cpu"):
        if device not in SETTINGS and "cuda" in device:
            providers = ("CUDAExecutionProvider", {"device_id": int(device.split(":")[-1])})
        else:
            providers = SETTINGS[device]
        self.session = ort.InferenceSession(path, providers=[providers])
"""


def test_device_map_that_sends_cuda_to_nvidia_provider(tmp_path: Path) -> None:
    shown = _shown(_scan(tmp_path, {"reid/onnx_backend.py": _ORT_MAP}))
    assert ("reid/onnx_backend.py", 7, "ort-nvidia-provider", "warn") in shown


def test_device_map_that_only_tries_the_provider_is_a_warning(tmp_path: Path) -> None:
    # ONNX Runtime warns about a provider its build lacks and runs on the CPU: the GPU the user
    # asked for is lost, degraded (warn, session nine; info before), with the reason
    text = _ORT_MAP.replace("    if provider not in ort.get_available_providers():\n", "")
    text = text.replace(
        '        raise RuntimeError(f"{provider} was requested but is unavailable")\n', ""
    )
    report = _scan(tmp_path, {"reid/onnx_backend.py": text})
    assert ("reid/onnx_backend.py", 7, "ort-nvidia-provider", "warn") in _shown(report)
    finding = next(f for f in report.findings if f.line == 7)
    assert "runs on the CPU" in finding.evidence


def test_device_map_with_an_amd_provider_is_not_reported(tmp_path: Path) -> None:
    text = _ORT_MAP.replace(
        '"coreml": "CoreMLExecutionProvider",', '"rocm": "MIGraphXExecutionProvider",'
    )
    assert not _shown(_scan(tmp_path, {"reid/onnx_backend.py": text}))


def test_branch_on_a_cuda_device_that_picks_nvidia_provider(tmp_path: Path) -> None:
    shown = _shown(_scan(tmp_path, {"tools/base.py": _ORT_BRANCH}))
    # the module's settings name ROCm, but a device with an index only ever gets CUDA's provider
    assert ("tools/base.py", 9, "ort-nvidia-provider", "warn") in shown


def test_branch_in_a_function_that_names_an_amd_provider_is_not_reported(tmp_path: Path) -> None:
    text = _ORT_BRANCH.replace(
        "        else:\n            providers = SETTINGS[device]",
        '        elif "rocm" in device:\n            providers = ("ROCMExecutionProvider", {})'
        "\n        else:\n            providers = SETTINGS[device]",
    )
    assert not _shown(_scan(tmp_path, {"tools/base.py": text}))


# -- a module-level table of what an installer helper installs -----------------------------------

_INSTALL_TABLE = """from mypkg.checks import RequirementsChecker

MIN = ">=1.18.1"
NGC = ("--extra-index-url", "https://pypi.ngc.nvidia.com")

BACKEND_REQUIREMENTS: dict[str, tuple[str, ...]] = {
    "onnx": ("onnxruntime==1.24.3",),
    "onnx-cuda": (f"onnxruntime-gpu{MIN}",),
    "tensorrt": ("nvidia-tensorrt",),
}


def ensure_backend_requirements(backend):
    RequirementsChecker().check_packages(BACKEND_REQUIREMENTS[backend][:1])
"""


def test_install_table_read_by_an_installer_helper(tmp_path: Path) -> None:
    shown = _shown(_scan(tmp_path, {"mypkg/dependencies.py": _INSTALL_TABLE}))
    assert ("mypkg/dependencies.py", 8, "onnxruntime-gpu", "warn") in shown
    assert ("mypkg/dependencies.py", 9, "tensorrt", "warn") in shown
    assert not [s for s in shown if s[1] == 7]  # the CPU build of ONNX Runtime is fine


def test_requirement_table_with_no_installer_call_is_not_reported(tmp_path: Path) -> None:
    text = _INSTALL_TABLE.split("\n\ndef ensure")[0] + "\n\ndef describe(backend):\n    return 1\n"
    assert not _shown(_scan(tmp_path, {"mypkg/dependencies.py": text}))


# -- an assert that equates the capability with Hopper's 9 ----------------------------------------

_ASSERT_FA3 = """import torch

from .registry import register_attention_backend


@register_attention_backend("fa3")
def create_fa3_backend(runner):
    assert (
        torch.cuda.get_device_capability()[0] == 8 and not runner.use_mla
    ) or torch.cuda.get_device_capability()[0] == 9, (
        "This backend requires SM>=80 and SM<=90. Please use another backend."
    )
    from .fa3_backend import Backend

    return Backend(runner)
"""


def test_assert_on_hopper_major_lets_gfx9_into_nvidia_only_backend(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"attn/registry.py": _ASSERT_FA3})
    shown = _shown(report)
    # MI200/MI300 report major 9 under ROCm: the assert meant to stop them lets them through
    # FlashAttention-3 is built for NVIDIA only: error since round sixteen (a)
    assert ("attn/registry.py", 10, "device-capability", "error") in shown
    assert not {s for s in shown if s[1] == 9}  # == 8: no AMD GPU


def test_assert_on_hopper_major_that_names_no_nvidia_feature_stays_info(tmp_path: Path) -> None:
    text = _ASSERT_FA3.replace('"fa3"', '"tiled"').replace("create_fa3_backend", "create_tiled")
    text = text.replace("fa3_backend", "tiled_backend")
    report = _scan(tmp_path, {"attn/registry.py": text})
    assert not [s for s in _shown(report) if s[2] == "device-capability"]
