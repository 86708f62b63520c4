"""Issue 26, session thirteen: each change from a definition, with a case where the finding must
appear and one where it must not, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan

from rocmkit.port.findings import PortFinding


def _by_line(root: Path, files: dict[str, str], rule: str) -> dict[int, PortFinding]:
    report = _scan(root, files)
    return {line: f for f in report.findings if f.rule_id == rule for line in f.lines}


# flash-attn's idiom (also flash-mla, quant-matmul, power-attention): a helper appends nvcc's
# --threads to the nvcc list it is given, and the build calls it in extra_compile_args.
_THREADS = """import os
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension


def append_nvcc_threads(nvcc_extra_args):
    nvcc_threads = os.getenv("NVCC_THREADS") or "4"
    return nvcc_extra_args + ["--threads", nvcc_threads]


{build}
setup(name="demo", ext_modules=ext_modules, cmdclass={{"build_ext": BuildExtension}})
"""
_PLAIN = """ext_modules = [
    CUDAExtension(
        "demo._C",
        ["demo.cu"],
        extra_compile_args={"cxx": ["-O3"], "nvcc": append_nvcc_threads(["-O3"])},
    )
]
"""
_SWITCHED = """import torch
if torch.version.hip:
    nvcc = ["-O3"]
else:
    nvcc = append_nvcc_threads(["-O3"])
ext_modules = [CUDAExtension("demo._C", ["demo.cu"], extra_compile_args={"nvcc": nvcc})]
"""


def test_an_nvcc_flag_a_helper_returns_is_reported_where_the_helper_writes_it(
    tmp_path: Path,
) -> None:
    found = _by_line(tmp_path, {"setup.py": _THREADS.format(build=_PLAIN)}, "nvcc-only-flags")
    assert found[8].severity == "warn"  # the helper's `return ... + ["--threads", n]`
    assert found[15] is found[8]  # the call that hands it to nvcc: one finding, both places
    assert "--threads" in found[8].evidence


def test_a_helper_called_only_on_the_cuda_side_of_a_switch_is_info_at_both_places(
    tmp_path: Path,
) -> None:
    found = _by_line(tmp_path, {"setup.py": _THREADS.format(build=_SWITCHED)}, "nvcc-only-flags")
    assert found[15].severity == "info"  # the call, on the CUDA side
    assert 8 not in found  # nothing raised where the helper writes it


# cn-clip's shape: the provider chosen on the other side of a test that the device is "cpu".
_ORT = """import onnxruntime


def session(path, device):
    if device == "cpu":
        provider = "CPUExecutionProvider"
    else:
        provider = "CUDAExecutionProvider"
    return onnxruntime.InferenceSession(path, providers=[provider])


def other(path, device):
    gpu = "CUDAExecutionProvider" if device != "cpu" else "CPUExecutionProvider"
    return onnxruntime.InferenceSession(path, providers=[gpu])
"""


def test_an_onnx_provider_chosen_for_a_device_other_than_cpu_is_nvidias_on_rocm(
    tmp_path: Path,
) -> None:
    found = _by_line(tmp_path / "a", {"infer.py": _ORT}, "ort-nvidia-provider")
    assert found[8].severity == "warn"  # the else of `device == "cpu"`
    assert found[13].severity == "warn"  # the body of `device != "cpu"`
    assert 6 not in found and 14 not in found  # the CPU side
    # a function that also names the AMD provider has its AMD side
    amd = _ORT.replace(
        '"CPUExecutionProvider"\n    else',
        '"CPUExecutionProvider"\n    elif 0:\n        provider = "ROCMExecutionProvider"\n    else',
    )
    found = _by_line(tmp_path / "b", {"infer.py": amd}, "ort-nvidia-provider")
    assert 10 not in found  # the CUDA provider of the function that names ROCm's


def test_a_weights_and_biases_run_folder_is_a_record_not_the_project(tmp_path: Path) -> None:
    frozen = "torch==1.13.1+cu117\n"
    files = {
        "examples/logs/wandb/run-20230215_164956-1rvl0swm/files/requirements.txt": frozen,
        "examples/logs/wandb/offline-run-20230216_101010-abc123/files/requirements.txt": frozen,
        "runs/run-20230215_164956-1rvl0swm/requirements.txt": frozen,  # not under wandb/
    }
    report = _scan(tmp_path, files)
    assert {f.path for f in report.findings} == {
        "runs/run-20230215_164956-1rvl0swm/requirements.txt"
    }


def test_pynvml_smis_get_instance_initialises_nvml(tmp_path: Path) -> None:
    koila = (
        "from pynvml.smi import nvidia_smi\n"
        "\n"
        "NVSMI = None\n"
        "\n"
        "def free_memory():\n"
        "    global NVSMI\n"
        "    if NVSMI is None:\n"
        "        NVSMI = nvidia_smi.getInstance()\n"
        '    return NVSMI.DeviceQuery("memory.free")\n'
    )
    found = _by_line(tmp_path, {"gpus.py": koila}, "nvml")
    assert found[8].severity == "warn"  # where NVML is initialised
    assert found[1] is found[8]  # with the import that binds the module's only GPU API


def test_setup_cfgs_build_ext_linking_cuda_libraries_is_an_error(tmp_path: Path) -> None:
    cfg = (
        "[build_ext]\n"
        "include_dirs = /usr/local/cuda/include\n"
        "library_dirs = /usr/local/cuda/lib64\n"
        "libraries = cudart\n"
        "\tnvjpeg\n"
        "\n"
        "[egg_info]\n"
        "tag_build =\n"
    )
    found = _by_line(tmp_path / "a", {"setup.cfg": cfg}, "cuda-extension")
    assert found[4].severity == "error" and found[5] is found[4]
    plain = cfg.replace("cudart\n\tnvjpeg", "m\n\tstdc++")
    assert not _by_line(tmp_path / "b", {"setup.cfg": plain}, "cuda-extension")


def test_a_library_name_counts_only_where_the_build_links_it(tmp_path: Path) -> None:
    setup = (
        "from setuptools import Extension, setup\n"
        "\n"
        'libs = ["jpeg"]\n'
        'libs.append("nvjpeg")\n'
        'ext = Extension("nvjpeg", ["nvjpeg.cpp"], libraries=libs)\n'
        'setup(name="nvjpeg", ext_modules=[ext], keywords=["nvjpeg", "cudart"])\n'
    )
    found = _by_line(tmp_path, {"setup.py": setup}, "cuda-extension")
    assert found[4].severity == "error"  # appended to the list given as libraries=
    assert 5 not in found and 6 not in found  # the extension's and the package's own name


def test_flash_attention_1x_module_imported_by_importlib_under_a_find_spec_of_the_package(
    tmp_path: Path,
) -> None:
    # cn-clip's shape: find_spec("flash_attn") is true where flash-attn 2.x is installed (every
    # ROCm build), and 2.x has no flash_attn.flash_attention module
    model = (
        "import importlib\n"
        "import importlib.util\n"
        "if importlib.util.find_spec('flash_attn'):\n"
        "    FlashMHA = importlib.import_module('flash_attn.flash_attention').FlashMHA\n"
        "if importlib.util.find_spec('flash_attn'):\n"
        "    from flash_attn.flash_attention import FlashMHA as Other\n"
        "if importlib.util.find_spec('flash_attn'):\n"
        "    from flash_attn import flash_attn_func\n"
    )
    found = _by_line(tmp_path / "a", {"model.py": model}, "flash-attn-v1-api")
    assert found[4].severity == "error" and found[6] is found[4]
    plain = _by_line(tmp_path / "b", {"model.py": model}, "flash-attn")
    assert plain[8].severity == "info"  # 2.x's own name: found by the spec, guarded
    fallback = (
        "import importlib\n"
        "try:\n"
        "    mha = importlib.import_module('flash_attn.flash_attention')\n"
        "except ImportError:\n"
        "    mha = None\n"
    )
    found = _by_line(tmp_path / "c", {"model.py": fallback}, "flash-attn-v1-api")
    assert found[3].severity == "info"  # a fallback does without it


def test_scikit_cuda_is_an_nvidia_only_library(tmp_path: Path) -> None:
    files = {
        "requirements.txt": "numpy\nscikit-cuda\n",
        "nfft.py": "import numpy as np\nimport skcuda.fft as cufft\n",
    }
    report = _scan(tmp_path, files)
    found = {(f.path, f.line): f.severity for f in report.findings}
    assert found[("requirements.txt", 2)] == "error"
    assert found[("nfft.py", 2)] == "error"
    assert ("requirements.txt", 1) not in found


def test_a_guard_on_the_removed_hcc_platform_macro_is_stale_on_rocm_6(tmp_path: Path) -> None:
    # inplace-abn's shape: the AMD values sit under a macro ROCm 6.0 removed, so a current
    # ROCm build compiles the CUDA ones (a warp of 32)
    header = (
        "#pragma once\n"
        "#if defined(__HIP_PLATFORM_HCC__)\n"
        "constexpr int WARP_SIZE = 64;\n"
        "#else\n"
        "constexpr int WARP_SIZE = 32;\n"
        "#endif\n"
        "__device__ int lane(int t) { return t % WARP_SIZE; }\n"
    )
    report = _scan(tmp_path / "a", {"include/utils.cuh": header})
    found = {(f.rule_id, line): f.severity for f in report.findings for line in f.lines}
    assert found[("hip-platform-hcc", 2)] == "warn"
    assert found[("cuda-kernel-hazard", 5)] == "warn"  # compiled on ROCm 6: no longer a switch
    current = header.replace("__HIP_PLATFORM_HCC__", "__HIP_PLATFORM_AMD__")
    report = _scan(tmp_path / "b", {"include/utils.cuh": current})
    assert not any(f.severity != "info" for f in report.findings)


def test_a_gpu_path_given_up_unless_nvidias_provider_is_present_is_a_warning(
    tmp_path: Path,
) -> None:
    # onnxruntime-tools' shape: the build's providers and a session's, asked for CUDA's only
    source = (
        "import onnxruntime\n"
        "\n"
        "def optimize(path, use_gpu):\n"
        "    if use_gpu and 'CUDAExecutionProvider' not in onnxruntime.get_available_providers():\n"
        "        return path\n"
        "    session = onnxruntime.InferenceSession(path)\n"
        "    assert 'CUDAExecutionProvider' in session.get_providers()\n"
        "\n"
        "def warn_only(use_gpu):\n"
        "    if use_gpu and 'CUDAExecutionProvider' not in onnxruntime.get_available_providers():\n"
        "        print('no GPU provider')\n"
    )
    found = _by_line(tmp_path, {"opt.py": source}, "ort-nvidia-provider")
    assert found[4].severity == "warn"  # the `not in` whose `if` returns
    assert found[7] is found[4]  # the session's providers asserted
    assert 10 not in found  # a `not in` that only prints picks nothing


def test_tensorflow_asked_whether_it_was_built_with_cuda(tmp_path: Path) -> None:
    source = (
        "import tensorflow as tf\n"
        "\n"
        "def run(use_gpu):\n"
        "    if use_gpu and not tf.test.is_built_with_cuda():\n"
        "        raise SystemExit('no GPU')\n"
        "    print(tf.test.is_built_with_cuda())\n"
        "    return tf.test.is_built_with_gpu_support()\n"
    )
    found = _by_line(tmp_path, {"bench.py": source}, "tf-built-with-cuda")
    assert found[4].severity == "warn"
    assert 6 not in found and 7 not in found  # shown only; the vendor-neutral question


def test_triton_dot_given_tf32_by_name_is_an_error_where_it_is_written(tmp_path: Path) -> None:
    kernel = (
        "import triton.language as tl\n"
        "\n"
        "def body(a, b, allow_tf32):\n"
        "    x = tl.dot(a, b, input_precision='tf32' if allow_tf32 else 'ieee')\n"
        "    y = tl.dot(a, b, input_precision='ieee')\n"
        "    z = tl.dot(a, b, allow_tf32=allow_tf32)\n"
        "    return x + y + z\n"
    )
    found = _by_line(tmp_path / "a", {"k.py": kernel}, "triton-tf32-dot")
    assert found[4].severity == "error"
    assert set(found) == {4}  # ieee, and the deprecated flag (ieee where TF32 is refused)
    # a tf32 that never reaches a dot (torch's own TF32 switch) is no finding
    other = "import torch\ntorch.backends.cuda.matmul.fp32_precision = 'tf32'\n"
    assert not _by_line(tmp_path / "b", {"t.py": other}, "triton-tf32-dot")


def test_a_cuda_only_cmake_build_names_where_it_links_the_cuda_toolkit(tmp_path: Path) -> None:
    cmake = (
        "cmake_minimum_required(VERSION 3.18)\n"
        "project(ops CXX CUDA)\n"
        "add_library(ops SHARED ops.cu)\n"
        "\n"
        "\n"
        "\n"
        "target_link_libraries(ops PRIVATE torch CUDA::cudart CUDA::cuda_driver)\n"
    )
    found = _by_line(tmp_path / "a", {"CMakeLists.txt": cmake}, "cmake-cuda-only")
    assert found[7] is found[2] and found[2].severity == "warn"
    hip = cmake.replace("project(ops CXX CUDA)", "project(ops CXX CUDA HIP)")
    assert not _by_line(tmp_path / "b", {"CMakeLists.txt": hip}, "cmake-cuda-only")


def test_requirements_assigned_in_a_top_level_branch_of_setup_py_are_read(tmp_path: Path) -> None:
    # scikit-cuda's and open-flamingo's shapes: the lists setup() gets are assigned under
    # `if not on_rtd:` / `if __name__ == "__main__":`, code that runs when pip runs setup.py
    setup = (
        "import os\n"
        "from setuptools import setup\n"
        "on_rtd = os.environ.get('READTHEDOCS') == 'True'\n"
        "if not on_rtd:\n"
        "    install_requires = ['numpy', 'pycuda >= 2016.1']\n"
        "else:\n"
        "    install_requires = []\n"
        "def helper():\n"
        "    install_requires = ['pycuda']\n"
        "setup(name='demo', install_requires=install_requires)\n"
    )
    report = _scan(tmp_path, {"setup.py": setup})
    found = {line: f for f in report.findings if f.rule_id == "pycuda" for line in f.lines}
    assert found[5].severity == "error"
    assert 9 not in found  # a function's own list is not what setup() gets


def test_a_cuda_library_tried_from_a_list_of_file_names_at_import(tmp_path: Path) -> None:
    # scikit-cuda's shape: the sonames to try are a module-level list, loaded in a loop
    module = (
        "import ctypes\n"
        "_versions = [12.0, 11.0]\n"
        "_names = ['libcublas.so'] + ['libcublas.so.%s' % v for v in _versions]\n"
        "_lib = None\n"
        "for _name in _names:\n"
        "    try:\n"
        "        _lib = ctypes.cdll.LoadLibrary(_name)\n"
        "    except OSError:\n"
        "        pass\n"
        "    else:\n"
        "        break\n"
    )
    found = _by_line(tmp_path / "a", {"cublas.py": module}, "nvidia-library-load")
    assert found[7].severity == "warn"  # the load, behind its fallback
    assert found[3] is found[7]  # where the file names are written
    rocm = module.replace("'libcublas.so'] +", "'libcublas.so', 'libhipblas.so'] +")
    found = _by_line(tmp_path / "b", {"cublas.py": rocm}, "nvidia-library-load")
    assert {f.severity for f in found.values()} == {"info"}  # it names the ROCm library too


def test_an_inline_implementation_file_a_cuda_source_includes_is_scanned(tmp_path: Path) -> None:
    util = (
        "__device__ __forceinline__ unsigned int getLaneMaskLt(void)\n"
        '{ unsigned int r; asm("mov.u32 %0, %%lanemask_lt;" : "=r"(r)); return r; }\n'
    )
    files = {"impl/Util.inl": util, "impl/Raster.cu": '#include "Util.inl"\n'}
    report = _scan(tmp_path / "a", files)
    assert any(f.path == "impl/Util.inl" and f.severity == "error" for f in report.findings)
    host = "inline int twice(int x) { return 2 * x; }\n"  # no device code: not read
    assert not _scan(tmp_path / "b", {"impl/Host.inl": host}).findings
