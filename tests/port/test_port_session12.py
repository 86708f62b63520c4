"""Issue 26, session twelve: ffmpeg asked for NVIDIA's video engines (FFmpeg's own names for
NVENC, CUVID, the cuda hwaccel and the CUDA/NPP filters), and Poetry's optional dependencies read
as Poetry defines them (a list of per-platform tables, a package named in a TOML comment). Each
case with one where the finding must not appear, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan

from rocmkit.port.findings import PortFinding

_FFMPEG = "ffmpeg-nvidia-codec"


def _by_line(root: Path, files: dict[str, str], rule: str) -> dict[int, PortFinding]:
    report = _scan(root, files)
    return {line: f for f in report.findings if f.rule_id == rule for line in f.lines}


# ffmpegcv's shape: a GPU reader whose command asks for the cuda hwaccel and a CUVID decoder, a
# writer whose codec defaults to NVENC, and a GPU count read from NVENC's own listing.
_READER = '''import subprocess

SUPPORTED = ("h264_nvenc", "libx264")


def gpu_reader(path, gpu=0):
    """Decode on the GPU, e.g. VideoCapture(path, codec="h264_cuvid")."""
    cmd = (
        f"ffmpeg -loglevel error -hwaccel cuda -hwaccel_device {gpu} "
        f"-vcodec h264_cuvid -i {path} -f rawvideo pipe:"
    )
    return subprocess.Popen(cmd, shell=True)


def count_gpus():
    out = subprocess.run("ffmpeg -f lavfi -i nullsrc -c:v h264_nvenc -gpu list -f null -", shell=True)
    return out.returncode


def writer(path, codec="hevc_nvenc"):
    if codec == "h264_nvenc":
        pass
    return subprocess.Popen(["ffmpeg", "-i", "pipe:", "-c:v", codec, path])


def frames(path):
    return ["ffmpeg", "-hwaccel", "auto", "-hwaccel_output_format", "cuda", "-i", path, "-"]
'''


def test_ffmpeg_commands_and_defaults_that_ask_for_nvidia_engines_are_warnings(
    tmp_path: Path,
) -> None:
    found = _by_line(tmp_path, {"video/io.py": _READER}, _FFMPEG)
    # the command string, the GPU count, the codec default, the argv list's hwaccel output;
    # not the tuple of choices (3), the docstring (7) or the comparison (21)
    assert set(found) == {9, 16, 20, 27}
    assert {f.severity for f in found.values()} == {"warn"}
    assert "-hwaccel cuda" in found[9].evidence
    # one finding per rule and file: the writer alone says why its line is one
    writer = "import subprocess\n\n\n" + _READER[_READER.index("def writer") :]
    (alone,) = _scan(tmp_path / "w", {"video/writer.py": writer}).findings
    assert alone.line == 4 and "default of codec" in alone.evidence


def test_a_hwaccel_setting_of_cuda_is_nvidias_decoder(tmp_path: Path) -> None:
    # torchaudio's StreamReader: hw_accel="cuda:0" decodes with NVDEC
    module = (
        "def reader(stream, path):\n"
        '    stream.add_video_stream(5, decoder="h264", hw_accel="cuda:0")\n'
        '    stream.add_video_stream(5, device="cuda:0")\n'
    )
    report = _scan(tmp_path, {"video/read.py": module})
    (finding,) = [f for f in report.findings if f.rule_id == _FFMPEG]
    # the hwaccel setting on line 2; a torch device string (line 3) is no finding
    assert finding.lines == (2,) and finding.severity == "warn"


def test_an_ffmpeg_module_that_also_names_vaapi_is_one_side_of_a_switch(tmp_path: Path) -> None:
    switched = (
        _READER
        + '\n\ndef amd_reader(path):\n    return ["ffmpeg", "-hwaccel", "vaapi", "-i", path]\n'
    )
    found = _by_line(tmp_path, {"video/io.py": switched}, _FFMPEG)
    assert found and {f.severity for f in found.values()} == {"info"}


def test_strings_that_only_name_nvenc_outside_a_command_are_no_finding(tmp_path: Path) -> None:
    # lerobot's and opentalking's shapes: a list of codecs a user may pick, and a branch on the pick
    module = """CODECS = ["libsvtav1", "h264", "h264_nvenc", "hevc_nvenc"]
MAP = {"h264": "h264_cuvid"}


def options(vcodec):
    if vcodec in ("h264_nvenc", "hevc_nvenc"):
        return {"preset": "p4"}
    return {}
"""
    assert not _by_line(tmp_path, {"video/config.py": module}, _FFMPEG)


def test_a_shell_script_running_ffmpeg_with_nvenc_is_a_warning(tmp_path: Path) -> None:
    script = (
        "#!/bin/sh\nffmpeg -i in.mp4 -c:v h264_nvenc out.mp4\n"
        "# ffmpeg -c:v hevc_nvenc in a comment\nffmpeg -i in.mp4 -c:v libx264 cpu.mp4\n"
    )
    found = _by_line(tmp_path, {"scripts/encode.sh": script}, _FFMPEG)
    assert [(line, f.severity) for line, f in found.items()] == [(2, "warn")]


# rectools' shape: a CUDA-only CuPy wheel as a Poetry dependency written as a list of per-Python
# tables, each `optional = true`, installed by two extras; a comment above names the package too.
_POETRY = """[tool.poetry]
name = "demo"
version = "0.1"

[tool.poetry.dependencies]
python = ">=3.9"
# other packages (like cupy-cuda12x) use CUDA 12
implicit = "^0.7.1"
cupy-cuda12x = [
    {version = "^13.3.0", python = "<3.13", optional = true},
    {version = "^13.4.0", python = ">=3.13", optional = true},
]

[tool.poetry.extras]
cupy = ["cupy-cuda12x"]
all = [
    "implicit",
    "cupy-cuda12x",
]
"""


def test_a_poetry_dependency_of_optional_tables_is_reported_where_its_extras_install_it(
    tmp_path: Path,
) -> None:
    found = _by_line(tmp_path, {"pyproject.toml": _POETRY}, "cupy-cuda")
    # its own entry and each extra's line; never the comment on line 7
    assert set(found) == {9, 15, 18}
    assert {f.severity for f in found.values()} == {"warn"}
    assert "opt-in extra" in found[9].evidence
    # nobody's extra lists it: pip never installs it
    alone = _POETRY.split("[tool.poetry.extras]")[0]
    assert not [
        f for f in _scan(tmp_path / "b", {"pyproject.toml": alone}).findings if f.severity != "info"
    ]


def test_a_requirement_named_only_in_a_toml_comment_is_found_at_its_own_line(
    tmp_path: Path,
) -> None:
    pyproject = """[project]
name = "demo"
version = "0.1"
# torch==2.1.0 was the last release we tested with CUDA 11
dependencies = [
    "torch==2.1.0",  # pinned # twice
]
"""
    found = _by_line(tmp_path, {"pyproject.toml": pyproject}, "torch-pypi-pin")
    assert set(found) == {6}


# -- after round A (test56-test59) was scored ---------------------------------------------------

# The lucidrains attend.py shape (voicebox-pytorch): flash SDPA turned on only for an A100 through
# a named tuple whose first field is enable_flash.
_ATTEND = """from collections import namedtuple
import torch

FlashAttentionConfig = namedtuple("FlashAttentionConfig", ["enable_flash", "enable_math", "enable_mem_efficient"])


class Attend:
    def __init__(self):
        props = torch.cuda.get_device_properties(torch.device("cuda"))
        if props.major == 8 and props.minor == 0:
            self.cuda_config = FlashAttentionConfig(True, False, False)
        else:
            self.cuda_config = FlashAttentionConfig(False, True, True)
"""


def test_flash_withheld_through_a_named_tuple_the_module_defines_is_a_warning(
    tmp_path: Path,
) -> None:
    found = _by_line(tmp_path / "a", {"attend.py": _ATTEND}, "device-capability")
    assert [(line, f.severity) for line, f in found.items()] == [(9, "warn")]
    assert "flash backend only for NVIDIA chips" in found[9].evidence
    # a constructor the module does not define as enable_flash-first says nothing about flash
    other = _ATTEND.replace('["enable_flash", "enable_math"', '["enable_math", "enable_flash"')
    found = _by_line(tmp_path / "b", {"attend.py": other}, "device-capability")
    assert [f.severity for f in found.values()] == ["info"]


def test_a_capability_test_on_the_nvidia_side_of_a_vendor_switch_is_info(tmp_path: Path) -> None:
    # sdnq's shape: NVIDIA's FP8 line on the "cuda" side, the gfx version on the "rocm" side
    module = """import torch
from .common import backend, device, gfx_version

if backend == "cuda":
    fp8_mm = torch.cuda.get_device_capability(device) >= (8, 9)
elif backend == "rocm":
    fp8_mm = gfx_version >= 0x940
"""
    found = _by_line(tmp_path / "a", {"pkg/kernels.py": module}, "device-capability")
    assert [f.severity for f in found.values()] == ["info"]
    assert "gated" in found[5].evidence
    alone = "import torch\n\nfp8_mm = torch.cuda.get_device_capability() >= (8, 9)\n"
    found = _by_line(tmp_path / "b", {"pkg/kernels.py": alone}, "device-capability")
    assert [f.severity for f in found.values()] == ["warn"]


def test_tensorpacks_nvml_wrapper_is_nvml(tmp_path: Path) -> None:
    # torchpack's GPU utilisation tracker: tensorpack's ctypes wrapper loads libnvidia-ml
    module = """from tensorpack.utils.nvml import NVMLContext


def utilisation(devices):
    with NVMLContext() as ctx:
        return [ctx.device(k).utilization()["gpu"] for k in devices]
"""
    found = _by_line(tmp_path, {"pkg/trackers.py": module}, "nvml")
    assert found and {f.severity for f in found.values()} == {"warn"}


def test_a_gpus_option_pair_added_to_a_docker_argv_is_docker_gpus(tmp_path: Path) -> None:
    # polyaxon's shape: a resources class completes the argv another function gives `docker run`
    module = """class Resources:
    def to_cmd(self):
        cmd_args = []
        if self.memory:
            cmd_args += ["--memory", self.memory]
        if self.gpus:
            cmd_args += ["--gpus", self.gpus]
        return cmd_args


def docker_mem_bytes(value):
    return value
"""
    found = _by_line(tmp_path / "a", {"pkg/docker_types.py": module}, "docker-gpus")
    assert [(line, f.severity) for line, f in found.items()] == [(7, "warn")]
    # the same pair in a module that never speaks of docker is another tool's own option
    plain = module.replace("docker_mem_bytes", "memory_bytes")
    assert not _by_line(tmp_path / "b", {"pkg/cli.py": plain}, "docker-gpus")


# -- after round B (test60, test61) was scored --------------------------------------------------


def test_nunchaku_nvdiffrast_and_optix_are_nvidia_only_libraries(tmp_path: Path) -> None:
    files = {
        "setup.py": 'from setuptools import setup\n\nsetup(name="demo", install_requires=["diffrp-nvdiffrast"])\n',
        "demo/render.py": "import nvdiffrast.torch as dr\n",
        "demo/quant.py": "from nunchaku import NunchakuFluxTransformer2dModel\n",
        "demo/rays.py": "def caster():\n    import torchoptix\n\n    return torchoptix\n",
    }
    report = _scan(tmp_path, files)
    shown = {(f.path, f.severity) for f in report.findings if f.rule_id == "nvidia-only-library"}
    # the declaration and every import of the three libraries: no ROCm build to fall back on
    assert shown == {
        ("setup.py", "error"),
        ("demo/render.py", "error"),
        ("demo/quant.py", "error"),
        ("demo/rays.py", "error"),
    }
    # a library with a ROCm path is not one of them
    other = _scan(tmp_path / "b", {"demo/render.py": "import pytorch3d.renderer\n"})
    assert not [f for f in other.findings if f.rule_id == "nvidia-only-library"]


def test_a_plain_gpus_device_request_is_docker_gpus(tmp_path: Path) -> None:
    # pipeline-ai's shape: the docker SDK's spelling of `docker run --gpus`
    module = """import docker


def up(client, image, gpu_ids):
    request = docker.types.DeviceRequest(device_ids=gpu_ids, capabilities=[["gpu"]])
    return client.containers.run(image, device_requests=[request])
"""
    found = _by_line(tmp_path / "a", {"pkg/up.py": module}, "docker-gpus")
    assert [(line, f.severity) for line, f in found.items()] == [(5, "warn")]
    # naming NVIDIA's driver is the container-gpu-request error, not this
    nvidia = module.replace("capabilities=", 'driver="nvidia", capabilities=')
    assert not _by_line(tmp_path / "b", {"pkg/up.py": nvidia}, "docker-gpus")


def test_a_numba_probe_that_only_warns_does_not_lower_its_kernels(tmp_path: Path) -> None:
    # hippynn's shape: the module warns that the kernels will fail, then defines them anyway
    module = """import warnings
import numba
import numba.cuda

if not numba.cuda.is_available():
    warnings.warn("numba.cuda.is_available() returned False: kernels will fail on GPU tensors")


@numba.cuda.jit
def envsum(out, values):
    i = numba.cuda.grid(1)
    out[i] = values[i]
"""
    found = _by_line(tmp_path / "a", {"kernels/env_numba.py": module}, "numba-cuda")
    assert [(line, f.severity) for line, f in found.items()] == [(3, "error")]
    # a probe that picks another path is the module doing without the target
    chooses = module.replace(
        '    warnings.warn("numba.cuda.is_available() returned False: kernels will fail on GPU tensors")',
        "    raise ImportError('no CUDA: use the pytorch kernels')",
    )
    found = _by_line(tmp_path / "b", {"kernels/env_numba.py": chooses}, "numba-cuda")
    assert [f.severity for f in found.values()] == ["info"]


def test_numbas_driver_binding_is_an_error(tmp_path: Path) -> None:
    module = "from numba.cuda.cudadrv import devices, devicearray, driver\n\n\ndef context():\n    return devices.get_context()\n"
    found = _by_line(tmp_path / "a", {"kernels/fast_convert.py": module}, "numba-cuda")
    assert [(line, f.severity) for line, f in found.items()] == [(1, "error")]
    # its exception classes are what a module catches when the driver is missing (recommenders)
    catches = "from numba.cuda.cudadrv.error import CudaSupportError\n"
    assert not _by_line(tmp_path / "b", {"utils/gpu.py": catches}, "numba-cuda")


def test_a_poetry_development_group_is_a_contributors_group(tmp_path: Path) -> None:
    # mlserver's shape: an exact torchvision in an optional Poetry group for the monorepo's tests;
    # Poetry never puts a non-main group in the built package's metadata
    pyproject = """[tool.poetry]
name = "demo"
version = "0.1"

[tool.poetry.dependencies]
python = "^3.10"

[tool.poetry.group.all-runtimes-dev]
optional = true

[tool.poetry.group.all-runtimes-dev.dependencies]
torchvision = "0.19.1"
"""
    found = _by_line(tmp_path / "a", {"pyproject.toml": pyproject}, "torch-pypi-pin")
    assert [(line, f.severity) for line, f in found.items()] == [(12, "info")]
    assert "contributors' group" in found[12].evidence
    # the same pin in the main group (or the dependencies table) is what every install pulls
    main = pyproject.replace("group.all-runtimes-dev.dependencies", "group.main.dependencies")
    found = _by_line(tmp_path / "b", {"pyproject.toml": main}, "torch-pypi-pin")
    assert [f.severity for f in found.values()] == ["warn"]


# -- after round C (test62-test64) was scored ---------------------------------------------------


def test_opencv_dnn_set_to_its_cuda_back_end_is_a_warning(tmp_path: Path) -> None:
    # motrackers' shape: a use_gpu switch that asks OpenCV's DNN module for CUDA
    module = """import cv2 as cv


class YOLO:
    def __init__(self, weights, config, use_gpu=False):
        self.net = cv.dnn.readNetFromDarknet(config, weights)
        if use_gpu:
            self.net.setPreferableBackend(cv.dnn.DNN_BACKEND_CUDA)
            self.net.setPreferableTarget(cv.dnn.DNN_TARGET_CUDA)
"""
    found = _by_line(tmp_path / "a", {"detectors/yolo.py": module}, "opencv-dnn-cuda")
    assert [(line, f.severity) for line, f in found.items()] == [(8, "warn"), (9, "warn")]
    # beside an OpenCL target the module chooses between the two
    both = (
        module
        + "        else:\n            self.net.setPreferableTarget(cv.dnn.DNN_TARGET_OPENCL)\n"
    )
    found = _by_line(tmp_path / "b", {"detectors/yolo.py": both}, "opencv-dnn-cuda")
    assert {f.severity for f in found.values()} == {"info"}
    # rtmlib's shape: a table from the user's choice to the constants asks for nothing
    table = (
        "import cv2\n\nBACKENDS = {'cuda': (cv2.dnn.DNN_BACKEND_CUDA, cv2.dnn.DNN_TARGET_CUDA)}\n"
    )
    assert not _by_line(tmp_path / "c", {"tools/base.py": table}, "opencv-dnn-cuda")


def test_a_platform_list_spliced_into_install_requires_is_read(tmp_path: Path) -> None:
    # inaspeechsegmenter's shape: packages appended per platform, spliced into the requirements
    setup = """import sys
from setuptools import setup

platform_packages = []
if sys.platform == "darwin":
    platform_packages.append("onnxruntime")
else:
    platform_packages.append("onnxruntime-gpu")

requirements = ["numpy", *platform_packages]

setup(name="demo", install_requires=requirements)
"""
    found = _by_line(tmp_path / "a", {"setup.py": setup}, "onnxruntime-gpu")
    assert [(line, f.severity) for line, f in found.items()] == [(8, "warn")]
    # a list setup() never receives is not a requirement
    unused = setup.replace('"numpy", *platform_packages', '"numpy"')
    assert not _by_line(tmp_path / "b", {"setup.py": unused}, "onnxruntime-gpu")


def test_torch_version_cuda_written_into_a_report_is_not_a_hazard(tmp_path: Path) -> None:
    # torchsparsegradutils', monai's and fastmri's shapes: the version only ends up as text
    module = """import logging
import torch


def environment():
    info = {}
    info["cuda_version"] = torch.version.cuda
    logging.info("torch {} cuda {}".format(torch.__version__, torch.version.cuda))
    logging.info("cuda %s" % torch.version.cuda)
    append(info, "CUDA version", lambda: torch.version.cuda)
    return info
"""
    found = _by_line(tmp_path / "a", {"bench/env.py": module}, "torch-version-cuda")
    assert found and {f.severity for f in found.values()} == {"info"}
    # used as a value it is None on ROCm: .split raises
    used = module + "\n\ndef major():\n    return int(torch.version.cuda.split('.')[0])\n"
    found = _by_line(tmp_path / "b", {"bench/env.py": used}, "torch-version-cuda")
    assert [(line, f.severity) for line, f in found.items() if f.severity != "info"] == [
        (15, "warn")
    ]
    # an environment variable set to it raises on ROCm (os.environ takes only strings)
    env = "import os\nimport torch\n\nos.environ['CUDA_VERSION'] = torch.version.cuda\n"
    found = _by_line(tmp_path / "c", {"bench/env.py": env}, "torch-version-cuda")
    assert [f.severity for f in found.values()] == ["warn"]


# -- after round D (test65-test67) was scored ---------------------------------------------------


def test_nvml_queries_join_the_finding_of_the_module_that_initialises_nvml(tmp_path: Path) -> None:
    # gguf-connector's and fedlab's shape: the module initialises NVML and reads memory through it
    module = """try:
    from pynvml import *
except ImportError:
    pass


def memory():
    nvmlInit()
    handle = nvmlDeviceGetHandleByIndex(0)
    info = nvmlDeviceGetMemoryInfo(handle)
    nvmlShutdown()
    return info.total, info.used
"""
    report = _scan(tmp_path / "a", {"app/vram.py": module})
    (finding,) = [f for f in report.findings if f.rule_id == "nvml" and f.severity != "info"]
    # its nvmlShutdown() (line 11) is one of the places too since session thirty-one
    assert finding.severity == "warn" and finding.lines == (8, 9, 10, 11)
    # beside an AMD management library the module has the other side: no query joins the init
    amd = module.replace("def memory", "import amdsmi\n\n\ndef memory")
    report = _scan(tmp_path / "b", {"app/vram.py": amd})
    shown = [f for f in report.findings if f.rule_id == "nvml" and f.severity != "info"]
    assert [f.lines for f in shown] == [(11,)]
