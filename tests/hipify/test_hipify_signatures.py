"""Calls whose HIP declaration is stricter than CUDA's (signatures.toml, issue 29)."""

from __future__ import annotations

import pytest
from hipcc_compile import compile_for_gfx90a

from rocmkit.hipify import TranslateOptions, translate
from rocmkit.hipify.signatures import KERNEL_ARGUMENT, MISSING_DEFAULT

STRICTER = """#include <cuda_runtime.h>
#include <cooperative_groups.h>
template <int N> __global__ void k(float* x) { x[N] = 1; }
__global__ void plain(float* x) { x[0] = 2; }
int main() {
  cudaStream_t s;
  cudaEvent_t e;
  cudaStreamCreate(&s);
  cudaEventCreate(&e);
  cudaFuncSetCacheConfig(k<4>, cudaFuncCachePreferShared);
  cudaFuncSetSharedMemConfig(plain, cudaSharedMemBankSizeFourByte);
  cudaStreamWaitEvent(s, e);
  cudaStreamWaitEvent(s, e, 0);
  int blocks = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k<2>, 64, 0);
  int grid = 0, block = 0;
  cudaOccupancyMaxPotentialBlockSize(&grid, &block, plain);
  float* x = nullptr;
  void* args[] = {&x};
  cudaLaunchCooperativeKernel((void*)plain, dim3(1), dim3(64), args);
  cudaLaunchKernel(plain, dim3(1), dim3(64), args, 0, s);
  return blocks;
}
"""


def test_kernel_pointers_get_the_cast_and_missing_arguments_cudas_defaults():
    result = translate(STRICTER)
    text = result.text
    assert (
        "hipFuncSetCacheConfig(reinterpret_cast<const void*>(k<4>), hipFuncCachePreferShared)"
        in text
    )
    assert "hipFuncSetSharedMemConfig(reinterpret_cast<const void*>(plain), " in text
    assert "hipStreamWaitEvent(s, e, 0);\n  hipStreamWaitEvent(s, e, 0);" in text
    assert "hipLaunchCooperativeKernel((void*)plain, dim3(1), dim3(64), args, 0, 0);" in text
    assert "hipLaunchKernel(reinterpret_cast<const void*>(plain), dim3(1)" in text
    # HIP declares template overloads for the occupancy calls: left as they are.
    assert "hipOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k<2>, 64, 0);" in text
    assert result.stats.converted["signature"] == 5
    assert translate(text).text == text


def test_every_entry_names_a_mapped_cuda_function():
    from rocmkit.hipify import load_table

    identifiers = load_table().identifiers
    for name in [*KERNEL_ARGUMENT, *MISSING_DEFAULT]:
        assert name in identifiers, name


def test_a_call_inside_a_comment_or_string_is_left_alone():
    source = 'void f() { /* cudaStreamWaitEvent(s, e) */ puts("cudaStreamWaitEvent(s, e)"); }\n'
    assert translate(source).text == source


@pytest.mark.slow
@pytest.mark.hipcc
def test_the_stricter_calls_compile_with_hipcc(tmp_path):
    text = translate(STRICTER, options=TranslateOptions(hip_version="5.2")).text
    done = compile_for_gfx90a(text, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
