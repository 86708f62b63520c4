"""CUDA header guards and version macros in preprocessor conditions (issue 13)."""

from __future__ import annotations

import os

import pytest
from hipcc_compile import compile_for_gfx90a

from rocmkit.hipify import translate

# The shape of a common helper header: error-string helpers compiled only when the CUDA header
# that declares the status type has been included.
HELPER = """#include <cuda_runtime.h>
#include <curand.h>
#include <cstdio>
#ifdef __DRIVER_TYPES_H__
static const char* errorName(cudaError_t e) { return cudaGetErrorName(e); }
#endif
#if defined(CURAND_H_) || defined(CUBLAS_API_H_)  // CURAND_H_ in a comment
static const char* errorName(curandStatus_t s) { return s == CURAND_STATUS_SUCCESS ? "ok" : "x"; }
#endif
int main() {
  std::printf("%s %s\\n", errorName(cudaSuccess), errorName(CURAND_STATUS_SUCCESS));
  return 0;
}
"""


def test_runtime_and_library_guards_become_hip_guards_only_in_conditions():
    result = translate(HELPER)
    assert "#ifdef HIP_INCLUDE_HIP_DRIVER_TYPES_H\n" in result.text
    assert "#if defined(HIPRAND_H_) || defined(HIPBLAS_H)  // CURAND_H_ in a comment" in result.text
    assert not [d for d in result.diagnostics if d.kind == "unconverted"]
    assert result.stats.converted["guard"] == 3
    assert translate(result.text).text == result.text


def test_version_checks_are_reported_not_guessed():
    source = "#if CUDART_VERSION >= 11000\nint a;\n#elif __CUDA_ARCH__ >= 700\nint b;\n#endif\n"
    result = translate(source)
    found = {(d.name, d.line): d.message for d in result.diagnostics if d.kind == "unconverted"}
    assert set(found) == {("CUDART_VERSION", 1)}
    assert "HIP_VERSION" in found[("CUDART_VERSION", 1)]
    # The arch comparison is decided (test_hipify_arch.py), not left to see 0.
    assert "#elif 0\n" in result.text


def test_cuda_arch_tested_for_being_defined_becomes_the_hip_device_pass_macro():
    source = "#ifndef __CUDA_ARCH__\nint a;\n#elif defined( __CUDA_ARCH__ ) && X\n#endif\n"
    expected = source.replace("__CUDA_ARCH__", "__HIP_DEVICE_COMPILE__")
    assert translate(source).text == expected


def test_a_guard_name_outside_a_condition_is_left_alone():
    source = "#define __DRIVER_TYPES_H__\nint use = CUBLAS_API_H_;\n"
    assert translate(source).text == source


@pytest.mark.slow
@pytest.mark.hipcc
def test_the_translated_helper_compiles_with_its_guarded_code(tmp_path):
    if not os.path.exists("/usr/include/hiprand/hiprand.h"):
        pytest.skip("hipRAND headers are not installed")
    done = compile_for_gfx90a(translate(HELPER).text, tmp_path)
    # Unmapped guards drop both errorName overloads and main fails with "undeclared identifier".
    assert done.returncode == 0, done.stderr[-2000:]
