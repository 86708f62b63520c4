"""`__CUDA_ARCH__` decided for AMD in conditions and code (arch.py, issue 29)."""

from __future__ import annotations

import pytest
from hipcc_compile import compile_for_gfx90a

from rocmkit.hipify import translate

DEVICE = "defined(__HIP_DEVICE_COMPILE__)"

# The classic fallback: nvcc compiles it only for sm_5x; HIP declares atomicAdd(double*, double).
ATOMIC_ADD_FALLBACK = """#include <cuda_runtime.h>
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 600
#else
__device__ double atomicAdd(double* address, double val) {
  unsigned long long int* p = (unsigned long long int*)address;
  unsigned long long int old = *p, assumed;
  do {
    assumed = old;
    old = atomicCAS(p, assumed, __double_as_longlong(val + __longlong_as_double(assumed)));
  } while (assumed != old);
  return __longlong_as_double(old);
}
#endif
__global__ void k(double* x, float* y) {
  atomicAdd(x, 1.0);
#ifdef __CUDA_ARCH__
  const int arch = __CUDA_ARCH__;
  y[0] = arch;
#endif
}
"""


def _arch(source: str) -> tuple[str, list[tuple[str, int]]]:
    result = translate(source)
    found = [(d.kind, d.line) for d in result.diagnostics if d.category == "cuda-arch"]
    return result.text, found


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("#ifdef __CUDA_ARCH__", "#ifdef __HIP_DEVICE_COMPILE__"),
        ("#ifndef __CUDA_ARCH__", "#ifndef __HIP_DEVICE_COMPILE__"),
        ("#if defined(__CUDA_ARCH__)", f"#if {DEVICE}"),
        ("#if !defined __CUDA_ARCH__", "#if !defined __HIP_DEVICE_COMPILE__"),
        ("#if __CUDA_ARCH__ >= 600", f"#if {DEVICE}"),
        ("#if __CUDA_ARCH__ >= 300", f"#if {DEVICE}"),
        ("#if __CUDA_ARCH__ >= 530", f"#if {DEVICE}"),
        ("#if __CUDA_ARCH__ > 350", f"#if {DEVICE}"),
        ("#if __CUDA_ARCH__ < 600", f"#if !{DEVICE}"),  # host pass: 0 < 600
        ("#if __CUDA_ARCH__ < 700", "#if 1"),
        ("#if __CUDA_ARCH__ >= 700", "#if 0"),
        ("#if __CUDA_ARCH__ >= 800u", "#if 0"),
        ("#if 700 <= __CUDA_ARCH__", "#if 0"),
        ("#if 600 <= __CUDA_ARCH__", f"#if {DEVICE}"),
        ("#if __CUDA_ARCH__ == 610", "#if 0"),
        ("#if __CUDA_ARCH__ != 610", "#if 1"),
        ("#if __CUDA_ARCH__ < 300", "#if !" + DEVICE),
        (
            "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 600",
            f"#if {DEVICE} && !{DEVICE}",
        ),
        (
            "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 600",
            f"#if !{DEVICE} || {DEVICE}",
        ),
        ("#if (__CUDA_ARCH__ >= 530) && (__CUDA_ARCH__ < 800)", f"#if ({DEVICE}) && (1)"),
        ("#elif __CUDA_ARCH__>=750", "#elif 0"),
        ("#if __CUDA_ARCH__", "#if (defined(__HIP_DEVICE_COMPILE__) ? 600 : 0)"),
    ],
)
def test_each_condition_is_decided_as_amd_sees_it(condition, expected):
    source = f"#if 1\n{condition}\nint a;\n#endif\n"
    text = translate(source).text
    assert text.splitlines()[1] == expected
    assert translate(text).text == text


def test_the_atomic_add_fallback_is_not_compiled_for_hip():
    text, found = _arch(ATOMIC_ADD_FALLBACK)
    assert f"#if !{DEVICE} || {DEVICE}\n#else\n__device__ double atomicAdd" in text
    assert "const int arch = 600 /* __CUDA_ARCH__ for AMD, see rocmkit hipify */;" in text
    assert "#ifdef __HIP_DEVICE_COMPILE__\n" in text
    assert found == [("note", 2), ("note", 17)]  # the decision and the value, where they are


def test_tensor_core_paths_are_hazards_naming_what_replaces_them():
    source = """__global__ void k(float* y) {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" :: "r"(0), "l"(y));
#elif __CUDA_ARCH__ >= 700
  wmma::mma_sync(c, a, b, c);
#else
  y[0] = 1;
#endif
#if __CUDA_ARCH__ >= 750
  y[1] = 2;  // ldmatrix in a comment is not a use
#endif
}
"""
    result = translate(source)
    hazards = {d.line: d.message for d in result.diagnostics if d.category == "cuda-arch"}
    assert set(hazards) == {2, 4, 9}
    assert all(d.kind == "hazard" for d in result.diagnostics if d.category == "cuda-arch")
    assert "cp.async" in hazards[2] and "#else branch runs instead" in hazards[2]
    assert "(it uses mma_sync, wmma)" in hazards[4]
    assert "nothing replaces it" in hazards[9] and "ldmatrix" not in hazards[9].split("has")[0]
    assert "#if 0\n  asm" in result.text and "#elif 0\n" in result.text


def test_comments_strings_and_longer_names_are_left_alone():
    source = (
        "// #if __CUDA_ARCH__ >= 700\n"
        'const char* s = "__CUDA_ARCH__";\n'
        "#if __CUDA_ARCH_LIST__ > 0 /* __CUDA_ARCH__ */\n#endif\n"
        "int MY__CUDA_ARCH__ = 1;\n"
    )
    result = translate(source)
    assert result.text == source
    assert not [d for d in result.diagnostics if d.category == "cuda-arch"]


def test_a_continued_condition_and_a_define_are_decided_too():
    source = "#if defined(__CUDA_ARCH__) && \\\n    __CUDA_ARCH__ >= 700\n#endif\n"
    assert translate(source).text == f"#if {DEVICE} && \\\n    0\n#endif\n"
    define = "#define ARCH_VALUE __CUDA_ARCH__\n"
    text = translate(define).text
    assert text == "#define ARCH_VALUE 600 /* __CUDA_ARCH__ for AMD, see rocmkit hipify */\n"


@pytest.mark.slow
@pytest.mark.hipcc
def test_the_fallback_file_compiles_without_redefining_atomic_add(tmp_path):
    done = compile_for_gfx90a(translate(ATOMIC_ADD_FALLBACK).text, tmp_path)
    # Before: `#if !defined(__HIP_DEVICE_COMPILE__) || __CUDA_ARCH__ >= 600` enabled the fallback
    # (redefinition of atomicAdd) and `arch = __CUDA_ARCH__` was an undeclared identifier.
    assert done.returncode == 0, done.stderr[-2000:]
