"""Issue 26, ninth round: mechanisms read from the emitters' own definitions (hipDeviceProp_t's
major/minor as HIP fills them from the gfx target, AMD's per-target feature tables), each with a
case where it applies and one where it must not, on small synthetic trees written for these
tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

from rocmkit.port import capability_features

# -- capability comparisons evaluated for every AMD target ---------------------------------------


def test_hip_reports_the_gfx_number_as_the_capability() -> None:
    table = capability_features.AMD_CAPABILITIES
    assert table["gfx90a"] == (9, 0)
    assert table["gfx942"] == (9, 4)
    assert table["gfx1100"] == (11, 0)
    # `cap >= (9, 0)` is taken by every CDNA and RDNA target; `major == 9` only by CDNA
    assert set(capability_features.passing(">=", 9.0, False, False)) == set(table)
    assert capability_features.passing("==", 9.0, False, True) == [
        "gfx908",
        "gfx90a",
        "gfx942",
        "gfx950",
    ]
    # `if cap < (9, 4): refuse`: the targets that get through are those at or above 9.4
    assert "gfx90a" not in capability_features.passing("<", 9.4, False, False)
    assert "gfx942" in capability_features.passing("<", 9.4, False, False)


@pytest.mark.parametrize(
    ("source", "hazard"),
    [
        # the function's name says what the comparison decides: fp8, which MI200 lacks
        (
            "import torch\n\ndef supports_fp8():\n"
            "    return torch.cuda.get_device_capability() >= (9, 0)\n",
            True,
        ),
        # the stored name: CUDA-built kernels on a major >= 7, through get_device_properties()
        (
            "import torch\n\ndef settings():\n"
            "    use_marlin = torch.cuda.get_device_properties(0).major >= 8\n"
            "    return use_marlin\n",
            True,
        ),
        # FlashAttention on major >= 8: ROCm's builds cover MI200/MI300 and RDNA3/4 (info)
        (
            "import torch\n\ndef settings():\n"
            "    use_flash = torch.cuda.get_device_properties(0).major >= 8\n"
            "    return use_flash\n",
            False,
        ),
        # a name that describes the device (is_sm90), not what the branch does
        (
            "import torch\n\ndef tiles():\n"
            "    is_sm90 = torch.cuda.get_device_capability()[0] >= 9\n"
            "    return 64 if is_sm90 else 128\n",
            False,
        ),
        # the module already asks which vendor's torch runs it
        (
            "import torch\n\ndef supports_fp8():\n"
            "    if torch.version.hip:\n        return False\n"
            "    return torch.cuda.get_device_capability() >= (9, 0)\n",
            False,
        ),
        # a branch that only logs
        (
            "import torch, logging\n\ndef note():\n"
            "    if torch.cuda.get_device_capability()[0] < 9:\n"
            '        logging.info("fp8 needs sm90")\n',
            False,
        ),
        # the refusal's message names the architecture: every AMD GPU gets through
        (
            "import torch\n\ndef check():\n"
            "    major = torch.cuda.get_device_capability(0)[0]\n"
            "    if major < 9:\n"
            '        raise RuntimeError("this kernel requires sm90+")\n',
            True,
        ),
        # a flag named for CUDA-built kernels
        (
            "import torch\n\nuse_cuda_kernels = torch.cuda.get_device_capability()[0] >= 7\n",
            True,
        ),
        # nothing names what the branch is for: left at info
        (
            "import torch\n\ndef big():\n    return torch.cuda.get_device_capability() >= (9, 0)\n",
            False,
        ),
        # bf16 exists on every AMD target that passes: no feature lacking
        (
            "import torch\n\ndef use_bf16():\n"
            "    return torch.cuda.get_device_capability() >= (8, 0)\n",
            False,
        ),
        # fp8 gated at 12.0: the AMD target that passes (RDNA4) has it
        (
            "import torch\n\ndef has_fp8():\n"
            "    return torch.cuda.get_device_capability() >= (12, 0)\n",
            False,
        ),
        # an exclusion threshold below Ampere: every AMD GPU takes the general path
        (
            "import torch\n\ndef old_gpu_flash():\n"
            "    return torch.cuda.get_device_properties(0).major < 7\n",
            False,
        ),
        # get_device_properties() read for its memory only: not a capability
        (
            "import torch\n\ndef flash_budget():\n"
            "    return torch.cuda.get_device_properties(0).total_memory > 8e9\n",
            False,
        ),
    ],
)
def test_a_capability_branch_named_for_an_nvidia_feature_is_judged_per_amd_target(
    tmp_path: Path, source: str, hazard: bool
) -> None:
    report = _scan(tmp_path, {"pkg/gpu.py": source})
    warned = {r for (_, _, r, s) in _shown(report) if s in ("warn", "error")}
    assert ("device-capability" in warned) is hazard
    if hazard:
        evidence = next(f.evidence for f in report.findings if f.rule_id == "device-capability")
        assert "gfx" in evidence  # names the AMD targets that take the branch


def test_stored_device_properties_are_followed_to_their_major(tmp_path: Path) -> None:
    source = (
        "import torch\n\ndef pick():\n"
        "    props = torch.cuda.get_device_properties(0)\n"
        "    fp8_ok = props.major >= 9\n"
        "    return fp8_ok\n"
    )
    report = _scan(tmp_path, {"pkg/gpu.py": source})
    assert ("pkg/gpu.py", 4, "device-capability", "warn") in _shown(report)


# -- extras: what pip installs for whoever asks for one ------------------------------------------


def _pyproject(extras: str, project: str = "proj") -> str:
    return f'[project]\nname = "{project}"\ndependencies = ["numpy"]\n\n[project.optional-dependencies]\n{extras}'


def test_a_torch_pin_in_an_extra_is_not_the_nvidia_variant(tmp_path: Path) -> None:
    # `torch = ["torch==1.13.1"]`: pip replaces a ROCm torch for whoever asks for the extra
    report = _scan(tmp_path, {"pyproject.toml": _pyproject('torch = ["torch==1.13.1"]\n')})
    assert ("pyproject.toml", 6, "torch-pypi-pin", "warn") in _shown(report)


def test_an_extra_named_for_cuda_of_another_package_is_judged_by_its_metadata(
    tmp_path: Path,
) -> None:
    text = _pyproject('quant = ["entropack[cuda13]"]\nall = ["entropack[cuda13]", "rich"]\n')
    report = _scan(tmp_path, {"pyproject.toml": text})
    # both extras are found, each at its own line (the requirement is repeated)
    assert {("pyproject.toml", 6, "cuda-build-package", "warn")} | {
        ("pyproject.toml", 7, "cuda-build-package", "warn")
    } <= _shown(report)
    # an extra named for CUDA whose contents port does not know: info, with the command
    unknown = _scan(tmp_path / "u", {"requirements.txt": "somepkg[cuda12]>=1\n"})
    (finding,) = unknown.findings
    assert finding.severity == "info" and "pip install --dry-run" in finding.evidence


def test_a_gpu_build_extra_named_as_its_package_is_opt_in_but_a_generic_one_is_not(
    tmp_path: Path,
) -> None:
    named = _scan(tmp_path / "a", {"pyproject.toml": _pyproject('faiss-gpu = ["faiss-gpu"]\n')})
    assert not _shown(named)
    generic = _scan(tmp_path / "b", {"pyproject.toml": _pyproject('gpu = ["faiss-gpu"]\n')})
    assert ("pyproject.toml", 6, "cuda-build-package", "warn") in _shown(generic)
    # a package not named as a GPU build keeps its finding in an extra of its own name
    other = _scan(tmp_path / "c", {"pyproject.toml": _pyproject('vllm = ["vllm==0.9.0"]\n')})
    assert {r for (_, _, r, _) in _shown(other)} == {"vllm-pypi"}


def test_a_cuda_named_extra_pulled_by_a_generic_one_through_the_project_is_reported(
    tmp_path: Path,
) -> None:
    extras = 'cupy-cu130 = ["cupy-cuda13x==14.0.1"]\nfsdp = ["proj[cupy-cu130]", "accelerate"]\n'
    report = _scan(tmp_path / "a", {"pyproject.toml": _pyproject(extras)})
    (finding,) = [f for f in report.findings if f.rule_id == "cupy-cuda"]
    assert finding.severity == "warn" and "pulled by extra 'fsdp'" in finding.evidence
    # nobody pulls it: the NVIDIA variant, info where the project offers CuPy's ROCm wheels too
    # (session fifteen: with no ROCm CuPy anywhere, an AMD user has no install, see
    # test_port_session15)
    rocm = extras.splitlines()[0] + '\nrocm = ["cupy-rocm-5-0"]\n'
    alone = _scan(tmp_path / "b", {"pyproject.toml": _pyproject(rocm)})
    assert not _shown(alone)


def test_poetry_optional_dependencies_are_judged_with_the_extras_that_list_them(
    tmp_path: Path,
) -> None:
    text = (
        '[tool.poetry]\nname = "proj"\n\n[tool.poetry.dependencies]\npython = "^3.10"\n'
        'onnxruntime-gpu = {version = "1.19.*", optional = true}\n'
        'ctranslate2 = {version = "*", optional = true}\n'
        'torch = {version = "*", optional = true}\n\n'
        '[tool.poetry.extras]\nonnxruntime-gpu = ["onnxruntime-gpu"]\n'
        'ct2 = ["ctranslate2", "torch"]\n'
    )
    report = _scan(tmp_path, {"pyproject.toml": text})
    shown = _shown(report)
    assert not any(r == "onnxruntime-gpu" for (_, _, r, _) in shown)  # its own opt-in extra
    assert any(r == "ctranslate2-pypi" for (_, _, r, _) in shown)  # part of a generic extra


# -- NVML bound as a module's only GPU API -------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "import_line_reported"),
    [
        # gpustat's collection queries NVML itself: the import binds the module's GPU API
        (
            "from gpustat import GPUStatCollection\n\ndef rows():\n"
            "    return GPUStatCollection.new_query().jsonify()\n",
            True,
        ),
        # an AMD side in the same module: the NVML import is one vendor's branch
        (
            "import amdsmi\nfrom gpustat import GPUStatCollection\n\ndef rows():\n"
            "    return GPUStatCollection.new_query().jsonify()\n",
            False,
        ),
        # an optional binding (under try): the query line is the finding, not the import
        (
            "try:\n    import pynvml\nexcept ImportError:\n    pynvml = None\n\ndef n():\n"
            "    pynvml.nvmlInit()\n    return pynvml.nvmlDeviceGetCount()\n",
            False,
        ),
    ],
)
def test_an_nvml_binding_that_is_the_modules_only_gpu_api_is_reported_at_its_import(
    tmp_path: Path, source: str, import_line_reported: bool
) -> None:
    report = _scan(tmp_path, {"pkg/gpus.py": source})
    lines = {line for (_, line, rule, _) in _shown(report) if rule == "nvml"}
    import_line = next(
        i for i, text in enumerate(source.splitlines(), 1) if "pynvml" in text or "gpustat" in text
    )
    assert (import_line in lines) is import_line_reported
    assert lines  # the query (or init) is reported either way


# -- a Python docker client's gpus= ---------------------------------------------------------------


def test_a_docker_clients_gpus_keyword_is_docker_run_gpus(tmp_path: Path) -> None:
    source = (
        "from python_on_whales import docker\n\n"
        "def start(image, use_gpu):\n"
        "    def _run(gpus=None):\n"
        "        return docker.run(image, detach=True, gpus=gpus)\n"
        '    return _run("all" if use_gpu else None)\n\n'
        "def direct(image):\n"
        '    return docker.run(image, gpus="all")\n'
    )
    report = _scan(tmp_path, {"pkg/runner.py": source})
    assert {
        ("pkg/runner.py", 6, "docker-gpus", "warn"),
        ("pkg/runner.py", 9, "docker-gpus", "warn"),
    } <= _shown(report)


def test_a_gpus_keyword_of_something_other_than_a_docker_client_is_not(tmp_path: Path) -> None:
    # PyTorch Lightning's Trainer(gpus=1) and a non-docker run(): not a container request
    source = (
        "import lightning as L\n\n"
        "def fit(model, runner):\n"
        "    trainer = L.Trainer(gpus=1)\n"
        '    runner.run(model, gpus="all")\n'
        "    return trainer\n"
    )
    report = _scan(tmp_path, {"pkg/train.py": source})
    assert not {r for (_, _, r, _) in _shown(report) if r == "docker-gpus"}
