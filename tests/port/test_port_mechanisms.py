"""Issue 26, third round: general mechanisms behind the false positives and misses of the seen
corpus parts. Each has a case where it applies and one where it must not (a real hazard next to
the structure is still found), on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan

from rocmkit.port import PortConfig, scan_project

_PTX = '__global__ void k(int *x) {\n  asm volatile("mov.u32 %0, %%laneid;" : "=r"(x[0]));\n}\n'


def _rows(report) -> set[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    return {(f.path, f.rule_id, f.severity) for f in report.findings}


def _by_path(report, path: str):  # type: ignore[no-untyped-def]
    return [f for f in report.findings if f.path == path]


# -- a cuda/ folder with a hip/ sibling, at any depth ---------------------------------------------


def test_files_deep_in_a_cuda_folder_beside_a_hip_folder_are_info(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "ext/cuda/marlin/kernel.cu": _PTX,
            "ext/hip/unpack.cu": "__global__ void k() {}\n",
            "ext/common/fast.cu": _PTX,  # beside the structure, not in it: still an error
        },
    )
    deep = _by_path(report, "ext/cuda/marlin/kernel.cu")
    assert [f.severity for f in deep] == ["info"]
    assert "has a ROCm counterpart: ext/hip/" in deep[0].note
    assert ("ext/common/fast.cu", "cuda-inline-ptx", "error") in _rows(report)


def test_a_cuda_folder_with_no_rocm_sibling_keeps_its_findings(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"ext/cuda/marlin/kernel.cu": _PTX, "ext/cpu/x.cpp": "int x;\n"})
    assert ("ext/cuda/marlin/kernel.cu", "cuda-inline-ptx", "error") in _rows(report)


# -- short-circuit vendor tests: `torch.version.hip or ...` -------------------------------------

_BF16 = "import torch\n\ndef bf16():\n    return {test}\n"


def test_a_capability_test_after_a_hip_test_in_an_or_is_info(tmp_path: Path) -> None:
    test = "bool(torch.version.hip) or torch.cuda.get_device_capability()[0] >= 8"
    report = _scan(tmp_path, {"m.py": _BF16.format(test=test)})
    assert _rows(report) == {("m.py", "device-capability", "info")}


def test_a_capability_test_before_a_plain_or_stays_a_warning(tmp_path: Path) -> None:
    # (8, 9) is NVIDIA's FP8 line: the answer is wrong on AMD whatever the `or` adds.
    test = "torch.cuda.get_device_capability() >= (8, 9) or FORCE_FP8"
    report = _scan(tmp_path, {"m.py": _BF16.format(test=test)})
    assert _rows(report) == {("m.py", "device-capability", "warn")}


# -- NVML: the requirement installs, the call is the hazard -------------------------------------


def test_an_optional_nvml_import_with_an_unconditional_init_is_a_warning_at_the_call(
    tmp_path: Path,
) -> None:
    source = (
        "class GPUInfo:\n"
        "    def __init__(self):\n"
        "        try:\n"
        "            import pynvml\n"
        "            pynvml.nvmlInit()\n"
        "        except Exception:\n"
        "            pass\n"
    )
    report = _scan(tmp_path, {"pick.py": source, "requirements.txt": "nvidia-ml-py>=12\n"})
    warned = [f for f in report.findings if f.severity == "warn"]
    assert [(f.path, f.rule_id, f.line) for f in warned] == [
        ("pick.py", "nvml", 5),
        ("requirements.txt", "nvml", 1),  # the binding the call needs (session thirty)
    ]
    requirement = _by_path(report, "requirements.txt")
    assert "the project calls NVML" in requirement[0].evidence


def test_an_nvml_init_on_the_cuda_side_of_a_vendor_switch_is_info(tmp_path: Path) -> None:
    source = (
        "import torch\n\n"
        "def energy():\n"
        "    if torch.version.hip:\n"
        "        import amdsmi\n"
        "        return amdsmi.amdsmi_init()\n"
        "    else:\n"
        "        import pynvml\n"
        "        pynvml.nvmlInit()\n"
    )
    report = _scan(tmp_path, {"energy.py": source})
    assert {f.severity for f in report.findings} == {"info"}


# -- a function named for a vendor is one side only if the other side exists --------------------

_SMI = (
    "import subprocess\n\n"
    "def check_cuda_with_nvidia_smi():\n"
    "    out = subprocess.check_output(['nvidia-smi', '-L'])\n"
    "    return len(out.splitlines())\n"
)


def test_a_lone_nvidia_named_gpu_detection_is_a_warning(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"connector.py": _SMI})
    assert _rows(report) == {("connector.py", "nvidia-smi", "warn")}


def test_an_nvidia_named_function_beside_an_amd_one_is_gated(tmp_path: Path) -> None:
    amd = "\ndef check_amd_with_rocm_smi():\n    return subprocess.check_output(['rocm-smi'])\n"
    report = _scan(tmp_path, {"connector.py": _SMI + amd})
    assert _rows(report) == {("connector.py", "nvidia-smi", "info")}


_PLUGIN = (
    "def cuda_platform_plugin():\n    import pynvml\n    pynvml.nvmlInit()\n    return 'cuda'\n"
)


def test_a_cuda_named_function_beside_its_rocm_twin_is_gated(tmp_path: Path) -> None:
    rocm = "\ndef rocm_platform_plugin():\n    import amdsmi\n    return 'rocm'\n"
    report = _scan(tmp_path, {"platforms.py": _PLUGIN + rocm})
    assert {f.severity for f in report.findings} == {"info"}


def test_a_cuda_named_function_without_a_rocm_twin_is_not_gated(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"platforms.py": _PLUGIN})
    assert ("platforms.py", "nvml", "warn") in _rows(report)


# -- a Dockerfile written by a Python program ----------------------------------------------------

_TEMPLATE = (
    'CUDA_TEMPLATE = """# base\nFROM nvidia/cuda:12.4.1-base-ubuntu22.04\nRUN pip install x\n"""\n'
)


def test_a_cuda_image_in_a_python_dockerfile_template_is_found_at_its_line(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"docker_builder.py": _TEMPLATE})
    (finding,) = report.findings
    assert (finding.rule_id, finding.severity, finding.line) == ("cuda-image", "error", 2)
    assert finding.evidence.startswith("FROM nvidia/cuda:12.4.1")


def test_a_cuda_template_beside_a_rocm_template_is_info(tmp_path: Path) -> None:
    rocm = 'ROCM_TEMPLATE = """FROM rocm/pytorch:rocm6.4_ubuntu22.04_py3.10\n"""\n'
    report = _scan(tmp_path, {"docker_builder.py": _TEMPLATE + rocm})
    assert _rows(report) == {("docker_builder.py", "cuda-image", "info")}


# -- TensorRT: an optional export target ---------------------------------------------------------


def test_tensorrt_probed_inside_an_export_function_is_info(tmp_path: Path) -> None:
    # Round seven: only a probe (try/except ImportError that does without it) is info; an
    # import the function needs is a warning (test_port_round7.py).
    source = (
        "import torch\n\n"
        "def export_engine(model):\n"
        "    try:\n"
        "        import tensorrt as trt\n"
        "    except ImportError:\n"
        "        return None\n"
        "    return trt.Builder\n\n"
        "def check_tensorrt():\n"
        "    major = torch.version.cuda.split('.')[0]\n"
        "    return f'tensorrt-cu{major}'\n"
    )
    report = _scan(tmp_path, {"export.py": source})
    assert {f.severity for f in report.findings} == {"info"}
    tensorrt = [f for f in report.findings if f.rule_id == "tensorrt"]
    assert "TensorRT feature" in tensorrt[0].evidence


def test_tensorrt_imported_at_module_level_and_a_plain_version_split_stay(tmp_path: Path) -> None:
    source = (
        "import tensorrt as trt\nimport torch\n\n"
        "def wheel_tag():\n"
        "    return torch.version.cuda.split('.')[0]\n"
    )
    report = _scan(tmp_path, {"serve.py": source})
    assert _rows(report) == {
        ("serve.py", "tensorrt", "error"),
        ("serve.py", "torch-version-cuda", "warn"),
    }


# -- a version recorded in a dict through a conditional expression ------------------------------


def test_a_cuda_version_recorded_in_a_dict_behind_a_condition_is_info(tmp_path: Path) -> None:
    source = "import torch\n\ninfo = {'CUDA': torch.version.cuda if torch.cuda.is_available() else None}\n"
    report = _scan(tmp_path, {"env.py": source})
    assert _rows(report) == {("env.py", "torch-version-cuda", "info")}


# -- files named for another accelerator or for NVIDIA-only hardware -----------------------------


def test_requirements_for_another_accelerator_are_info(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {"requirements/npu.txt": "torch==2.7.1\n", "requirements/base.txt": "torch==2.7.1\n"},
    )
    assert _rows(report) == {
        ("requirements/npu.txt", "torch-pypi-pin", "info"),
        ("requirements/base.txt", "torch-pypi-pin", "warn"),
    }
    (npu,) = _by_path(report, "requirements/npu.txt")
    assert "another accelerator" in npu.note


def test_a_dockerfile_named_for_blackwell_is_info_and_a_plain_one_is_not(tmp_path: Path) -> None:
    image = "FROM nvidia/cuda:12.8.0-devel-ubuntu22.04\n"
    report = _scan(
        tmp_path, {"docker/Dockerfile-cloud-blackwell": image, "docker/Dockerfile": image}
    )
    assert _rows(report) == {
        ("docker/Dockerfile-cloud-blackwell", "cuda-base-image", "info"),
        ("docker/Dockerfile", "cuda-base-image", "error"),
    }


def test_a_cuda_version_stored_through_a_conditional_and_printed_is_not_a_warning(
    tmp_path: Path,
) -> None:
    printed = (
        "import torch\n\n"
        "def report():\n"
        "    v = torch.version.cuda if torch.cuda.is_available() else 'n/a'\n"
        "    print(f'CUDA version: {v}')\n"
    )
    split = printed.replace("print(f'CUDA version: {v}')", "return v.split('.')[0]")
    quiet = _scan(tmp_path / "a", {"env.py": printed})
    loud = _scan(tmp_path / "b", {"env.py": split})
    assert not [f for f in quiet.findings if f.severity != "info"]
    assert _rows(loud) == {("env.py", "torch-version-cuda", "warn")}


# -- a module the project loads only under `if torch.version.cuda:` -----------------------------

_GATED_INIT = "import torch\n\nif torch.version.cuda:\n    from .cuda import *\nelse:\n    from .cpu import *\n"
_EXTENSION = {
    "pkg/__init__.py": "",
    "pkg/ext/cuda/__init__.py": "import torch\nCAP = torch.cuda.get_device_capability()[0] >= 9\n",
    "pkg/ext/cuda/kernel.cu": _PTX,
    "pkg/ext/cpu/__init__.py": "",
}


def test_a_module_imported_only_under_a_cuda_test_is_info(tmp_path: Path) -> None:
    report = _scan(tmp_path, {**_EXTENSION, "pkg/ext/__init__.py": _GATED_INIT})
    assert {f.severity for f in report.findings} == {"info"}
    assert all("loaded only on a CUDA torch" in f.note for f in report.findings)
    assert "pkg/ext/__init__.py:4" in report.findings[0].note


def test_a_gated_module_imported_elsewhere_or_behind_a_device_test_keeps_its_findings(
    tmp_path: Path,
) -> None:
    also = {"pkg/model.py": "from pkg.ext.cuda import CAP\n"}
    report = _scan(tmp_path / "a", {**_EXTENSION, "pkg/ext/__init__.py": _GATED_INIT, **also})
    assert ("pkg/ext/cuda/kernel.cu", "cuda-inline-ptx", "error") in _rows(report)
    by_device = _GATED_INIT.replace("torch.version.cuda", "torch.cuda.is_available()")
    report = _scan(tmp_path / "b", {**_EXTENSION, "pkg/ext/__init__.py": by_device})
    assert ("pkg/ext/cuda/kernel.cu", "cuda-inline-ptx", "error") in _rows(report)


# -- capability: a chip's tuning table is not a feature floor ------------------------------------

_TILES = (
    "import torch\n\n"
    "def block_size(device):\n"
    "    major, minor = torch.cuda.get_device_capability(device)\n"
    "    is_sm8x = major == 8 and minor > 0\n"
    "    is_sm90 = major == 9 and minor == 0\n"
    "    return 64 if is_sm8x or is_sm90 else 128\n"
)


def test_a_per_chip_tuning_table_on_major_and_minor_is_info(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"tiles.py": _TILES})
    (finding,) = report.findings
    assert (finding.rule_id, finding.severity) == ("device-capability", "info")
    assert "check what the branch picks" in finding.evidence


def test_a_feature_floor_on_the_unpacked_major_is_reported_to_check(tmp_path: Path) -> None:
    # What `major >= 9` turns on is not known from the comparison: info, "check what it gates".
    floor = _TILES.replace("is_sm90 = major == 9 and minor == 0", "is_sm90 = major >= 9")
    report = _scan(tmp_path, {"tiles.py": floor})
    assert _rows(report) == {("tiles.py", "device-capability", "info")}
    assert "check what it gates" in report.findings[0].evidence


# -- uv's torch backend picks the PyTorch index ---------------------------------------------------


def test_a_cuda_uv_torch_backend_and_its_default_are_found(tmp_path: Path) -> None:
    dockerfile = (
        "FROM rocm/dev-ubuntu-22.04:6.4\n"
        'ARG TORCH_BACKEND="cu130"\n'
        "RUN UV_TORCH_BACKEND=$TORCH_BACKEND uv pip install torch==2.9.0\n"
    )
    script = "uv pip install --torch-backend cu128 torch\n"
    report = _scan(tmp_path, {"Dockerfile": dockerfile, "setup.sh": script})
    found = {(f.path, f.rule_id, f.severity, f.lines) for f in report.findings}
    assert ("Dockerfile", "torch-cuda-index", "error", (2, 3)) in found
    assert ("setup.sh", "torch-cuda-index", "error", (1,)) in found


def test_a_rocm_or_auto_uv_torch_backend_is_not_a_finding(tmp_path: Path) -> None:
    script = (
        "# uv pip install --torch-backend cu128 torch\n"
        "TORCH_BACKEND=${TORCH_BACKEND:-rocm6.4}\n"
        'uv pip install --torch-backend "$TORCH_BACKEND" torch\n'
        "uv pip install --torch-backend=auto torchvision\n"
    )
    report = _scan(tmp_path, {"setup.sh": script})
    assert report.findings == ()


# -- a file scanned alone keeps its folder's meaning ---------------------------------------------


def test_a_file_scanned_alone_in_an_nvidia_only_folder_is_info(tmp_path: Path) -> None:
    setup = (
        "from torch.utils.cpp_extension import CUDAExtension\n"
        "flags = ['-gencode', 'arch=compute_90a,code=sm_90a']\n"
    )
    for folder in ("hopper", "build"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "setup.py").write_text(setup)
    hopper = scan_project(PortConfig(path=tmp_path / "hopper" / "setup.py", show_info=True))
    plain = scan_project(PortConfig(path=tmp_path / "build" / "setup.py", show_info=True))
    assert {f.severity for f in hopper.findings} == {"info"}
    assert "NVIDIA-only part of the project (hopper/)" in hopper.findings[0].note
    assert "warn" in {f.severity for f in plain.findings}


def test_the_rocm_twin_itself_is_not_gated_and_a_wavefront_fallback_of_32_is_found(
    tmp_path: Path,
) -> None:
    source = (
        "import subprocess\n\n"
        "def get_rocm_wavefront_size():\n"
        "    try:\n"
        "        return subprocess.check_output(['rocminfo']).decode()\n"
        "    except FileNotFoundError:\n"
        "        rocm_wavefront_size = '32'\n"
        "    return rocm_wavefront_size\n\n"
        "def get_cuda_wavefront_size():\n"
        "    wavefront_size = 32\n"
        "    return wavefront_size\n"
    )
    report = _scan(tmp_path, {"builder.py": source})
    severities = {(f.line, f.severity) for f in report.findings}
    assert (7, "warn") in severities  # the ROCm side's own fallback: a hazard on ROCm
    assert (11, "info") in severities  # the CUDA twin of a ROCm function


def test_a_cache_named_for_rocm_is_not_a_vendor_switch_but_a_rocm_flag_is(tmp_path: Path) -> None:
    body = "    if {test}:\n        return None\n    return torch.version.cuda.split('.')\n"
    head = "import torch\n\ndef version():\n"
    cache = _scan(tmp_path / "a", {"v.py": head + body.format(test="_rocm_version_cache")})
    flag = _scan(tmp_path / "b", {"v.py": head + body.format(test="IS_ROCM")})
    assert _rows(cache) == {("v.py", "torch-version-cuda", "warn")}
    assert _rows(flag) == {("v.py", "torch-version-cuda", "info")}
