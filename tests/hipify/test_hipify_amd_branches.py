"""Warnings inside a branch no AMD compile takes become notes (issue 29, field corpus: DeepSpeed's
CUDA-only `hw_warp_size = 32` and `<cuda_bf16.h>` sat behind `__HIP_PLATFORM_AMD__` tests)."""

from __future__ import annotations

import pytest
from hipcc_compile import compile_for_gfx90a

from rocmkit.hipify import translate
from rocmkit.hipify.translate import TranslateOptions

_WARP = "constexpr int hw_warp_size = 32;\n"
_BF16 = "#include <cuda_bf16.h>\n"


def _kinds(source: str) -> list[tuple[int, str]]:
    result = translate(source, options=TranslateOptions(hip_version="5.2"))
    return [(d.line, d.kind) for d in result.diagnostics if d.category != "cuda-arch"]


@pytest.mark.parametrize(
    "source",
    [
        f"#ifndef __HIP_PLATFORM_AMD__\n{_WARP}#endif\n",
        f"#if defined(BF16_AVAILABLE) && !defined(__HIP_PLATFORM_AMD__)\n{_BF16}#endif\n",
        f"#ifdef __HIP_PLATFORM_AMD__\nconstexpr int w = 64;\n#else\n{_WARP}#endif\n",
        f"#if defined(__HIPCC__)\nint a;\n#elif X\n{_WARP}#endif\n",
        # nested: dead because an outer branch is
        f"#ifndef __CUDACC__\n#ifdef X\n{_WARP}#endif\n#endif\n",
    ],
)
def test_warnings_in_a_branch_amd_never_takes_are_notes(source):
    found = _kinds(source)
    assert found and all(kind == "note" for _, kind in found), found


@pytest.mark.parametrize(
    "source",
    [
        f"#ifdef __HIP_PLATFORM_AMD__\n{_WARP}#endif\n",
        f"#if !defined(A) || !defined(__HIP_PLATFORM_AMD__)\n{_WARP}#endif\n",
        f"#if !(defined(A) && !defined(__HIP_PLATFORM_AMD__))\n{_WARP}#endif\n",
        f"#ifndef MY_FLAG\n{_WARP}#endif\n",
        f"#ifndef __HIP_PLATFORM_AMD__\nint a;\n#else\n{_WARP}#endif\n",
        f"#ifndef __HIP_PLATFORM_AMD__\nint a;\n#endif\n{_WARP}",
        _WARP,
    ],
)
def test_warnings_amd_may_compile_stay_warnings(source):
    assert "hazard" in {kind for _, kind in _kinds(source)}


def test_the_dead_include_compiles_and_the_live_one_does_not(tmp_path):
    dead = (
        f"#ifndef __HIP_PLATFORM_AMD__\n{_BF16}#endif\n__global__ void k(int* x) {{ x[0] = 1; }}\n"
    )
    text = translate(dead, options=TranslateOptions(hip_version="5.2")).text
    assert compile_for_gfx90a(text, tmp_path).returncode == 0
    live = dead.replace("#ifndef", "#ifdef")
    text = translate(live, options=TranslateOptions(hip_version="5.2")).text
    assert compile_for_gfx90a(text, tmp_path).returncode != 0
