"""Issue 26, eleventh round: mechanisms read from the emitters' own definitions (what setuptools
takes from setup() and from pyproject.toml, ...), each with a case where it applies and one where
it must not, on small synthetic trees written for these tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

# -- setup.py extras given as module-level names ---------------------------------------------------

_EXTRAS_BY_NAME = """import setuptools

LOCAL = [
    "transformers",
    "vllm",
]
API = ["openai"]
ALL = LOCAL + API

setuptools.setup(
    name="evaluator",
    install_requires=["requests"],
    extras_require={"local": LOCAL, "api": API, "all": ALL},
)
"""


def test_an_extra_given_as_a_name_is_what_pip_installs_for_it(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"setup.py": _EXTRAS_BY_NAME})
    # vllm from PyPI is the CUDA build; in an extra it is opt-in: warn, at its line in the list
    assert ("setup.py", 5, "vllm-pypi", "warn") in _shown(report)


def test_an_extra_of_names_holding_nothing_cuda_only_is_no_finding(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"setup.py": _EXTRAS_BY_NAME.replace('"vllm"', '"peft"')})
    assert _shown(report) == set()


# -- setup.py lists that pyproject.toml's [project] table replaces --------------------------------

_SETUP_WITH_LISTS = """from setuptools import setup

EXTRAS = {"serve": ["vllm>=0.6"]}

setup(
    name="tool",
    install_requires=["tensorrt-llm==0.16.0"],
    extras_require=EXTRAS,
)
"""


def test_setup_lists_are_ignored_where_pyproject_declares_them(tmp_path: Path) -> None:
    pyproject = '[project]\nname = "tool"\nversion = "1"\ndependencies = ["numpy"]\n'
    report = _scan(tmp_path, {"setup.py": _SETUP_WITH_LISTS, "pyproject.toml": pyproject})
    assert _shown(report) == set()
    notes = [f.evidence for f in report.findings if f.path == "setup.py"]
    assert notes and all("pyproject.toml's [project] declares" in n for n in notes)


@pytest.mark.parametrize(
    "pyproject",
    [
        # both lists are dynamic: setuptools takes them from setup()
        '[project]\nname = "tool"\nversion = "1"\n'
        'dynamic = ["dependencies", "optional-dependencies"]\n',
        # no [project] table: setup() is the only declaration
        '[build-system]\nrequires = ["setuptools"]\n',
    ],
)
def test_setup_lists_count_where_pyproject_leaves_them_to_setup(
    tmp_path: Path, pyproject: str
) -> None:
    report = _scan(tmp_path, {"setup.py": _SETUP_WITH_LISTS, "pyproject.toml": pyproject})
    shown = _shown(report)
    assert ("setup.py", 7, "tensorrt", "error") in shown
    assert ("setup.py", 3, "vllm-pypi", "warn") in shown


# -- an exact torch pin in pyproject.toml beside a CUDA index ---------------------------------------

_PINNED_WITH_CUDA_INDEX = """[project]
name = "audio"
version = "1"
dependencies = [
    "torch==2.7.1",
    "numpy",
]

[[tool.uv.index]]
name = "pytorch-cu126"
url = "https://download.pytorch.org/whl/cu126"
explicit = true

[tool.uv.sources]
torch = [{ index = "pytorch-cu126" }]
"""


def test_a_base_torch_pin_beside_a_cuda_index_is_still_the_cuda_build(tmp_path: Path) -> None:
    # pip reads no index from pyproject.toml (PyPI's torch is the CUDA build); uv uses the CUDA
    # index: either way the pin installs CUDA torch, so it is a finding beside the index's own
    report = _scan(tmp_path, {"pyproject.toml": _PINNED_WITH_CUDA_INDEX})
    assert ("pyproject.toml", 5, "torch-pypi-pin", "warn") in _shown(report)


def test_a_base_torch_pin_beside_a_rocm_index_is_no_pin_finding(tmp_path: Path) -> None:
    rocm = _PINNED_WITH_CUDA_INDEX.replace("whl/cu126", "whl/rocm6.4").replace("cu126", "rocm")
    report = _scan(tmp_path, {"pyproject.toml": rocm})
    assert not any(f.rule_id == "torch-pypi-pin" for f in report.findings)


# -- PyTorch's flash SDPA backend turned on only for an NVIDIA chip --------------------------------

_A100_ONLY_FLASH = """import torch


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        props = torch.cuda.get_device_properties(torch.device("cuda"))
        if props.major == 8 and props.minor == 0:
            self.sdp_kernel_config = (True, False, False)
        else:
            self.sdp_kernel_config = (False, True, True)
"""


@pytest.mark.parametrize(
    "branch",
    [
        "self.sdp_kernel_config = (True, False, False)",
        "self.backends = [torch.nn.attention.SDPBackend.FLASH_ATTENTION]",
        "self.ctx = torch.backends.cuda.sdp_kernel(enable_flash=True, enable_math=False)",
    ],
)
def test_flash_sdpa_only_for_an_nvidia_chip_is_withheld_from_amd(
    tmp_path: Path, branch: str
) -> None:
    # MI200/MI300 report (9, 0)/(9, 4): never (8, 0), so their ROCm torch's AOTriton flash
    # backend is never asked for
    source = _A100_ONLY_FLASH.replace("self.sdp_kernel_config = (True, False, False)", branch)
    report = _scan(tmp_path, {"attn.py": source})
    assert ("attn.py", 7, "device-capability", "warn") in _shown(report)


@pytest.mark.parametrize(
    "source",
    [
        # a floor that MI200/MI300 pass: they get flash
        _A100_ONLY_FLASH.replace("props.major == 8 and props.minor == 0", "props.major >= 8"),
        # the A100 branch turns flash off: AMD GPUs keep it
        _A100_ONLY_FLASH.replace("(True, False, False)", "(False, True, True)", 1),
        # the module already asks which vendor's torch runs it
        _A100_ONLY_FLASH.replace(
            "super().__init__()",
            "super().__init__()\n        self.rocm = torch.version.hip is not None",
        ),
    ],
)
def test_flash_sdpa_behind_a_test_amd_passes_is_no_warning(tmp_path: Path, source: str) -> None:
    report = _scan(tmp_path, {"attn.py": source})
    assert not any(
        f.rule_id == "device-capability" for f in report.findings if f.severity != "info"
    )


# -- an ONNX Runtime provider list that knows no AMD provider --------------------------------------

_PRIORITY = """import onnxruntime

PRIORITY = (
    "CoreMLExecutionProvider",
    "CUDAExecutionProvider",
    "CPUExecutionProvider",
)


def default_providers():
    available = onnxruntime.get_available_providers()
    return [p for p in PRIORITY if p in available][:1] + ["CPUExecutionProvider"]
"""


def test_a_provider_list_without_an_amd_provider_is_reported_at_the_list(tmp_path: Path) -> None:
    # ONNX Runtime's AMD builds list ROCMExecutionProvider/MIGraphXExecutionProvider, never CUDA's:
    # the filter leaves only the CPU on an AMD machine
    report = _scan(tmp_path, {"providers.py": _PRIORITY})
    assert ("providers.py", 5, "ort-nvidia-provider", "warn") in _shown(report)


@pytest.mark.parametrize(
    "source",
    [
        # the module knows the AMD provider
        _PRIORITY.replace(
            '"CPUExecutionProvider",\n)',
            '"MIGraphXExecutionProvider",\n    "CPUExecutionProvider",\n)',
        ),
        # (A literal list handed to InferenceSession was here until session eleven: it is the
        # module's own choice, and the AMD build runs it on the CPU; test_port_session11.py.)
        # a module whose code has a ROCm branch written elsewhere (ultralytics' shape)
        "import onnxruntime\n\ndef session(path, rocm):\n    if rocm:\n"
        "        return _load_migraphx_session(path)\n    return onnxruntime.InferenceSession(\n"
        '        path, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])\n',
    ],
)
def test_a_provider_list_with_an_amd_side_or_no_build_check_is_not(
    tmp_path: Path, source: str
) -> None:
    report = _scan(tmp_path, {"providers.py": source})
    assert not any(f.rule_id == "ort-nvidia-provider" for f in report.findings)


# -- the capability made into an SM number that nvcc targets are written from ----------------------

_SM_FROM_CAPABILITY = """import torch
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension


def compatible_sms():
    sms = set()
    for i in range(torch.cuda.device_count()):
        cap = torch.cuda.get_device_capability(i)
        sms.add(f"{cap[0]}{cap[1]}")
    return sms


flags = [f"-gencode=arch=compute_{sm},code=sm_{sm}" for sm in compatible_sms()]
setup(ext_modules=[CUDAExtension("ops", ["ops.cu"], extra_compile_args={"nvcc": flags})])
"""


_CAPABILITY_UNDER_CUDA_HOME = """import torch
from setuptools import setup
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CUDAExtension

sms = set()
if CUDA_HOME is not None:
    cap = torch.cuda.get_device_capability()
    sms.add(f"{cap[0]}{cap[1]}")
flags = [f"-gencode=arch=compute_{sm},code=sm_{sm}" for sm in sms]
setup(ext_modules=[CUDAExtension("ops", ["ops.cu"], extra_compile_args={"nvcc": flags})])
"""


def test_a_capability_made_into_an_sm_number_for_nvcc_targets_is_reported(
    tmp_path: Path,
) -> None:
    # on ROCm the capability is the gfx number: MI300X makes "94", an SM that does not exist
    report = _scan(tmp_path, {"setup.py": _SM_FROM_CAPABILITY})
    assert ("setup.py", 9, "device-capability", "warn") in _shown(report)


@pytest.mark.parametrize(
    "source",
    [
        # the SM number is only printed: no nvcc target is written from such numbers
        _SM_FROM_CAPABILITY.replace('f"-gencode=arch=compute_{sm},code=sm_{sm}"', "sm"),
        # the capability is read only in a branch a ROCm build never takes (CUDA_HOME is None)
        _CAPABILITY_UNDER_CUDA_HOME,
    ],
)
def test_an_sm_number_nobody_targets_or_no_rocm_build_makes_is_not(
    tmp_path: Path, source: str
) -> None:
    report = _scan(tmp_path, {"setup.py": source})
    assert not any(
        f.rule_id == "device-capability" and f.severity != "info" for f in report.findings
    )


# -- NVML as the NVIDIA side of a project that reads AMD GPUs through AMD SMI ----------------------

_NVML_TRACKER = """import pynvml


def nvidia_power():
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    return pynvml.nvmlDeviceGetPowerUsage(handle)
"""
_AMD_TRACKER = """import amdsmi


def amd_power():
    amdsmi.amdsmi_init()
    return amdsmi.amdsmi_get_power_info(amdsmi.amdsmi_get_processor_handles()[0])
"""


def test_nvml_in_a_project_that_also_reads_amd_smi_is_its_nvidia_side(tmp_path: Path) -> None:
    files = {"tracker/nvidia.py": _NVML_TRACKER, "tracker/amd.py": _AMD_TRACKER}
    report = _scan(tmp_path, files)
    nvml = [f for f in report.findings if f.rule_id == "nvml"]
    assert nvml and all(f.severity == "info" for f in nvml)
    assert "tracker/amd.py" in nvml[0].note


def test_nvml_without_an_amd_side_and_nvidia_smi_in_a_launcher_keep_their_warning(
    tmp_path: Path,
) -> None:
    alone = _scan(tmp_path / "alone", {"tracker/nvidia.py": _NVML_TRACKER})
    assert ("tracker/nvidia.py", 5, "nvml", "warn") in _shown(alone)
    launcher = "#!/bin/bash\nnvidia-smi --query-gpu=name --format=csv\npython run.py\n"
    both = _scan(tmp_path / "both", {"tracker/amd.py": _AMD_TRACKER, "run.sh": launcher})
    assert ("run.sh", 2, "nvidia-smi", "warn") in _shown(both)


# -- an import of CTranslate2 where no requirement file declares it -------------------------------

_CT2_BACKEND = """import ctranslate2


def load(path, device="cuda"):
    return ctranslate2.models.Whisper(path, device=device)
"""


def test_ctranslate2_imported_with_no_declaration_is_reported_at_the_import(
    tmp_path: Path,
) -> None:
    # PyPI's ctranslate2 is CPU + CUDA; with nothing to change in a requirement file, the import
    # is where the project meets it
    report = _scan(tmp_path, {"pkg/backend.py": _CT2_BACKEND, "pkg/__init__.py": ""})
    assert ("pkg/backend.py", 1, "ctranslate2-pypi", "warn") in _shown(report)


@pytest.mark.parametrize(
    ("declaration", "declared_line"),
    [
        ({"requirements.txt": "numpy\nctranslate2>=4\n"}, ("requirements.txt", 2)),
        # faster-whisper requires ctranslate2: its requirement declares CTranslate2 too
        (
            {
                "pyproject.toml": '[project]\nname = "s"\nversion = "1"\n'
                'dependencies = ["faster-whisper>=1.1"]\n'
            },
            ("pyproject.toml", 4),
        ),
    ],
)
def test_ctranslate2_imported_where_a_requirement_declares_it_is_shown_there(
    tmp_path: Path, declaration: dict[str, str], declared_line: tuple[str, int]
) -> None:
    files = {"pkg/backend.py": _CT2_BACKEND, "pkg/__init__.py": "", **declaration}
    shown = _shown(_scan(tmp_path, files))
    assert not any(path == "pkg/backend.py" for path, _, _, _ in shown)
    assert any((path, line) == declared_line for path, line, _, _ in shown)


# -- RAPIDS by its import names --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "line", "severity"),
    [
        # what every user of the module loads: RAPIDS has no ROCm build
        ("import cudf\n\ndf = cudf.DataFrame()\n", 1, "error"),
        # the GPU path of a function, with no fallback: that path fails on ROCm
        (
            'def load(path, device="gpu"):\n    if device == "gpu":\n        import cudf\n\n'
            "        return cudf.read_csv(path)\n    import pandas\n    return pandas.read_csv(path)\n",
            3,
            "warn",
        ),
    ],
)
def test_a_rapids_import_is_reported(tmp_path: Path, source: str, line: int, severity: str) -> None:
    report = _scan(tmp_path, {"data.py": source})
    assert ("data.py", line, "rapids-cuda", severity) in _shown(report)


@pytest.mark.parametrize(
    "source",
    [
        # an ImportError fallback
        "try:\n    import cudf\nexcept ImportError:\n    cudf = None\n",
        # imported only where the availability gate finds RAPIDS installed
        "from .compat import cudf\n\nif cudf:\n    import dask_cudf\n    from cudf import Series\n",
        # dask's Dispatch.register_lazy: runs only once cudf has been imported
        "from dask.utils import Dispatch\n\nsizeof = Dispatch()\n\n\n"
        '@sizeof.register_lazy("cudf")\ndef _register():\n    import cudf\n',
    ],
)
def test_a_rapids_import_behind_its_availability_is_not(tmp_path: Path, source: str) -> None:
    report = _scan(tmp_path, {"pkg/data.py": source, "pkg/__init__.py": ""})
    assert not any(f.rule_id == "rapids-cuda" for f in report.findings if f.severity != "info")


# -- a package with no ROCm build pulled through another package's extra ---------------------------


def test_an_extra_named_for_vllm_pulls_vllm(tmp_path: Path) -> None:
    pyproject = (
        '[project]\nname = "asr"\nversion = "1"\ndependencies = ["numpy"]\n\n'
        '[project.optional-dependencies]\nserve = ["qwen-asr[vllm]"]\n'
    )
    report = _scan(tmp_path, {"pyproject.toml": pyproject})
    assert ("pyproject.toml", 7, "vllm-pypi", "warn") in _shown(report)


@pytest.mark.parametrize(
    "files",
    [
        # (optimum-onnx[onnxruntime-gpu] in an `onnx-gpu` extra was here, not flagged: since
        # session twenty-nine what another package's extra pulls is read from its metadata,
        # cuda_extras.toml, and judged as the package it pulls is: test_port_session29.py)
        # inside vLLM itself the extra pulls the project being installed, not PyPI's vLLM
        {
            "pyproject.toml": '[project]\nname = "vllm"\nversion = "1"\n\n'
            '[project.optional-dependencies]\ngrpc = ["grpc-servicer[vllm]"]\n'
        },
    ],
)
def test_an_extra_named_for_a_cpu_capable_package_or_the_project_itself_is_not(
    tmp_path: Path, files: dict[str, str]
) -> None:
    report = _scan(tmp_path, files)
    assert not any(f.rule_id == "vllm-pypi" for f in report.findings if f.severity != "info")
    assert not any(f.rule_id == "onnxruntime-gpu" and f.severity != "info" for f in report.findings)
