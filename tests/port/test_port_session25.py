"""Issue 26, session twenty-five: each change, with a case where the finding must appear and one
where it must not, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import severities as _found

# -- torch's availability test choosing the GPU of a CTranslate2 model (faster-whisper, WhisperX)

_CT2 = "ct2-device-from-torch"


def test_torch_choosing_cuda_for_faster_whisper_is_an_error(tmp_path: Path) -> None:
    code = (
        "import torch\n"
        "from faster_whisper import WhisperModel\n\n"
        "def load(size):\n"
        '    device = "cuda" if torch.cuda.is_available() else "cpu"\n'  # line 5
        '    return WhisperModel(size, device=device, compute_type="float16")\n\n'
        "class Asr:\n"
        "    def _device(self):\n"
        "        if torch.cuda.is_available():\n"  # line 10
        '            return "cuda", "float16"\n'
        '        return "cpu", "int8"\n\n'
        "    def model(self):\n"
        "        device, compute = self._device()\n"
        "        return WhisperModel('small', device=device, compute_type=compute)\n\n"
        "    def other(self):\n"
        "        if torch.cuda.is_available():\n"
        "            return WhisperModel('small', 'cuda')\n"  # line 20: positional device
    )
    found = _found(_scan(tmp_path, {"asr.py": code}), _CT2)
    assert found == {("asr.py", 5): "error", ("asr.py", 10): "error", ("asr.py", 20): "error"}


def test_whisperx_device_through_self_and_a_parameter_default(tmp_path: Path) -> None:
    code = (
        "import torch\n"
        "import whisperx\n\n"
        "class Transcriber:\n"
        "    def __init__(self):\n"
        '        self.device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "        self.model = whisperx.load_model('large-v3', self.device)\n"  # line 7
        "\n"
        'def run(path, device="cuda" if torch.cuda.is_available() else "cpu"):\n'  # line 9
        "    return whisperx.load_model('small', device=device)\n"
    )
    found = _found(_scan(tmp_path, {"tx.py": code}), _CT2)
    assert found == {("tx.py", 7): "error", ("tx.py", 9): "error"}


def test_the_same_test_for_a_torch_model_or_a_ct2_answer_is_not_reported(tmp_path: Path) -> None:
    torch_model = (
        "import torch\n"
        "import whisper\n"
        "from faster_whisper import WhisperModel\n\n"
        "def load_torch(size):\n"
        '    device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "    return whisper.load_model(size, device=device)\n\n"  # openai-whisper: torch
        "def load_ct2(size):\n"
        '    return WhisperModel(size, device="auto")\n'
    )
    asks_ct2 = (
        "import ctranslate2\n"
        "import torch\n"
        "from faster_whisper import WhisperModel\n\n"
        "def load(size):\n"
        '    device = "cuda" if ctranslate2.get_cuda_device_count() > 0 else "cpu"\n'
        '    fallback = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "    return WhisperModel(size, device=device)\n"
    )
    hip_branch = (
        "import torch\n"
        "from faster_whisper import WhisperModel\n\n"
        "def load(size):\n"
        '    device = "cuda" if torch.cuda.is_available() and not torch.version.hip else "cpu"\n'
        "    return WhisperModel(size, device=device)\n"
    )
    report = _scan(
        tmp_path, {"torch_model.py": torch_model, "asks.py": asks_ct2, "hip.py": hip_branch}
    )
    assert _found(report, _CT2) == {}


# -- nvidia-smi tried first, rocm-smi (or a function named for ROCm) asked a few lines later


def test_nvidia_smi_followed_by_an_amd_fallback_in_the_same_block_is_info(tmp_path: Path) -> None:
    code = (
        "import subprocess\n\n"
        "def vram(tries):\n"
        "    for _ in range(tries):\n"
        "        try:\n"
        '            out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total",\n'  # line 6
        '                                  "--format=csv"], capture_output=True).stdout\n'
        "            return int(out)\n"
        "        except Exception:\n"
        "            pass\n"
        "        try:\n"
        "            from .detect import _rocm_state\n"
        "            return _rocm_state()[0]\n"
        "        except Exception:\n"
        "            pass\n\n"
        "def total():\n"
        '    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True).stdout\n'  # line 18
        "    if not out:\n"
        '        out = subprocess.run(["rocm-smi", "--showmeminfo", "vram"]).stdout\n'
        "    return out\n"
    )
    found = _found(_scan(tmp_path, {"gpu.py": code}), "nvidia-smi")
    assert found.get(("gpu.py", 6)) == "info"
    assert found.get(("gpu.py", 18)) == "info"


def test_nvidia_smi_with_no_amd_side_after_it_is_still_reported(tmp_path: Path) -> None:
    code = (
        "import subprocess\n\n"
        "def vram():\n"
        '    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True).stdout\n'  # line 4
        "    if not out:\n"
        '        return "amd GPUs are not supported"\n'  # words, not an AMD tool or function
        "    return out\n\n"
        "def rocm_note():\n"
        '    return "see rocm docs"\n'
    )
    found = _found(_scan(tmp_path, {"gpu.py": code}), "nvidia-smi")
    assert found.get(("gpu.py", 4)) in ("warn", "error")


# -- an extra of NVIDIA-only packages that an aggregate extra of the project pulls


def test_an_nvidia_only_extra_pulled_by_all_is_reported(tmp_path: Path) -> None:
    pyproject = (
        '[project]\nname = "demo-gen"\nversion = "1.0"\ndependencies = ["numpy"]\n\n'
        "[project.optional-dependencies]\n"
        'dev = ["pytest"]\n'
        'xformers = ["xformers>=0.0.25"]\n'  # line 8
        'all = ["demo-gen[dev,xformers]"]\n'
    )
    alone = pyproject.replace('all = ["demo-gen[dev,xformers]"]\n', "").replace(
        "demo-gen", "demo-solo"
    )
    found = _found(_scan(tmp_path / "a", {"pyproject.toml": pyproject}), "xformers-pypi")
    assert found == {("pyproject.toml", 8): "warn"}
    # the same extra that nothing pulls is the NVIDIA variant: info
    found = _found(_scan(tmp_path / "b", {"pyproject.toml": alone}), "xformers-pypi")
    assert found == {("pyproject.toml", 8): "info"}


# -- [tool.uv.sources] giving a package a +cuXXX wheel URL


def test_a_uv_source_wheel_url_with_a_cuda_local_version_is_an_error(tmp_path: Path) -> None:
    pyproject = (
        '[project]\nname = "demo"\nversion = "1.0"\ndependencies = ["flash-attn==2.8.3"]\n\n'
        "[tool.uv.sources]\n"
        "flash-attn = [\n"
        '    { url = "https://github.com/Dao-AILab/flash-attention/releases/download/v2.8.3/'
        'flash_attn-2.8.3+cu12torch2.8cxx11abiFALSE-cp310-cp310-linux_x86_64.whl", '
        "marker = \"sys_platform == 'linux'\" },\n"  # line 8
        '    { url = "https://example.org/flash_attn-2.8.3+cu128torch2.8.0-cp310-cp310-win_amd64.whl", '
        "marker = \"sys_platform == 'win32'\" },\n"  # line 9: Windows only
        "]\n"
        'einops = { url = "https://example.org/einops-0.8.0-py3-none-any.whl" }\n'  # no CUDA tag
    )
    found = _found(_scan(tmp_path, {"pyproject.toml": pyproject}), "cuda-local-version")
    assert found == {("pyproject.toml", 8): "error"}


# -- a converter's name: onnx2trt.py beside onnx2mxr.py


def test_a_tensorrt_converter_beside_its_migraphx_counterpart_is_info(tmp_path: Path) -> None:
    files = {
        "conv/onnx2trt.py": "import tensorrt as trt\n",
        "conv/onnx2mxr.py": "import migraphx\n",
        "solo/onnx2trt.py": "import tensorrt as trt\n",  # no MIGraphX converter beside it
    }
    found = _found(_scan(tmp_path, files), "tensorrt")
    assert found == {("conv/onnx2trt.py", 1): "info", ("solo/onnx2trt.py", 1): "error"}


# -- a CUDA_HOME path inside a conditional expression that tests CUDA_HOME


def test_a_cuda_home_path_behind_its_own_conditional_expression_is_info(tmp_path: Path) -> None:
    code = (
        "import os\n"
        "from torch.utils.cpp_extension import CUDA_HOME\n\n"
        "def nvcc():\n"
        '    return os.path.join(CUDA_HOME, "bin", "nvcc") if CUDA_HOME else "nvcc"\n'  # line 5
        "\ndef nvcc_always():\n"
        '    return os.path.join(CUDA_HOME, "bin", "nvcc")\n'  # line 8
    )
    found = _found(_scan(tmp_path, {"build.py": code}), "cuda-home-none")
    assert found == {("build.py", 5): "info", ("build.py", 8): "error"}


# -- the capability returned as an SM number and compared with NVIDIA's FP8 line


def test_a_capability_returned_as_an_sm_number_compared_with_89_is_reported(
    tmp_path: Path,
) -> None:
    code = (
        "import torch\n\n"
        "def get_gpu_arch():\n"
        "    major, minor = torch.cuda.get_device_capability()\n"  # line 4
        "    return major * 10 + minor\n\n"
        "def supports_fp8():\n"
        "    return get_gpu_arch() >= 89\n"
    )
    never = code.replace("    return get_gpu_arch() >= 89\n", "    return get_gpu_arch()\n")
    found = _found(_scan(tmp_path / "a", {"arch.py": code}), "device-capability")
    assert found == {("arch.py", 4): "warn"}
    found = _found(_scan(tmp_path / "b", {"arch.py": never}), "device-capability")
    assert found == {("arch.py", 4): "info"}


# -- whisperx requires CTranslate2 and faster-whisper from PyPI


def test_a_whisperx_requirement_is_reported_and_openai_whisper_is_not(tmp_path: Path) -> None:
    pyproject = (
        '[project]\nname = "demo"\nversion = "1.0"\n'
        'dependencies = [\n    "whisperx>=3.8",\n    "openai-whisper",\n]\n'  # lines 5, 6
    )
    report = _scan(tmp_path, {"pyproject.toml": pyproject})
    assert _found(report, "whisperx-ctranslate2") == {("pyproject.toml", 5): "warn"}
    assert not [f for f in report.findings if f.line == 6 and f.severity != "info"]
