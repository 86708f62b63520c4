"""Issue 26, session twenty-four: each change, with a case where the finding must appear and one
where it must not, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

import pytest
from port_helpers import scan_files as _scan
from port_helpers import severities as _found

# -- a test of torch.version.cuda against a version that exits: True on every ROCm build


def test_a_cuda_version_requirement_that_raises_rejects_rocm(tmp_path: Path) -> None:
    code = (
        "import sys\nimport torch\n\n"
        "def check(adapter):\n"
        "    if (\n"
        "        sys.version_info[:2] != (3, 12)\n"
        '        or torch.version.cuda != "12.8"\n'  # line 7
        "    ):\n"
        '        raise RuntimeError("needs CUDA 12.8")\n'
        "\ndef main():\n"
        '    if torch.version.cuda not in ("12.1", "12.4"):\n'  # line 12
        '        sys.exit("unsupported CUDA")\n'
    )
    found = _found(_scan(tmp_path, {"check.py": code}), "torch-version-cuda")
    assert found.get(("check.py", 7)) in ("warn", "error")
    assert found.get(("check.py", 12)) in ("warn", "error")


def test_a_cuda_version_test_that_only_chooses_a_branch_is_info(tmp_path: Path) -> None:
    code = (
        "import torch\n\n"
        "def pick(flag):\n"
        '    if torch.version.cuda != "12.1":\n'  # line 4: prints, does not exit
        '        print("new kernels")\n'
        '    if flag and torch.version.cuda != "12.1":\n'  # line 6: only where flag holds
        "        raise SystemExit(1)\n"
        "    if torch.version.cuda != None:\n"  # line 8: False on ROCm
        "        raise SystemExit(1)\n"
    )
    found = _found(_scan(tmp_path, {"check.py": code}), "torch-version-cuda")
    assert all(found.get(("check.py", n), "info") == "info" for n in (4, 6, 8)), found


# -- conda dependencies: NVIDIA's CUDA conda packages; PyPI's CUDA-only packages by their name


def test_nvidias_cuda_conda_packages_are_conda_cuda(tmp_path: Path) -> None:
    env = (
        "name: dev\nchannels:\n  - conda-forge\ndependencies:\n"
        "  - python=3.11\n"
        "  - cuda-cudart\n"  # line 6
        "  - libcublas>=12\n"  # line 7
        "  - cudatoolkit-dev\n"  # line 8
        "  - cuda-version=12.4\n"  # line 9: a constraint, installs nothing
        "  - cuda-cccl\n"  # line 10: headers
    )
    script = "#!/bin/sh\nconda install -y -c conda-forge cudatoolkit-dev\n"
    report = _scan(tmp_path, {"environment.yml": env, "conda.sh": script})
    found = _found(report, "conda-cuda")
    assert {found.get(("environment.yml", n)) for n in (6, 7, 8)} == {"error"}
    assert found.get(("conda.sh", 2)) == "error"
    assert ("environment.yml", 9) not in found and ("environment.yml", 10) not in found


def test_a_conda_dependency_named_like_a_cuda_only_pypi_package(tmp_path: Path) -> None:
    env = "name: dev\ndependencies:\n  - numpy\n  - numba-cuda>=0.24.0\n  - numba\n"
    pixi = (
        '[project]\nname = "x"\nversion = "1"\n'
        "[tool.pixi.workspace]\nchannels = ['conda-forge']\nplatforms = ['linux-64']\n"
        '[tool.pixi.feature.dev.dependencies]\nnumba-cuda = "*"\n'  # line 8
    )
    report = _scan(tmp_path, {"environment.yml": env, "pyproject.toml": pixi})
    found = _found(report, "cuda-only-pypi")
    assert found.get(("environment.yml", 4)) == "error"
    assert found.get(("pyproject.toml", 8)) in ("warn", "error")
    assert ("environment.yml", 3) not in found and ("environment.yml", 5) not in found


# -- pixi.lock: a torch record that is NVIDIA's CUDA build for Linux

_PYPI = "https://files.pythonhosted.org/packages/9c/58/ab"


def _lock(*records: str) -> str:
    return "version: 6\nenvironments:\n  default:\n    packages: {}\npackages:\n" + "".join(records)


def test_pixi_lock_with_pypis_cuda_torch_is_a_finding(tmp_path: Path) -> None:
    cuda = (
        f"- pypi: {_PYPI}/torch-2.7.0-cp312-cp312-manylinux_2_28_x86_64.whl\n"  # line 6
        "  name: torch\n  version: 2.7.0\n  requires_dist:\n  - filelock\n"
        "  - nvidia-cudnn-cu12==9.5.1.17 ; platform_machine == 'x86_64' and"
        " sys_platform == 'linux'\n"
        "- conda: https://conda.anaconda.org/conda-forge/linux-64/"  # line 12
        "pytorch-2.5.1-cuda126_py312h1763f6d_303.conda\n  sha256: 00\n"
    )
    found = _found(_scan(tmp_path, {"pixi.lock": _lock(cuda)}), "pixi-lock-cuda-torch")
    assert found == {("pixi.lock", 6): "warn", ("pixi.lock", 12): "warn"}


def test_pixi_lock_with_cpu_or_mac_torch_is_not_a_finding(tmp_path: Path) -> None:
    other = (
        f"- pypi: {_PYPI}/torch-2.7.0-cp312-none-macosx_11_0_arm64.whl\n"
        "  name: torch\n  version: 2.7.0\n"
        "- pypi: https://download-r2.pytorch.org/whl/cpu/"
        "torch-2.13.0%2Bcpu-cp313-cp313-manylinux_2_28_x86_64.whl\n  name: torch\n"
        "- conda: https://conda.anaconda.org/pytorch/linux-64/pytorch-2.2.2-py3.11_cpu_0.tar.bz2\n"
    )
    report = _scan(tmp_path, {"pixi.lock": _lock(other)})
    assert _found(report, "pixi-lock-cuda-torch") == {}


def test_pixi_lock_beside_a_rocm_torch_is_info(tmp_path: Path) -> None:
    both = (
        "- pypi: https://download.pytorch.org/whl/cu128/"
        "torch-2.8.0%2Bcu128-cp312-cp312-manylinux_2_28_x86_64.whl\n  name: torch\n"
        "- pypi: https://download.pytorch.org/whl/rocm6.4/"
        "torch-2.8.0%2Brocm6.4-cp312-cp312-manylinux_2_28_x86_64.whl\n  name: torch\n"
    )
    found = _found(_scan(tmp_path, {"pixi.lock": _lock(both)}), "pixi-lock-cuda-torch")
    assert found == {("pixi.lock", 6): "info"}


@pytest.mark.parametrize("damaged", ["", "packages:\n- pypi: \n", "- conda:\n\x00\xff"])
def test_pixi_lock_damaged_or_empty_gives_nothing(tmp_path: Path, damaged: str) -> None:
    assert _found(_scan(tmp_path, {"pixi.lock": damaged}), "pixi-lock-cuda-torch") == {}


# -- Numba: a module of CUDA device functions only (compiled with the kernels that call them)


def test_a_module_of_numba_device_functions_only_is_info(tmp_path: Path) -> None:
    helpers = (
        "from numba import cuda, njit\n\n"  # line 1
        "@cuda.jit(device=True)\n"
        "def _add(a, b):\n"
        "    i = cuda.threadIdx.x\n"
        "    return a + b + i\n\n"
        "@njit\ndef host(x):\n    return x\n"
    )
    kernels = (
        "from numba import cuda\nfrom helpers import _add\n\n"  # line 1
        "@cuda.jit\n"
        "def kernel(out):\n"
        "    i = cuda.grid(1)\n"
        "    out[i] = _add(i, 1)\n"
    )
    report = _scan(tmp_path, {"helpers.py": helpers, "kernels.py": kernels})
    found = _found(report, "numba-cuda")
    assert found == {("helpers.py", 1): "info", ("kernels.py", 1): "error"}


def test_device_functions_beside_a_kernel_keep_the_module_an_error(tmp_path: Path) -> None:
    code = (
        "from numba import cuda\n\n"
        "@cuda.jit(device=True)\ndef _one():\n    return 1\n\n"
        "@cuda.jit\ndef kernel(out):\n    out[cuda.grid(1)] = _one()\n"
    )
    found = _found(_scan(tmp_path, {"k.py": code}), "numba-cuda")
    assert found == {("k.py", 1): "error"}


def test_importing_numbas_driver_not_found_helper_is_not_the_driver_binding(
    tmp_path: Path,
) -> None:
    code = (
        "from numba import cuda\n"
        "try:\n"
        "    from numba.cuda.cudadrv.driver import _raise_driver_not_found\n"
        "except ImportError:\n"
        "    pass\n\n"
        "@cuda.jit(device=True)\ndef _one():\n    return 1\n\n"
        "def driver_not_found(*args):\n    _raise_driver_not_found()\n"
    )
    binding = "from numba.cuda.cudadrv.driver import driver\n"
    report = _scan(tmp_path, {"core.py": code, "probe.py": binding})
    found = _found(report, "numba-cuda")
    assert found.get(("core.py", 1)) == "info"
    assert found.get(("probe.py", 1)) == "error"


# -- text gates before a whole-tree walk: every spelling of the construct still passes them


@pytest.mark.parametrize(
    "imports",
    [
        "from numba import cuda",
        "from numba import (\n    njit,\n    cuda,\n)",
        "from numba import njit, \\\n    cuda",
        "import numba.cuda",
        "from numba.cuda import jit",
    ],
)
def test_every_import_of_numbas_cuda_target_is_read(tmp_path: Path, imports: str) -> None:
    jit = (
        "jit"
        if imports.endswith("import jit")
        else "numba.cuda.jit"
        if "import numba" in imports
        else "cuda.jit"
    )
    code = f"{imports}\n\n@{jit}\ndef kernel(out):\n    out[0] = 1\n"
    found = _found(_scan(tmp_path, {"k.py": code}), "numba-cuda")
    assert found == {("k.py", 1): "error"}


@pytest.mark.parametrize("quote", ['"', "'", 'r"', '"""'])
def test_a_cuda_oom_test_is_read_in_every_quoting(tmp_path: Path, quote: str) -> None:
    close = quote.lstrip("r")
    code = (
        "def run(step):\n"
        "    try:\n"
        "        step()\n"
        "    except RuntimeError as e:\n"
        f"        if {quote}CUDA out of memory{close} in str(e):\n"  # line 5
        "            return None\n"
        "        raise\n"
    )
    found = _found(_scan(tmp_path, {"retry.py": code}), "cuda-oom-message")
    assert found.get(("retry.py", 5)) in ("warn", "error")


# -- CUDA C++ in a Python string that torch.utils.cpp_extension.load_inline compiles

_KERNEL = (
    "__global__ void k(float* out) {\n"
    "    int lane = threadIdx.x & 31;\n"  # source line 2
    '    asm volatile("cp.async.commit_group;\\n" ::);\n'  # source line 3
    "    out[lane] = 1.0f;\n"
    "}\n"
)


def test_cuda_sources_given_to_load_inline_are_read_as_cuda(tmp_path: Path) -> None:
    code = (
        "import torch\n"
        "from torch.utils.cpp_extension import load_inline\n\n"
        f'_CUDA_SRC = r"""\n{_KERNEL}"""\n\n'  # line 4 opens the string: kernel line 1 is line 5
        "def build():\n"
        '    return load_inline(name="k", cpp_sources="", cuda_sources=_CUDA_SRC)\n'
    )
    report = _scan(tmp_path, {"kernels.py": code})
    found = _found(report, "cuda-inline-ptx", "cuda-kernel-hazard")
    assert found.get(("kernels.py", 7)) == "error"  # the asm line
    assert found.get(("kernels.py", 6)) in ("warn", "error")  # lane = threadIdx.x & 31


def test_a_kernel_string_no_load_inline_compiles_is_not_read(tmp_path: Path) -> None:
    code = (
        f'_CUDA_SRC = r"""\n{_KERNEL}"""\n\n'
        "def show():\n    print(_CUDA_SRC)\n"
        'def build(load_inline):\n    return load_inline(name="k", cpp_sources=_CUDA_SRC)\n'
    )
    report = _scan(tmp_path, {"kernels.py": code})
    assert _found(report, "cuda-inline-ptx", "cuda-kernel-hazard") == {}


def test_a_list_of_inline_sources_and_a_positional_argument(tmp_path: Path) -> None:
    code = (
        "from torch.utils import cpp_extension\n"
        f"A = {_KERNEL!r}\n"  # escaped newlines: placed at the string's own line
        "def build():\n"
        '    return cpp_extension.load_inline("k", "", [A])\n'
    )
    report = _scan(tmp_path, {"kernels.py": code})
    found = _found(report, "cuda-inline-ptx")
    assert found == {("kernels.py", 2): "error"}


# -- TensorRT and MIGraphX, the two vendors' graph inference engines, as a vendor pair


def test_a_tensorrt_module_beside_its_migraphx_twin_is_the_nvidia_variant(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/predict_trt.py": "import tensorrt as trt\nimport pycuda.autoinit\n",
        "pkg/predict_mxr.py": "import migraphx\n",
        "pkg/export_trt.py": "import tensorrt\n",  # no MIGraphX twin
        "pyproject.toml": (
            '[project]\nname = "pkg"\nversion = "1"\n'
            "[project.optional-dependencies]\n"
            'tensorrt = ["tensorrt_cu12", "pycuda"]\n'  # line 5
            'rocm = ["onnxruntime-rocm"]\n'
        ),
    }
    report = _scan(tmp_path, files)
    found = _found(report, "tensorrt", "pycuda")
    assert found[("pkg/predict_trt.py", 1)] == "info"
    assert found[("pkg/export_trt.py", 1)] in ("warn", "error")
    assert found[("pyproject.toml", 5)] == "info"


def test_cpp_extensions_cuda_home_read_as_an_attribute_rejects_rocm(tmp_path: Path) -> None:
    code = (
        "from torch.utils import cpp_extension\n\n"
        "def build():\n"
        "    if cpp_extension.CUDA_HOME is None:\n"  # line 4
        '        raise RuntimeError("could not find the CUDA toolkit (nvcc)")\n'
        '    return cpp_extension.load(name="x", sources=["x.cu"])\n'
    )
    found = _found(_scan(tmp_path, {"build.py": code}), "cuda-extension")
    assert found.get(("build.py", 4)) == "error"
    hip = code.replace("def build", "ROCM = cpp_extension.ROCM_HOME\n\ndef build")
    found = _found(_scan(tmp_path / "hip", {"build.py": hip}), "cuda-extension")
    assert found.get(("build.py", 6), "info") == "info"


# -- ONNX Runtime: a test on the stored list of the build's providers, in a module with no AMD side


def test_a_stored_provider_list_tested_for_cuda_only_is_a_finding(tmp_path: Path) -> None:
    code = (
        "import onnxruntime as ort\n\n"
        "def session(path):\n"
        "    providers = []\n"
        "    available = ort.get_available_providers()\n"
        '    if "CUDAExecutionProvider" in available:\n'  # line 6
        '        providers.append("CUDAExecutionProvider")\n'
        '    providers.append("CPUExecutionProvider")\n'
        "    return ort.InferenceSession(path, providers=providers)\n"
    )
    found = _found(_scan(tmp_path, {"model.py": code}), "ort-nvidia-provider")
    assert found.get(("model.py", 6)) == "warn"


def test_a_stored_provider_list_with_an_amd_side_or_only_a_label_is_not(tmp_path: Path) -> None:
    amd = (
        "import onnxruntime as ort\n\n"
        "def session(path):\n"
        "    available = ort.get_available_providers()\n"
        '    if "CUDAExecutionProvider" in available:\n'
        '        return ort.InferenceSession(path, providers=["CUDAExecutionProvider"])\n'
        "    return load_migraphx_session(path)\n"
    )
    label = (
        "import onnxruntime as ort\n\n"
        "def backend():\n"
        "    available = ort.get_available_providers()\n"
        '    if "CUDAExecutionProvider" in available:\n'
        '        return "CUDA GPU"\n'
        '    return "CPU"\n'
    )
    report = _scan(tmp_path, {"amd.py": amd, "label.py": label})
    assert _found(report, "ort-nvidia-provider") == {}


def test_a_provider_list_led_by_a_local_tensorrt_entry(tmp_path: Path) -> None:
    code = (
        "def providers(cache):\n"
        '    trt = ("TensorrtExecutionProvider", {"trt_engine_cache_path": cache})\n'
        '    return [trt, "CUDAExecutionProvider", "CPUExecutionProvider"]\n'  # line 3
        "def other(cache):\n"
        '    first = ("CUDA", {"cache": cache})\n'  # not a provider's name
        "    return [first]\n"
    )
    found = _found(_scan(tmp_path, {"layout.py": code}), "ort-nvidia-provider")
    assert found == {("layout.py", 3): "warn"}
