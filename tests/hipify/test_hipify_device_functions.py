"""CUDA device functions the target HIP lacks are reported at their use (issue 29: the field
corpus's `__frcp_rd` and `__fsqrt_rd` failed to compile with no diagnostic). The list per release
is hip_names/<X.Y>.device_absent.txt (benchmarks/hipify_device_functions.py)."""

from __future__ import annotations

import pytest
from hipcc_compile import compile_for_gfx90a

from rocmkit.hipify import translate
from rocmkit.hipify.translate import TranslateOptions
from rocmkit.hipify.versions import absent_device_functions


def _reported(source: str, version: str = "5.2") -> list[tuple[int, str]]:
    result = translate(source, options=TranslateOptions(hip_version=version))
    # two lists feed this diagnostic (HIPIFY's device table: category device-function; CUDA's
    # headers against HIP's, toolkit.py: category device); a name both list is reported once
    return [
        (d.line, d.name)
        for d in result.diagnostics
        if d.kind == "unsupported" and d.category in ("device-function", "device")
    ]


@pytest.mark.parametrize("name", ["__frcp_rd", "__fsqrt_rd", "__fmaf_rd", "__dadd_ru", "__vadd4"])
def test_a_device_function_hip_lacks_is_reported_at_its_line(name):
    source = f"__global__ void k(float* x) {{\n  x[0] = 1;\n  x[1] = {name}(x[2], x[3]);\n}}\n"
    assert _reported(source) == [(3, name)]


@pytest.mark.parametrize(
    "source",
    [
        # what HIP has: the round-to-nearest forms, plain intrinsics
        "__global__ void k(float* x) { x[0] = __frcp_rn(x[1]) + __fsqrt_rn(x[2]); }\n",
        "__global__ void k(float* x) { x[0] = __fmaf_rn(x[1], x[2], x[3]) + __saturatef(x[0]); }\n",
        # the project's own function of the same name
        "__device__ unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }\n"
        "__global__ void k(unsigned* y) { y[0] = umin(y[1], y[2]); }\n",
        # a comment, a string, a member of the project's struct
        '// __frcp_rd is slower\n__global__ void k(const char* s = "__frcp_rd") {}\n',
        # *_sync warp calls are lowered and reported as such, not as absent functions
        "__global__ void k(int* v) { v[0] = __shfl_down_sync(0xffffffff, v[1], 1); }\n",
    ],
)
def test_what_hip_declares_or_the_project_defines_is_quiet(source):
    assert _reported(source) == []


def test_a_release_without_hipifys_list_still_gets_the_header_derived_report():
    assert absent_device_functions("6.2") == frozenset()
    # 6.2's cuda_device_absent list (CUDA's headers against HIP 6.2's) still names __frcp_rd
    source = "__global__ void k(float* x) { x[0] = __frcp_rd(x[1]); }\n"
    assert _reported(source, "6.2") == [(1, "__frcp_rd")]


def test_listed_names_are_undeclared_for_hipcc_and_the_rn_forms_compile(tmp_path):
    listed = absent_device_functions("5.2")
    assert {"__frcp_rd", "__fsqrt_rd", "umin"} <= listed
    assert "__frcp_rn" not in listed
    body = "x[0] = __frcp_rd(x[1]) + __fsqrt_rd(x[2]);"
    failing = compile_for_gfx90a(
        translate(f"__global__ void k(float* x) {{ {body} }}\n").text, tmp_path
    )
    assert failing.returncode != 0
    for name in ("__frcp_rd", "__fsqrt_rd"):
        assert f"undeclared identifier '{name}'" in failing.stderr
    fine = body.replace("_rd", "_rn")
    passing = compile_for_gfx90a(
        translate(f"__global__ void k(float* x) {{ {fine} }}\n").text, tmp_path
    )
    assert passing.returncode == 0, passing.stderr[-400:]
