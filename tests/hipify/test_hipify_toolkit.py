"""CUDA toolkit headers decided from both sides' definitions (issue 29, toolkit.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hipcc_compile import compile_for_gfx90a

from rocmkit.hipify import TranslateOptions, translate
from rocmkit.hipify.project import HipifyConfig, hipify_paths
from rocmkit.hipify.toolkit import (
    absent_device_api,
    cuda_version,
    declared_names,
    header_verdicts,
    toolkit_headers,
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
    (benchmarks/hipify_cuda_headers.py regenerates it for another)."""
    text = (CUDA_INCLUDE / "cuda_runtime_api.h").read_text(errors="replace")
    found = re.search(r"#define\s+CUDART_VERSION\s+(\d+)", text)
    assert found is not None
    number = int(found.group(1))
    if f"{number // 1000}.{number % 1000 // 10}" != cuda_version():
        pytest.skip(f"the lists are for CUDA {cuda_version()}")
    listed = set(header_verdicts("5.2")[1])
    assert set(toolkit_headers(CUDA_INCLUDE)) == listed


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
