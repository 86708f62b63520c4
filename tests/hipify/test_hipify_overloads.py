"""Overloads that become one after translation (`check(CUresult)` / `check(cudaError_t)`)."""

from __future__ import annotations

import pytest
from hipcc_compile import compile_for_gfx90a

from rocmkit.hipify import TranslateOptions, translate

HELPERS = """#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>

inline void check(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) std::printf("%s: driver error %d\\n", what, (int)result);
}
inline void check(cudaError_t error, const char* what = "") {
  if (error != cudaSuccess) std::printf("%s: %s\\n", what, cudaGetErrorString(error));
}
void sync(cudaStream_t s);
void sync(CUstream s);
void sync(CUstream s) { cuStreamSynchronize(s); }
void sync(cudaStream_t s) { cudaStreamSynchronize(s); } int after = 1;
int main() {
  check(cudaDeviceSynchronize(), "sync");
  check(CUDA_SUCCESS, "x");
  sync(0);
  return after;
}
"""


def _collisions(result):
    return [(d.line, d.name) for d in result.diagnostics if d.category == "overload-collision"]


def test_the_later_definition_is_compiled_out_and_reported():
    result = translate(HELPERS)
    text = result.text
    assert (
        "#if 0 // rocmkit hipify: the same overload as line 5 once translated\n"
        'inline void check(hipError_t error, const char* what = "") {\n'
    ) in text
    assert "cudaGetErrorString" not in text and "hipGetErrorString(error));\n}\n#endif\n" in text
    # Declarations stay (redeclaring is legal); code after a body on its line survives #endif.
    assert "void sync(hipStream_t s);\nvoid sync(hipStream_t s);\n" in text
    assert "hipStreamSynchronize(s); }\n#endif\n int after = 1;" in text
    assert _collisions(result) == [(8, "check"), (14, "sync")]
    (message,) = [d.message for d in result.diagnostics if d.line == 8]
    assert "CUresult and cudaError_t are both hipError_t" in message
    assert translate(text).text == text


@pytest.mark.parametrize(
    "source",
    [
        # Different arity, different other types, same CUDA type twice (the user's own problem).
        "void f(cudaError_t e) {}\nvoid f(CUresult r, int n) {}\n",
        "void f(cudaError_t e, int n) {}\nvoid f(CUresult r, float n) {}\n",
        "void f(cudaStream_t s) {}\nvoid g(CUstream s) {}\n",
        # Calls and expressions are not declarations.
        "void f() { check(cudaSuccess); check(CUDA_SUCCESS); }\n",
        "int f(cudaError_t e) { return g(CUDA_SUCCESS) + g(cudaSuccess); }\n",
        # A comment or string that spells the other overload.
        'void f(cudaError_t e) {}\n// void f(CUresult r) {}\nconst char* s = "void f(CUresult r) {}";\n',
    ],
)
def test_other_code_is_left_alone(source):
    result = translate(source, options=TranslateOptions(add_runtime_include=False))
    assert _collisions(result) == [] and "#if 0" not in result.text


@pytest.mark.slow
@pytest.mark.hipcc
def test_the_helpers_compile_once_the_duplicate_is_out(tmp_path):
    text = translate(HELPERS, options=TranslateOptions(hip_version="5.2")).text
    done = compile_for_gfx90a(text, tmp_path)
    # Before: "redefinition of 'check'" and "redefinition of 'sync'".
    assert done.returncode == 0, done.stderr[-2000:]
