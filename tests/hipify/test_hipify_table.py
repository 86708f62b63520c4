"""rocmkit's own mapping table: complete without torch, corrected entries, signature fixes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hipcc_compile import compile_for_gfx90a

import rocmkit
from rocmkit.hipify import TranslateOptions, translate
from rocmkit.hipify.mappings import load_table
from rocmkit.hipify.versions import hip_names, is_checked

CORPUS = Path(__file__).parent / "corpus"
FIXED = {
    "cudaProfilerStart": "hipProfilerStart",
    "cudaProfilerStop": "hipProfilerStop",
    "cudaGraphicsGLRegisterBuffer": "hipGraphicsGLRegisterBuffer",
    "cudaGraphicsMapFlagsWriteDiscard": "hipGraphicsRegisterFlagsWriteDiscard",
    "CUarray": "hipArray_t",
    "cuCtxPushCurrent": "hipCtxPushCurrent",
    "cuCtxPopCurrent": "hipCtxPopCurrent",
    "CUDA_MEMCPY2D_st": "hip_Memcpy2D",
    "CU_RESOURCE_TYPE_ARRAY": "HIP_RESOURCE_TYPE_ARRAY",
    "CUDA_TEXTURE_DESC": "HIP_TEXTURE_DESC",
    "curandStateSobol32": "hiprandStateSobol32",
    "curandStateSobol64": "hiprandStateSobol64",
    "cuMemcpy2D": "hipMemcpyParam2D",
    "cuMemcpy3D": "hipDrvMemcpy3D",
    "cusolverSpCreate": "hipsolverSpCreate",
    "CUBLAS_STATUS_LICENSE_ERROR": "HIPBLAS_STATUS_UNKNOWN",
    "cudaDevAttrComputeMode": "hipDeviceAttributeComputeMode",
    "cudaDevAttrClockRate": "hipDeviceAttributeClockRate",
    "cudaDevAttrIntegrated": "hipDeviceAttributeIntegrated",
    # NVIDIA/cuda-samples simpleMultiCopy (2026-11-23)
    "cudaDevAttrGpuOverlap": "hipDeviceAttributeAsyncEngineCount",
    # cuda-samples' driver-API helpers: hipify-perl maps them, HIP 5.2 declares the targets
    "CUmemorytype": "hipMemoryType",
    "cuMemHostGetDevicePointer": "hipHostGetDevicePointer",
    "cuMemcpy2DUnaligned": "hipDrvMemcpy2DUnaligned",
    "CU_CTX_MAP_HOST": "hipDeviceMapHost",
    "CU_FUNC_ATTRIBUTE_NUM_REGS": "HIP_FUNC_ATTRIBUTE_NUM_REGS",
    # the real-world corpus from PyPI (benchmarks/hipify_corpus.toml, 2026-11-23)
    "curandStateMRG32k3a": "hiprandStateMRG32k3a",
    "NVRTC_ERROR_INVALID_OPTION": "HIPRTC_ERROR_INVALID_OPTION",
    "CUarray_format": "hipArray_Format",
    "CUaddress_mode": "HIPaddress_mode",
    "CUfunction_attribute": "hipFunction_attribute",
    "CUfunc_cache": "hipFuncCache_t",
    "CU_MEMORYTYPE_HOST": "hipMemoryTypeHost",
    "CUipcMemHandle": "hipIpcMemHandle_t",
    "CUipcEventHandle": "hipIpcEventHandle_t",
    "cuMemAllocManaged": "hipMallocManaged",
}


@pytest.mark.parametrize(("cuda", "hip"), sorted(FIXED.items()))
def test_wrong_and_missing_entries_now_translate(cuda, hip):
    # hipRAND 5.2 declares hiprandStateSobol64 on NVIDIA only (hiprand_kernel_nvcc.h) and hipSOLVER
    # 5.2 has no sparse API: both are declared for AMD by ROCm 6.2.
    version = "6.2" if cuda in _AMD_SINCE_6 else "5.2"
    text = translate(f"x = {cuda};\n", options=TranslateOptions(hip_version=version)).text
    assert text.endswith(f"x = {hip};\n")
    if version != "5.2":
        kept = translate(f"x = {cuda};\n", options=TranslateOptions(hip_version="5.2"))
        assert kept.text.endswith(f"x = {cuda};\n") and kept.diagnostics[0].kind == "unsupported"


_AMD_SINCE_6 = {"curandStateSobol64", "cusolverSpCreate"}


def test_every_hip_runtime_target_exists_in_some_shipped_hip_release():
    known = hip_names("5.2") | hip_names("6.2")
    table = load_table()
    invented = sorted(
        m.hip for m in table.identifiers.values() if is_checked(m.hip) and m.hip not in known
    )
    assert invented == []
    assert len(table.identifiers) > 2500  # PyTorch's valid pairs are folded in


def test_translation_is_the_same_with_torch_hidden():
    """sys.modules['torch'] = None makes any torch import fail, as on a machine without it."""
    src = Path(rocmkit.__file__).resolve().parent.parent
    texts = {p.name: p.read_text() for p in sorted(CORPUS.glob("*.cu"))}
    code = (
        "import sys, json; sys.modules['torch'] = None\n"
        "from rocmkit.hipify import translate\n"
        "texts = json.load(sys.stdin)\n"
        "print(json.dumps({k: translate(v).text for k, v in texts.items()}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(src)},
        check=True,
    )
    hidden = json.loads(done.stdout)
    assert hidden == {k: translate(v).text for k, v in texts.items()}


KERNEL_ATTRIBUTES = """#include <cuda_runtime.h>
template <int N> __global__ void k(float* x) { x[N] = 1; }
int main() {
  cudaFuncSetAttribute(k<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024);
  cudaFuncAttributes attributes;
  cudaFuncGetAttributes(&attributes, k<2>);
  return attributes.numRegs > 0 ? 0 : 1;
}
"""


def test_func_attribute_calls_get_the_const_void_cast_once():
    result = translate(KERNEL_ATTRIBUTES)
    assert "hipFuncSetAttribute(reinterpret_cast<const void*>(k<4>), " in result.text
    assert "hipFuncGetAttributes(&attributes, reinterpret_cast<const void*>(k<2>))" in result.text
    assert result.stats.converted["signature"] == 2
    assert translate(result.text).text == result.text


@pytest.mark.slow
@pytest.mark.hipcc
def test_func_attribute_calls_compile_with_hipcc(tmp_path):
    done = compile_for_gfx90a(translate(KERNEL_ATTRIBUTES).text, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_callback_calling_convention_macro_is_dropped():
    # cuda-samples simpleCallback: `void CUDART_CB f(...)` did not parse (HIP has no CUDART_CB).
    source = "void CUDART_CB done(cudaStream_t s, cudaError_t e, void *p);\n"
    result = translate(source, options=TranslateOptions(hip_version="5.2"))
    assert "void  done(hipStream_t s, hipError_t e, void *p);" in result.text
    assert "CUDART_CB" not in result.text and not result.diagnostics
    assert translate(result.text).text == result.text


MALLOC_3D = """cudaError_t make(cudaArray **a, cudaChannelFormatDesc *d, cudaExtent e) {
  cudaMalloc3DArray(a, d, e, cudaArraySurfaceLoadStore);
  return cudaMalloc3DArray(a, d, e // three arguments: CUDA's flags default to 0
  );
}
"""


def test_malloc_3d_array_gets_the_flags_hip_gives_no_default():
    # cuda-samples simpleTexture3D: HIP declares hipMalloc3DArray(array, desc, extent, flags).
    result = translate(MALLOC_3D)
    assert "hipMalloc3DArray(a, d, e, hipArraySurfaceLoadStore);" in result.text
    assert "// three arguments: CUDA's flags default to 0\n  , 0);" in result.text
    assert result.stats.converted["signature"] == 1
    assert translate(result.text).text == result.text


def test_a_cast_kernel_argument_ending_in_a_line_comment_keeps_its_parenthesis():
    source = "void f() { cudaFuncSetAttribute(k // kernel\n, cudaFuncAttributeMaxDynamicSharedMemorySize, 1); }\n"
    text = translate(source).text
    assert "reinterpret_cast<const void*>(k // kernel\n), hipFuncAttribute" in text


@pytest.mark.slow
@pytest.mark.hipcc
def test_malloc_3d_array_and_callback_compile_with_hipcc(tmp_path):
    callback = "void CUDART_CB done(cudaStream_t s, cudaError_t e, void *p) {}\n"
    usage = "void add(cudaStream_t s) { cudaStreamAddCallback(s, done, 0, 0); }\n"
    done = compile_for_gfx90a(translate(MALLOC_3D + callback + usage).text, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
