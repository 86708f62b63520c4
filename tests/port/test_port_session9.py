"""Issue 26, session nine: an extra named for another platform (an Intel GPU, Apple, Windows,
Ascend, TPU, Neuron, the CPU) is not what a ROCm install asks for; each case with one where it
must not apply, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan

from rocmkit.port.findings import PortFinding

_PYPROJECT = """[project]
name = "x"
dependencies = ["numpy"]

[project.optional-dependencies]
{extras}
"""


def _by_line(root: Path, files: dict[str, str], rule_id: str) -> dict[int, PortFinding]:
    """The findings of one rule, keyed by each line they report."""
    report = _scan(root, files)
    return {line: f for f in report.findings if f.rule_id == rule_id for line in f.lines}


def _extras(tmp_path: Path, extras: str) -> set[tuple[int, str, str]]:
    """(line, rule id, severity) of every finding, info included."""
    report = _scan(tmp_path, {"pyproject.toml": _PYPROJECT.format(extras=extras)})
    return {(line, f.rule_id, f.severity) for f in report.findings for line in f.lines}


def test_a_torch_pin_in_another_platforms_extra_is_info_with_the_reason(tmp_path: Path) -> None:
    extras = 'ipex = ["torch==2.8"]\nintel_macos = ["torch<2.3"]\ncpu-llm = ["vllm>=0.8"]\n'
    found = _extras(tmp_path, extras)
    assert {(6, "torch-pypi-pin", "info"), (7, "torch-pypi-pin", "info")} <= found
    assert (8, "vllm-pypi", "info") in found
    report = _scan(tmp_path, {})
    reasons = {line: f.evidence for f in report.findings for line in f.lines}
    assert "extra 'ipex' is for another platform (ipex)" in reasons[6]
    assert "another platform" in reasons[7] and "another platform" in reasons[8]


def test_extras_for_the_gpu_or_for_rocm_are_still_judged(tmp_path: Path) -> None:
    # a GPU extra (any vendor), one naming ROCm beside the CPU, and a plain one: not another
    # platform's; what they break stays a finding (an opt-in extra's error is a warning)
    found = _extras(tmp_path / "a", 'cpu-gpu = ["vllm>=0.8"]\nserve = ["torch==2.8"]\n')
    assert {(6, "vllm-pypi", "warn"), (7, "torch-pypi-pin", "warn")} <= found
    assert (6, "vllm-pypi", "warn") in _extras(tmp_path / "b", 'rocm-cpu = ["vllm>=0.8"]\n')


def test_platform_words_are_whole_words_of_the_extra(tmp_path: Path) -> None:
    # `macro`, `winner`, `cpus_x` hold platform letters but no platform word
    extras = 'macro = ["torch==2.8"]\nwinner = ["torch==2.8"]\n'
    found = _extras(tmp_path, extras)
    assert {(6, "torch-pypi-pin", "warn"), (7, "torch-pypi-pin", "warn")} <= found


# -- a command a mock recorded or a process error holds ------------------------------------------

_MOCKED = """import subprocess
from unittest.mock import patch


def test_probe():
    with patch("subprocess.check_output", return_value=b"GPU 0") as run:
        probe()
    run.assert_called_once_with(["nvidia-smi", "-L"], stderr=subprocess.DEVNULL)


def test_timeout():
    error = subprocess.TimeoutExpired("nvidia-smi", 5)
    raise_it(error)


def probe():
    return subprocess.check_output(["nvidia-smi", "-L"])
"""


def test_a_command_compared_by_a_mock_or_held_by_an_error_runs_nothing(tmp_path: Path) -> None:
    by_line = _by_line(tmp_path, {"test_probe.py": _MOCKED}, "nvidia-smi")
    for line in (8, 12):  # the mock's assertion, the error object
        assert by_line[line].severity == "info" and "nothing runs" in by_line[line].evidence
    # the call that does run it, in the same file, is still the finding
    assert by_line[17].rule_id == "nvidia-smi" and by_line[17].severity == "warn"


# -- the print family shows torch.version.cuda, it does not use it -------------------------------

_SHOWN = """import pprint
import torch


def report():
    fprint("CUDA version:", torch.version.cuda)
    pprint.pprint(torch.version.cuda)
    major = int(torch.version.cuda.split(".")[0])
    return parse_version(torch.version.cuda), major
"""


def test_torch_version_cuda_shown_by_a_print_function_is_not_a_finding(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"env.py": _SHOWN})
    lines = {line for f in report.findings if f.severity != "info" for line in f.lines}
    assert 6 not in lines and 7 not in lines  # printed: None prints as None
    assert {8, 9} <= lines  # split on None, and a value handed to a parser, still are


# -- an `except ImportError` that raises again is no fallback --------------------------------------

_RERAISED = """def build_engine(onnx_path):
    try:
        import tensorrt as trt
    except ImportError as exc:
        raise ImportError("pip install tensorrt to export engines") from exc
    return trt.Builder(onnx_path)


def probe():
    try:
        import tensorrt as trt
    except ImportError:
        trt = None
    return trt
"""


def test_an_import_whose_except_raises_again_is_required(tmp_path: Path) -> None:
    by_line = _by_line(tmp_path, {"export.py": _RERAISED}, "tensorrt")
    # the feature needs TensorRT, which has no AMD build: lost on ROCm (a nicer message is no
    # fallback); the probe that does without it is still info
    assert by_line[3].severity == "warn" and "no fallback" in by_line[3].evidence
    assert by_line[11].severity == "info"


# -- cuDNN turned off for determinism is the same trade-off on every vendor ------------------------

_CUDNN = """import torch
from torch import nn

model = nn.Conv2d(3, 8, 3)


def seed_everything(seed):
    torch.manual_seed(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.enabled = False


def work_around_a_cudnn_bug():
    torch.backends.cudnn.enabled = False
"""


def test_cudnn_turned_off_for_determinism_is_info(tmp_path: Path) -> None:
    by_line = _by_line(tmp_path, {"train.py": _CUDNN}, "cudnn-disabled")
    assert by_line[10].severity == "info" and "determinism" in by_line[10].evidence
    # elsewhere it turns MIOpen off on ROCm for a reason that is cuDNN's alone
    assert by_line[14].severity == "warn"


# -- a vendored copy of NVIDIA's pynvml -----------------------------------------------------------

_PYNVML = """import ctypes

nvmlLib = None


def _LoadNvmlLibrary():
    global nvmlLib
    nvmlLib = ctypes.CDLL("libnvidia-ml.so.1")


def nvmlInit():
    _LoadNvmlLibrary()
    fn = nvmlLib.nvmlInit_v2
    return fn()
"""
_CALLER = "from tracker.vendor import pynvml\n\n\ndef gpus():\n    pynvml.nvmlInit()\n"


def test_a_vendored_pynvml_is_the_bindings_insides_its_callers_are_the_finding(
    tmp_path: Path,
) -> None:
    vendored = _scan(
        tmp_path / "a", {"tracker/vendor/pynvml.py": _PYNVML, "tracker/monitor.py": _CALLER}
    )
    inside = [f for f in vendored.findings if f.path == "tracker/vendor/pynvml.py"]
    assert inside and all(f.severity == "info" for f in inside)
    assert any("a copy of NVIDIA's pynvml" in f.evidence for f in inside)
    assert any(f.path == "tracker/monitor.py" and f.severity == "warn" for f in vendored.findings)
    # at the top of the tree the module is the binding itself, the project's product
    itself = _scan(tmp_path / "b", {"pynvml.py": _PYNVML})
    assert any(f.severity == "warn" for f in itself.findings)


# -- PyTorch's CUDA index beside its ROCm index: one side of a choice ----------------------------


def test_a_cuda_index_in_a_module_that_names_the_rocm_index_too_is_info(tmp_path: Path) -> None:
    urls = (
        'CPU = "https://download.pytorch.org/whl/cpu"\n'
        'ROCM = "https://download.pytorch.org/whl/rocm7.2"\n'
        'NVIDIA = "https://download.pytorch.org/whl/cu126"\n'
    )
    both = _by_line(tmp_path / "a", {"deps.py": urls}, "torch-cuda-index")
    assert both[3].severity == "info" and "ROCm index too" in both[3].evidence
    alone = _by_line(
        tmp_path / "b", {"deps.py": urls.replace("rocm7.2", "cpu")}, "torch-cuda-index"
    )
    assert alone[3].severity == "error"
