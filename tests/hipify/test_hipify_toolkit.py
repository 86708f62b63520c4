"""CUDA toolkit headers decided from both sides' definitions (issue 29, toolkit.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hipcc_compile import compile_for_gfx90a

from rocmkit.hipify import TranslateOptions, translate
from rocmkit.hipify.project import HipifyConfig, hipify_paths
from rocmkit.hipify.toolkit import (
    RUNTIME,
    absent_device_api,
    cuda_version,
    declared_names,
    header_verdicts,
    include_decision,
    is_library_header,
    unlisted_headers,
)
from rocmkit.hipify.translate import Diagnostic, Translation

HIP52 = TranslateOptions(hip_version="5.2")
SOURCE = (
    "#include <device_atomic_functions.h>\n"  # 1: HIP declares all of it but the old any()
    "#include <sm_20_atomic_functions.h>\n"  # 2: atomicAdd(float*): all of it
    "#include <sm_61_intrinsics.h>\n"  # 3: __dp4a & co: none of it in HIP 5.2
    '#include "cuda_fp8.h"\n'  # 4: NVIDIA's fp8 types
    "#include <cuda/atomic>\n"  # 5: libcu++
    "#include <cub/block/block_histogram.cuh>\n"  # 6: hipCUB's umbrella header
    '#include "my_kernels.h"\n'  # 7: not CUDA's
    "#include <cuda_runtime.h>\n"  # 8: the mapping table wins
    "__global__ void k(float* x) { atomicAdd(x, 1.0f); }\n"
)


def _by_line(result: Translation) -> dict[int, Diagnostic]:
    return {d.line: d for d in result.diagnostics if d.category == "include"}


def test_toolkit_headers_are_mapped_or_reported_at_their_line() -> None:
    result = translate(SOURCE, options=HIP52)
    lines = result.text.splitlines()
    assert lines[0] == lines[1] == "#include <hip/hip_runtime.h>"
    assert lines[2:5] == SOURCE.splitlines()[2:5]  # kept as written, reported
    assert lines[5] == "#include <hipcub/hipcub.hpp>"
    assert lines[6] == '#include "my_kernels.h"' and lines[7] == "#include <hip/hip_runtime.h>"
    found = _by_line(result)
    assert found[1].kind == "note" and "any" in found[1].message  # `bool any(bool)` is missing
    for line in (3, 4, 5):
        assert found[line].kind == "unsupported", found[line]
        assert "no HIP counterpart in HIP 5.2" in found[line].message
    assert "__dp4a" in found[3].message and "libcu++" in found[5].message
    assert 2 not in found and 6 not in found and 7 not in found and 8 not in found


def test_the_translation_is_idempotent() -> None:
    once = translate(SOURCE, options=HIP52).text
    assert translate(once, options=HIP52).text == once


def test_a_project_header_of_the_same_name_is_untouched(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "sm_61_intrinsics.h").write_text("#pragma once\n#define DOT 4\n")
    (tmp_path / "src" / "k.cu").write_text(
        '#include "sm_61_intrinsics.h"\n#include <sm_61_intrinsics.h>\n'
        "__global__ void k(int* x) { x[0] = DOT; }\n"
    )
    report = hipify_paths(
        HipifyConfig(paths=(tmp_path / "src",), output_dir=tmp_path / "out", options=HIP52)
    )
    text = (tmp_path / "out" / "k.cu").read_text()
    assert '#include "sm_61_intrinsics.h"\n#include <sm_61_intrinsics.h>\n' in text
    (result,) = [r for r in report.files if r.source.name == "k.cu"]
    kinds = {(d.line, d.kind) for d in result.diagnostics if d.category == "include"}
    assert kinds == {(1, "note"), (2, "unsupported")}  # quotes: the project's file


def test_each_release_has_its_own_verdicts() -> None:
    release_52, verdicts_52 = header_verdicts("5.2")
    release_62, verdicts_62 = header_verdicts("6.4")  # the newest list not newer: 6.2
    assert (release_52, release_62) == ("5.2", "6.2")
    assert header_verdicts("5.7")[0] == "5.2"
    assert verdicts_52["sm_61_intrinsics.h"].startswith("- ")
    assert verdicts_52["device_launch_parameters.h"] == "= hip/hip_runtime.h"
    assert verdicts_62["cuda/barrier"].startswith("- ")
    assert re.fullmatch(r"\d+\.\d+", cuda_version())


def test_declared_names_are_the_api_not_the_plumbing() -> None:
    header = (
        "#define __DEVICE_FUNCTIONS_DECL__ static __device__\n"
        "/* int commented(int); */\n"
        "__DEVICE_FUNCTIONS_DECL__ int __dp4a(int a, int b, int c);\n"
        "extern __device__ int __iAtomicAdd(int *p, int v);\n"
        "static __inline__ __device__ float __fmaf_rd(float a, float b, float c);\n"
        "struct __device_builtin__ __nv_fp8_e4m3 { };\n"
    )
    assert declared_names(header) == {"__dp4a", "__fmaf_rd", "__nv_fp8_e4m3"}


CUDA_INCLUDE = Path("/usr/local/cuda/include")


@pytest.mark.skipif(not CUDA_INCLUDE.is_dir(), reason="no CUDA toolkit installed")
def test_every_installed_toolkit_header_is_listed() -> None:
    """The list is complete for the installed toolkit when it is the release it was built from
    (benchmarks/hipify_cuda_headers.py regenerates it for another): a full toolkit's library
    headers come from the component wheels the list names."""
    text = (CUDA_INCLUDE / "cuda_runtime_api.h").read_text(errors="replace")
    found = re.search(r"#define\s+CUDART_VERSION\s+(\d+)", text)
    assert found is not None
    number = int(found.group(1))
    if f"{number // 1000}.{number % 1000 // 10}" != cuda_version():
        pytest.skip(f"the lists are for CUDA {cuda_version()}")
    for version in ("5.2", "6.2"):
        assert unlisted_headers(CUDA_INCLUDE, version) == [], version


def test_a_header_the_list_lacks_is_found(tmp_path: Path) -> None:
    """The completeness check names a toolkit header no list has (a component the list was
    not built from), and nothing for headers it lists."""
    for header in ("cublas_v2.h", "npp.h", "crt/host_defines.h", "nppi_future_filters.h"):
        (tmp_path / header).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / header).write_text("#pragma once\n")
    (tmp_path / "cccl" / "cub").mkdir(parents=True)
    (tmp_path / "cccl" / "cub" / "cub.cuh").write_text("#pragma once\n")
    assert unlisted_headers(tmp_path, "5.2") == ["nppi_future_filters.h"]


# Headers of CUDA 13.0's library components (cuda-toolkit 13.0.3.0's pins), one or two each.
COMPONENT_HEADERS = {
    "nvidia-cublas": ("cublas.h", "cublasXt.h", "nvblas.h"),
    "nvidia-cufft": ("cufftXt.h", "cudalibxt.h", "cufftw.h"),
    "nvidia-curand": ("curand_mtgp32dc_p_11213.h", "curand_poisson.h"),
    "nvidia-cusolver": ("cusolverSp.h", "cusolverMg.h"),
    "nvidia-cusparse": ("cusparse_v2.h",),
    "nvidia-npp": ("nppi_color_conversion.h", "nppi_morphological_operations.h", "npps.h"),
    "nvidia-nvjpeg": ("nvjpeg.h",),
    "nvidia-cufile": ("cufile.h",),
    "nvidia-cuda-opencl": ("CL/cl.h",),
    "nvidia-nvml-dev": ("nvml.h",),
}


@pytest.mark.parametrize("version", ["5.2", "6.2"])
def test_the_lists_cover_the_library_components_with_their_wheels(version: str) -> None:
    from importlib import resources

    data = resources.files("rocmkit.hipify").joinpath("hip_names", f"{version}.cuda_headers.txt")
    head = [line for line in data.read_text().splitlines() if line.startswith("# component:")]
    recorded = {line.split()[2]: line for line in head}
    verdicts = header_verdicts(version)[1]
    for component, headers in COMPONENT_HEADERS.items():
        assert re.search(r" \d+(\.\d+)+ sha256:[0-9a-f]{64} ", recorded[component]), component
        for header in headers:
            assert header in verdicts, (component, header)
    # no HIP library: reported; a HIP library: its header, checked against what that ROCm
    # release installs (hipBLASLt: first tagged rocm-5.5.0)
    for header in ("npp.h", "nvjpeg.h", "cufile.h", "cublasXt.h", "cufftw.h", "nvml.h"):
        assert verdicts[header].startswith("- "), header
    assert verdicts["cublasLt.h"].startswith("- <hipblaslt" if version == "5.2" else "! ")
    assert verdicts["cudalibxt.h"].split()[:2] == ["~", "hipfft/hipfftXt.h"]
    # hipSOLVER's sparse API (hipsolverSpCreate, csrlsvchol) arrived after ROCm 5.2
    sparse = verdicts["cusolverSp.h"].split()[:2]
    assert sparse[0] == "-" if version == "5.2" else sparse == ["~", "hipsolver/hipsolver.h"]


LIBRARY_SOURCE = (
    "#include <npp.h>\n"  # 1: NPP, no HIP library
    "#include <cufftXt.h>\n"  # 2: hipFFT's Xt header (5.2 and 6.2 install it)
    "#include <cublas.h>\n"  # 3: the legacy cuBLAS API: hipBLAS takes a handle first
    "#include <cublas_v2.h>\n"  # 4: hipBLAS
    "#include <cublasLt.h>\n"  # 5: hipBLASLt: not in ROCm 5.2
    "void f(cufftHandle p, float* x) {\n"
    "  cufftXtSetGPUs(p, 2, 0);\n"  # 7: hipFFT has no multi-GPU plans
    "  cublasSscal(4, 2.0f, x, 1);\n"
    "}\n"
)


@pytest.mark.parametrize("version", ["5.2", "6.2"])
def test_library_headers_get_their_verdict_at_the_include(version: str) -> None:
    result = translate(LIBRARY_SOURCE, options=TranslateOptions(hip_version=version))
    lines = result.text.splitlines()
    found = _by_line(result)
    assert lines[0] == "#include <npp.h>" and found[1].kind == "unsupported"
    assert f"no HIP counterpart in HIP {version}" in found[1].message
    assert "Npp16f" in found[1].message  # the first of what HIP lacks
    # cuBLAS's legacy API: the include maps, the signatures do not
    assert lines[2] == "#include <hipblas/hipblas.h>" and found[3].kind == "hazard"
    assert "other parameters" in found[3].message and "cublasCaxpy" in found[3].message
    # the v2 API and hipFFT's Xt header map silently; what hipFFT lacks is reported at its use
    assert lines[1] == "#include <hipfft/hipfftXt.h>" and 2 not in found
    assert lines[3] == "#include <hipblas/hipblas.h>" and 4 not in found
    assert [d.name for d in result.diagnostics if d.line == 7] == ["cufftXtSetGPUs"]
    if version == "5.2":
        assert lines[4] == "#include <cublasLt.h>" and found[5].kind == "unsupported"
        assert "hipblaslt/hipblaslt.h" in found[5].message
    else:
        assert lines[4] == "#include <hipblaslt/hipblaslt.h>" and found[5].kind == "hazard"


def test_library_verdicts_name_the_include_tables_header() -> None:
    """Where the include table maps a CUDA library header, the list judged that HIP header."""
    from rocmkit.hipify.mappings import load_table

    includes = load_table("auto").includes
    for version in ("5.2", "6.2"):
        verdicts = header_verdicts(version)[1]
        judged = {
            cuda: verdicts[cuda]
            for cuda, hip in includes.items()
            if cuda in verdicts and is_library_header(hip)
        }
        assert len(judged) >= 10, judged
        for cuda, decided in judged.items():
            target = decided.split()[1].strip("<>")
            assert target == includes[cuda], (version, cuda, decided)


def test_include_decisions_by_verdict() -> None:
    assert include_decision("a.h", "= hip/hip_runtime.h", "5.2", None).path == RUNTIME
    mapped = include_decision("cufft.h", "~ hipfft/hipfft.h - cufftX", "5.2", "hipfft/hipfft.h")
    assert mapped == ("hipfft/hipfft.h", None, "")  # a library's missing names: at each use
    noted = include_decision("b.h", "~ hip/hip_runtime.h - any", "5.2", None)
    assert noted.kind == "note" and "hip/hip_runtime.h lacks any" in noted.message
    dropped = include_decision("npp.h", "- nppiAdd", "6.2", None)
    assert dropped.path is None and dropped.kind == "unsupported"


@pytest.mark.slow
@pytest.mark.hipcc
def test_the_mapped_toolkit_includes_compile(tmp_path: Path) -> None:
    """Every header mapped to HIP's runtime header compiles in its place, and the code that
    used the CUDA header's API (atomicAdd(float*), the launch parameters) compiles with it."""
    source = (
        "#include <device_atomic_functions.h>\n#include <sm_20_atomic_functions.h>\n"
        "#include <sm_32_atomic_functions.h>\n#include <device_launch_parameters.h>\n"
        "#include <host_defines.h>\n#include <builtin_types.h>\n#include <math_constants.h>\n"
        "__global__ void k(float* x, unsigned long long* n) {\n"
        "  atomicAdd(x + threadIdx.x, 1.0f); atomicMax(n, 3ull); }\n"
    )
    result = translate(source, options=HIP52)
    assert "<device_atomic_functions.h>" not in result.text
    done = compile_for_gfx90a(result.text, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]


DEVICE = (
    "__device__ float f(float a) { return __fmaf_rd(a, a, a) + __fmaf_rn(a, a, a); }\n"
    "// __dp4a in a comment\n"
    '__device__ int g(int a) { const char* s = "__dp4a"; return __dp4a(a, a, a); }\n'
    "__device__ unsigned atomicInc_system(unsigned* p, unsigned v) { return *p + v; }\n"
    "__device__ void h(unsigned* p) { atomicInc_system(p, 1u); __fmaf_rdx(1); }\n"
)


def test_device_functions_the_target_lacks_are_reported_at_each_call() -> None:
    found = [d for d in translate(DEVICE, options=HIP52).diagnostics if d.category == "device"]
    assert [(d.line, d.name, d.kind) for d in found] == [
        (1, "__fmaf_rd", "unsupported"),
        (3, "__dp4a", "unsupported"),
    ]
    assert "HIP has __fmaf_rn" in found[0].message and "HIP 5.2" in found[0].message
    # the project's own atomicInc_system, comments, literals and longer names stay quiet;
    # without a target nothing is checked, as for names
    assert not [d for d in translate(DEVICE).diagnostics if d.category == "device"]


def test_the_absent_device_list_names_what_the_compiler_rejects() -> None:
    absent = absent_device_api("5.2")
    assert {"__fmaf_rd", "__dp4a", "atomicInc_system"} <= set(absent.entries)
    # what HIP 5.2 declares is never listed (atomicAdd, the round-to-nearest forms, __ldg)
    assert not {"atomicAdd", "__fmaf_rn", "__ldg", "__popc"} & set(absent.entries)
    assert absent.entries["__dp4a"][0] == "sm_61_intrinsics.h"


@pytest.mark.slow
@pytest.mark.hipcc
def test_each_reported_device_call_fails_and_the_quiet_ones_compile(tmp_path: Path) -> None:
    for call, ok in (
        ("__fmaf_rd(a, a, a)", False),
        ("__dp4a(1, 2, 3)", False),
        ("__fmaf_rn(a, a, a)", True),
    ):
        source = f"__global__ void k(float* x, float a) {{ x[0] = {call}; }}\n"
        result = translate(source, options=HIP52)
        reported = any(d.category == "device" for d in result.diagnostics)
        done = compile_for_gfx90a(result.text, tmp_path)
        assert (done.returncode == 0, reported) == (ok, not ok), (call, done.stderr[-800:])


def test_a_device_function_both_lists_name_is_reported_once() -> None:
    """`__frcp_rd` is in HIPIFY's device table list and in the header-derived list: one
    diagnostic at the call, the one naming CUDA's header; `umin` (HIPIFY's list only) still one."""
    from rocmkit.hipify.translate import TranslateOptions, translate

    source = (
        "__global__ void k(float *x, unsigned a, unsigned b) {\n"
        "  x[0] = __frcp_rd(x[1]);\n"
        "  x[3] = umin(a, b);\n"
        "}\n"
    )
    result = translate(source, options=TranslateOptions(hip_version="5.2"))
    lines = sorted((d.line, d.name) for d in result.diagnostics if d.kind == "unsupported")
    assert lines == [(2, "__frcp_rd"), (3, "umin")]
