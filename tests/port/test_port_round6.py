"""Issue 26, sixth round: mechanisms read from the emitters' own definitions, each with a case
where it applies and one where it must not, on small synthetic trees (shapes from HIP's
amd_warp_sync_functions.h, clang's -arch, torch.utils.cpp_extension's CUDA_HOME and NVML's
initialise-then-query order; not copied from the corpus)."""

from __future__ import annotations

from pathlib import Path

import pytest
from port_helpers import scan_files as _scan
from port_helpers import shown as _shown

from rocmkit.port.build_flags import rejected_flags
from rocmkit.port.warp_mask import narrow_masks

# -- a 32-bit lane mask reaches a warp sync intrinsic -------------------------------------------

_KERNEL = """#include <cstdint>
using lane32 = unsigned int;

__device__ float reduce(float v) {
  constexpr lane32 ALL = 0xffffffff;
  constexpr lane32 LOW = ALL >> 16;
  v += __shfl_down_sync(LOW, v, 8);
  return v;
}

#define WIDE_MASK 0xffffffffffffffffull
__device__ float reduce_wide(float v) {
  uint64_t lanes = WIDE_MASK;
  v += __shfl_xor_sync(lanes, v, 1);
  return v + __shfl_xor_sync(WIDE_MASK, v, 2);
}
"""


def test_a_named_32_bit_mask_is_reported_at_the_call_and_its_declarations(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"ops/reduce.cu": _KERNEL})
    assert _shown(report) == {
        ("ops/reduce.cu", 5, "cuda-warp-mask-32", "error"),
        ("ops/reduce.cu", 6, "cuda-warp-mask-32", "error"),
        ("ops/reduce.cu", 7, "cuda-warp-mask-32", "error"),
    }


@pytest.mark.parametrize(
    ("declaration", "narrow"),
    [
        ("unsigned int m = 0xffffffffu;", True),
        ("auto m = 0xffffffff;", True),  # [lex.icon]: unsigned int
        ("auto m = 0xffffffffull;", False),
        ("auto m = 0x1ffffffff;", False),  # does not fit 32 bits: long
        ("unsigned long long m = 0xffffffff;", False),
        ("std::uint64_t m = ~0ull;", False),
        ("auto m = __activemask();", False),  # a call: undecided, left alone
        ("my_mask_t m = 0xffffffff;", False),  # an unknown type: undecided
    ],
)
def test_the_mask_type_follows_cpp_literal_and_declaration_rules(
    declaration: str, narrow: bool
) -> None:
    text = f"__device__ int f(int v) {{\n  {declaration}\n  return __any_sync(m, v);\n}}\n"
    assert bool(narrow_masks(text)) is narrow


def test_a_mask_spelt_once_per_vendor_is_left_to_the_project(tmp_path: Path) -> None:
    text = (
        "#ifdef USE_ROCM\n#define FULL 0xffffffffffffffffull\n#else\n#define FULL 0xffffffffu\n"
        "#endif\n__device__ int f(int v) { return __any_sync(FULL, v); }\n"
    )
    report = _scan(tmp_path, {"k.cu": text})
    assert not any(f.rule_id == "cuda-warp-mask-32" for f in report.findings)


def test_a_file_with_its_own_hip_path_gets_the_mask_as_information(tmp_path: Path) -> None:
    text = "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#endif\n" + _KERNEL
    report = _scan(tmp_path, {"k.cu": text})
    assert _shown(report) == set()
    assert any(f.rule_id == "cuda-warp-mask-32" for f in report.findings)


# -- nvcc's -arch reaches clang -----------------------------------------------------------------


def test_nvcc_arch_flags_are_rejected_in_both_spellings() -> None:
    assert rejected_flags("-arch=native") == ["-arch=native"]
    assert rejected_flags("-arch") == ["-arch"]
    assert rejected_flags("-march=native") == []


def test_arch_native_in_a_jit_build_is_reported_and_other_flags_are_not(tmp_path: Path) -> None:
    build = (
        "from torch.utils.cpp_extension import load\n"
        "ext = load(name='k', sources=['k.cu'],\n"
        "           extra_cuda_cflags=['-O3', '{flag}'])\n"
    )
    report = _scan(tmp_path, {"a/build.py": build.format(flag="-arch=native")})
    assert ("a/build.py", 3, "nvcc-only-flags", "warn") in _shown(report)
    clean = _scan(tmp_path / "b", {"build.py": build.format(flag="-DNDEBUG")})
    assert _shown(clean) == set()


# -- a CUDAExtension built only when CUDA_HOME is set -------------------------------------------

_SETUP = """import torch
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension, CUDA_HOME

WITH_GPU = torch.cuda.is_available() and {test}

def modules():
    found = [CppExtension("pkg.cpu", ["cpu.cpp"])]
    if WITH_GPU:
        found.append(CUDAExtension("pkg.gpu", ["gpu.cu"]))
    return found

setup(name="pkg", ext_modules=modules(), cmdclass={{"build_ext": BuildExtension}})
"""


def test_an_extension_built_only_with_cuda_home_is_an_error_at_the_test(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"setup.py": _SETUP.format(test="CUDA_HOME is not None")})
    assert ("setup.py", 5, "cuda-extension", "error") in _shown(report)


@pytest.mark.parametrize(
    "test",
    [
        "(CUDA_HOME is not None or torch.version.hip is not None)",  # the HIP side is asked
        "torch.cuda.device_count() > 0",  # no CUDA_HOME: ROCm builds it too
    ],
)
def test_an_extension_also_built_on_rocm_is_not_reported(tmp_path: Path, test: str) -> None:
    report = _scan(tmp_path, {"setup.py": _SETUP.format(test=test)})
    assert not any(f.rule_id == "cuda-extension" for f in report.findings if f.severity != "info")


# -- NVML is reported where it is queried --------------------------------------------------------

_MONITOR = """from nvitop import Device
import torch

def status():
    lines = []
    if torch.cuda.is_available():
        for device in Device.all():
            lines.append(device.name())
    return lines
"""


def test_an_nvml_query_far_from_its_import_is_reported_at_the_query(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"monitor.py": _MONITOR})
    # round nine: the import too, where the module's only GPU API is bound
    assert _shown(report) == {("monitor.py", 7, "nvml", "warn"), ("monitor.py", 1, "nvml", "warn")}


def test_an_nvml_import_without_a_query_stays_at_the_import(tmp_path: Path) -> None:
    text = "import pynvml\n\n__all__ = ['pynvml']\n"
    report = _scan(tmp_path, {"monitor.py": text})
    assert _shown(report) == {("monitor.py", 1, "nvml", "warn")}


def test_an_import_inside_the_querying_function_stays_where_it_runs(tmp_path: Path) -> None:
    text = "def clock():\n    import pynvml\n    pynvml.nvmlInit()\n    return 1\n"
    report = _scan(tmp_path, {"clock.py": text})
    assert ("clock.py", 2, "nvml", "warn") in _shown(report)


# -- KeOps: a CUDA-only GPU backend, and requirements built from a literal and a version --------

_KEOPS_SETUP = """from setuptools import setup

version = "2.3"
setup(
    name="binding",
    install_requires=["numpy", {requirement}],
)
"""


def test_keopscore_required_through_a_concatenated_pin_is_reported(tmp_path: Path) -> None:
    report = _scan(
        tmp_path, {"setup.py": _KEOPS_SETUP.format(requirement='"keopscore==" + version')}
    )
    assert _shown(report) == {("setup.py", 6, "keops-cuda-only", "warn")}


def test_a_built_requirement_of_another_package_is_not_reported(tmp_path: Path) -> None:
    text = _KEOPS_SETUP.format(requirement='f"keopscore-docs=={version}"')
    assert _shown(_scan(tmp_path, {"setup.py": text})) == set()


def test_a_package_importing_its_own_keops_modules_is_not_reported(tmp_path: Path) -> None:
    files = {
        "pyproject.toml": '[project]\nname = "pykeops"\nversion = "2.3"\n',
        "pykeops/__init__.py": "from pykeops.config import gpu_available\n",
        "pykeops/config.py": "gpu_available = False\n",
    }
    assert _shown(_scan(tmp_path, files)) == set()
