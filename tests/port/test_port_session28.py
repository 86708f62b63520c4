"""Issue 26, session twenty-eight: each change, with a case where the finding must appear and one
where it must not, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan
from port_helpers import severities as _found

# -- CUDA libraries linked by name: the driver (libcuda) and torch's JIT builds


def test_the_cuda_driver_linked_by_an_extension_build_is_cuda_extension(tmp_path: Path) -> None:
    setup = (
        "from setuptools import setup\n"
        "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
        "setup(name='lap', ext_modules=[CUDAExtension('lap._C', ['csrc/lap.cu'],\n"
        "    extra_link_args=['-lcuda'])], cmdclass={'build_ext': BuildExtension})\n"
    )
    found = _scan(tmp_path, {"setup.py": setup})
    # the extension itself is info (torch hipifies it); the library it links is not there
    assert _found(found, "cuda-extension") == {("setup.py", 3): "info", ("setup.py", 4): "error"}


def test_cuda_libraries_a_jit_build_links_are_cuda_extension(tmp_path: Path) -> None:
    # torch.utils.cpp_extension.load() links what extra_ldflags names, also through a variable
    # and a keyword dictionary; ROCm has no libcusparse, libcublas or libcuda
    jit = (
        "import os\n"
        "from torch.utils.cpp_extension import load\n"
        "spmm = load(name='spmm', sources=['spmm.cu'], extra_ldflags=['-lcusparse'])\n"
        "flags = [f\"-L{os.environ['CUDA_LIB']}\", '-lcublas']\n"
        "gemm = load(name='gemm', sources=['gemm.cu'], extra_ldflags=flags)\n"
        "args = {'verbose': True, 'extra_ldflags': ['-lcuda']}\n"
        "drv = load(name='drv', sources=['drv.cu'], **args)\n"
    )
    found = _scan(tmp_path, {"pkg/ops.py": jit})
    assert _found(found, "cuda-extension") == {
        ("pkg/ops.py", 3): "error",
        ("pkg/ops.py", 4): "error",
        ("pkg/ops.py", 6): "error",
    }


def test_a_jit_build_with_a_rocm_side_or_a_cuda_device_string_is_not_flagged(
    tmp_path: Path,
) -> None:
    with_hip = (
        "import torch\n"
        "from torch.utils.cpp_extension import load\n"
        "flags = [] if torch.version.hip else ['-lcublas']\n"
        "ops = load(name='ops', sources=['ops.cu'], extra_ldflags=flags)\n"
    )
    device = (
        "import torch\n"
        "from torch.utils.cpp_extension import load\n"
        "ops = load(name='ops', sources=['ops.cpp'], extra_ldflags=['-lm'])\n"
        "x = torch.zeros(3, device='cuda')\n"
    )
    found = _scan(tmp_path, {"a/ops.py": with_hip, "b/ops.py": device})
    assert _found(found, "cuda-extension") == {}


# -- the pruned scan reads a later top-level fallback to the AMD tools, as the whole walk does

_FALLBACK = '''import os
import sys

from .utils import is_amdsmi_available, is_pynvml_available

if is_pynvml_available():
    import pynvml

if is_amdsmi_available():
    import amdsmi


def describe(values):
    """Plain helpers that hold no trigger: they make the triggers' statements a small part."""
    total = 0
    for value in values:
        total += value
    return total


def average(values):
    return describe(values) / max(len(values), 1)


def names(prefix, count):
    return [f"{prefix}{i}" for i in range(count)]


def environment():
    return {key: value for key, value in os.environ.items() if key.startswith("APP_")}


def platform():
    return sys.platform
'''


def test_the_pruned_scan_sees_a_later_amd_fallback_at_the_top_level() -> None:
    from rocmkit.port import load_rules
    from rocmkit.port.python_scan import scan_python

    rules = load_rules()
    pruned, _ = scan_python(_FALLBACK, rules)
    whole, _ = scan_python(_FALLBACK, rules, exhaustive=True)
    key = lambda h: (h.line, h.rule.id, h.severity, h.evidence)  # noqa: E731
    assert sorted(map(key, pruned)) == sorted(map(key, whole))
    # the NVML import is the NVIDIA side of the project's own fallback to amdsmi: info
    assert [(h.line, h.rule.id, h.severity) for h in pruned] == [(7, "nvml", "info")]


# -- files pip reads by their byte-order mark (UTF-16 from PowerShell's `pip freeze >`)


def test_a_utf16_requirements_file_is_read_as_pip_reads_it(tmp_path: Path) -> None:
    text = "accelerate==1.10.1\nnvidia-cublas-cu11==11.11.3.6\npaddlepaddle-gpu==3.0.0\n"
    (tmp_path / "requirements.txt").write_bytes(text.encode("utf-16"))  # with its BOM
    (tmp_path / "requirements-gpu.txt").write_bytes(b"\xfe\xff" + text.encode("utf-16-be"))
    found = _scan(tmp_path, {})
    assert not found.issues
    assert _found(found, "nvidia-wheels", "paddle-gpu-pypi") == {
        ("requirements.txt", 2): "warn",
        ("requirements.txt", 3): "error",
        ("requirements-gpu.txt", 2): "warn",
        ("requirements-gpu.txt", 3): "error",
    }


def test_paddle_gpu_in_an_extra_is_a_warning_and_a_python_file_in_utf16_is_not_read(
    tmp_path: Path,
) -> None:
    pyproject = (
        '[project]\nname = "ocr"\nversion = "1"\ndependencies = ["paddlepaddle==3.1.1"]\n'
        '[project.optional-dependencies]\ngpu = ["paddlepaddle-gpu>=3"]\n'
    )
    (tmp_path / "tool.py").write_bytes("import pynvml\n".encode("utf-16"))
    found = _scan(tmp_path, {"pyproject.toml": pyproject})
    assert _found(found, "paddle-gpu-pypi") == {("pyproject.toml", 6): "warn"}
    assert [(i.path, i.reason.split(" (")[0]) for i in found.issues] == [("tool.py", "not UTF-8")]


# -- SkyPilot tasks: the container image they run in, their setup/run scripts as shell

_SKY = """name: bench

resources:
  infra: kubernetes
  image_id: docker:nvidia/cuda:12.9.2-runtime-ubuntu24.04
  accelerators: H100:1

setup: |
  set -e
  uv pip install "torch==2.11.0+cu128" \\
      --extra-index-url https://download.pytorch.org/whl/cu128

run: |
  nvidia-smi --query-gpu=name --format=csv | tee gpu.txt
  python bench.py
"""


def test_a_skypilot_task_image_and_scripts_are_read(tmp_path: Path) -> None:
    found = _scan(tmp_path, {"scripts/sky_bench.yaml": _SKY})
    assert _found(found, "cuda-image") == {("scripts/sky_bench.yaml", 5): "error"}
    assert _found(found, "cuda-local-version") == {("scripts/sky_bench.yaml", 10): "error"}
    assert _found(found, "torch-cuda-index") == {("scripts/sky_bench.yaml", 11): "error"}
    assert _found(found, "nvidia-smi") == {("scripts/sky_bench.yaml", 14): "warn"}


def test_yaml_that_is_no_skypilot_task_is_not_read_as_shell(tmp_path: Path) -> None:
    # no top-level resources: a config whose `run:` is data; a cloud VM image id is no container;
    # a CI pipeline describes the maintainers' runners
    config = "run: |\n  nvidia-smi\nmodel: llama\n"
    vm = "resources:\n  image_id: ami-0868a20f5a3bf9702\nrun: python train.py\n"
    found = _scan(
        tmp_path, {"config.yaml": config, "vm.yaml": vm, ".github/workflows/sky.yaml": _SKY}
    )
    assert [f for f in found.findings if f.severity != "info"] == []


# -- vLLM's CUDA image written in Python; docker run argv written as pieces


def test_vllms_cuda_image_in_a_python_string_is_cuda_image(tmp_path: Path) -> None:
    serve = 'IMAGE = "vllm/vllm-openai:latest"\nNIGHTLY = "docker.io/vllm/vllm-openai:nightly"\n'
    both = (
        'IMAGES = {"cuda": "docker.io/vllm/vllm-openai",\n'
        '          "rocm": "docker.io/vllm/vllm-openai-rocm"}\n'
    )
    probe = 'def ours(line):\n    return line.startswith("vllm/vllm-openai:")\n'
    rocm = 'IMAGE = "vllm/vllm-openai-rocm:latest"\nTAGGED = "vllm/vllm-openai:v0.9-rocm"\n'
    found = _scan(
        tmp_path, {"serve.py": serve, "both.py": both, "probe.py": probe, "rocm.py": rocm}
    )
    assert _found(found, "cuda-image") == {
        ("serve.py", 1): "error",
        ("serve.py", 2): "error",
        ("both.py", 1): "info",  # the module names vLLM's ROCm image too: one side of a choice
        ("probe.py", 2): "info",  # a pattern lines are tested against, not an image it runs
    }


def test_a_docker_run_argv_in_pieces_or_behind_a_found_binary_is_docker_gpus(
    tmp_path: Path,
) -> None:
    pieces = (
        "def render(model):\n"
        '    parts = ["docker run", "--gpus all", "-p 8000:8000", "vllm/vllm-openai:latest"]\n'
        '    return " ".join(parts + ["--model", model])\n'
    )
    binary = (
        "import shutil, subprocess\n"
        "def start(image):\n"
        '    docker_exe = shutil.which("docker")\n'
        '    cmd = [docker_exe, "run", "--rm", "--gpus", "all", image]\n'
        "    subprocess.run(cmd, check=True)\n"
    )
    other = (
        "def start(tool, image):\n"
        '    cmd = [tool, "run", "--gpus", "all", image]\n'  # not docker by any name
        "    return cmd\n"
    )
    found = _scan(tmp_path, {"render.py": pieces, "start.py": binary, "other.py": other})
    assert _found(found, "docker-gpus") == {("render.py", 2): "warn", ("start.py", 4): "warn"}


# -- a PyTorch CUDA index whose version is a template


def test_a_cuda_wheel_index_with_a_templated_version_is_torch_cuda_index(tmp_path: Path) -> None:
    code = (
        "def install(python, cuda_compact, backend):\n"
        '    cuda = ["--extra-index-url", f"https://download.pytorch.org/whl/cu{cuda_compact}"]\n'
        '    chosen = ["--index-url", f"https://download.pytorch.org/whl/{backend}"]\n'
        '    rocm = ["--index-url", "https://download.pytorch.org/whl/rocm6.4"]\n'
        "    return cuda, chosen, rocm\n"
    )
    script = (
        "#!/bin/sh\n"
        'uv pip install "$WHEEL" --extra-index-url "https://download.pytorch.org/whl/cu${CUDA_VERSION}"\n'
        "pip install torch --index-url https://download.pytorch.org/whl/cpu\n"
    )
    found = _scan(tmp_path, {"tool/install.py": code, "install.sh": script})
    assert _found(found, "torch-cuda-index") == {
        ("tool/install.py", 2): "info",  # the module names PyTorch's ROCm index too: a choice
        ("install.sh", 2): "error",
    }
    only_cuda = code.replace("rocm6.4", "cpu")
    found = _scan(tmp_path / "b", {"install.py": only_cuda})
    assert _found(found, "torch-cuda-index") == {("install.py", 2): "error"}


# -- C++/CUDA sources of a vendored third-party library


def test_cuda_sources_of_a_vendored_library_are_info_and_the_projects_own_are_not(
    tmp_path: Path,
) -> None:
    kernel = (
        "#include <cuda_runtime.h>\n"
        "__device__ unsigned lane_id() {\n"
        "  unsigned r;\n"
        '  asm volatile("mov.u32 %0, %%laneid;" : "=r"(r));\n'
        "  return r;\n"
        "}\n"
    )
    found = _scan(
        tmp_path,
        {
            "third_party/cutlass/include/cute/arch/util.hpp": kernel,
            "3rdparty/lib/kernel.cu": kernel,
            "csrc/kernel.cu": kernel,
        },
    )
    ptx = _found(found, "cuda-inline-ptx")
    assert ptx == {
        ("third_party/cutlass/include/cute/arch/util.hpp", 4): "info",
        ("3rdparty/lib/kernel.cu", 4): "info",
        ("csrc/kernel.cu", 4): "error",
    }


# -- an assert about a text is a test's expectation, not code that acts on an OOM error


def test_an_assert_on_cuda_oom_words_is_no_cuda_oom_message(tmp_path: Path) -> None:
    retry = (
        "def step(batch):\n"
        "    try:\n"
        "        return run(batch)\n"
        "    except RuntimeError as e:\n"
        '        if "CUDA out of memory" in str(e):\n'
        "            return step(batch[: len(batch) // 2])\n"
        "        raise\n"
    )
    redaction = (
        "def test_redaction_keeps_errors():\n"
        '    text = redact("token=abc CUDA out of memory")\n'
        '    assert "CUDA out of memory" in text\n'
    )
    found = _scan(tmp_path, {"pkg/train.py": retry, "pkg/logs.py": redaction})
    assert _found(found, "cuda-oom-message") == {("pkg/train.py", 5): "warn"}
