"""A project's own definitions of what HIP's headers define (issue 29): `min`/`max`, `make_*`
and vector compound operators are reported at their line; everything else stays quiet."""

from __future__ import annotations

import pytest
from hipcc_compile import compile_for_gfx90a

from rocmkit.hipify import TranslateOptions, translate
from rocmkit.hipify.redefinitions import definitions_in_headers
from rocmkit.hipify.versions import hip_definitions

POSITIVES = {
    "device min": "__device__ float min(float a, float b) { return a < b ? a : b; }\n",
    "const by value": (
        "static __device__ __forceinline__ double max(const double a, const double b)"
        " { return a > b ? a : b; }\n"
    ),
    "template": "template <typename T>\n__device__ T max(T a, T b) { return a > b ? a : b; }\n",
    "make helper": (
        "inline __host__ __device__ float2 make_float2(float x, float y)"
        " { float2 r; r.x = x; r.y = y; return r; }\n"
    ),
    "compound operator": (
        "inline __host__ __device__ void operator+=(float2 &a, float2 b) { a.x += b.x; }\n"
    ),
    "scalar compound": "inline __device__ void operator*=(float4& a, float s) { a.x *= s; }\n",
    "extern C block": 'extern "C" {\n__device__ int min(int a, int b) { return a; }\n}\n',
}

NEGATIVES = {
    "binary operator": (
        "inline __host__ __device__ float2 operator+(float2 a, float2 b)"
        " { return make_float2(a.x + b.x, a.y + b.y); }\n"
    ),
    "other overload": "__device__ int min(int a, unsigned b) { return a; }\n",
    "other make": (
        "inline __host__ __device__ float3 make_float3(float s) { return make_float3(s, s, s); }\n"
    ),
    "in a namespace": (
        "namespace util {\n__device__ float min(float a, float b) { return a < b ? a : b; }\n}\n"
    ),
    "a member": (
        "struct Range {\n  __device__ int max(int a, int b) const { return a > b ? a : b; }\n};\n"
    ),
    "a call": "__global__ void k(float* x) { x[0] = min(x[1], x[2]); }\n",
    "a comment": "// __device__ float min(float a, float b) { return a; }\n",
    "own struct operator": "struct V { float x; };\n__device__ void operator+=(V& a, V b) { a.x += b.x; }\n",
}


def _redefinitions(text: str, version: str = "5.2") -> list:
    found = translate(text, options=TranslateOptions(hip_version=version)).diagnostics
    return [d for d in found if d.category == "redefinition"]


@pytest.mark.parametrize("name", sorted(POSITIVES))
@pytest.mark.parametrize("version", ["5.2", "6.2"])
def test_a_definition_hip_already_has_is_reported_at_its_line(name, version):
    text = "#include <cuda_runtime.h>\n\n" + POSITIVES[name]
    (finding,) = _redefinitions(text, version)
    assert finding.kind == "hazard" and f"HIP {version}" in finding.message
    # the line that names the function: the snippet's second line after a template/extern head
    second = POSITIVES[name].startswith(("template", "extern"))
    assert finding.line == (4 if second else 3)
    assert "__HIP_PLATFORM_AMD__" in finding.message


@pytest.mark.parametrize("name", sorted(NEGATIVES))
def test_what_does_not_clash_stays_quiet(name):
    assert _redefinitions("#include <cuda_runtime.h>\n" + NEGATIVES[name]) == []


def test_the_lists_come_from_the_headers_definitions():
    """Both shipped lists hold what hipcc rejected in the checks below."""
    for version in ("5.2", "6.2"):
        defined = hip_definitions(version)
        assert {"min(float,float)", "max<1>(T0,T0)", "make_float2(float,float)"} <= defined
        assert "operator+=(vector&,vector)" in defined and "operator+(vector,vector)" not in defined
    header = (
        "#define DECLOP_MAKE_TWO_COMPONENT(comp, type) x\n"
        "DECLOP_MAKE_TWO_COMPONENT(unsigned char, uchar2);\n"
        "template <class T> __DEVICE__ T min(T __a, T __b) { return __a; }\n"
        "HIP_vector_type& operator-=(const HIP_vector_type& x) noexcept {\n"
    )
    assert definitions_in_headers([header]) == {
        "make_uchar2(unsigned char,unsigned char)",
        "min<1>(T0,T0)",
        "operator-=(vector&,vector)",
    }


@pytest.mark.slow
@pytest.mark.hipcc
def test_hipcc_rejects_the_positives_and_accepts_the_negatives(tmp_path):
    """The rule's facts against the installed compiler: each positive alone fails to compile
    (the operator one at its use), the negatives together compile."""
    use = "__global__ void use(float2* p) { p[0] += p[1]; }\n"
    for name in ("device min", "template", "make helper", "compound operator"):
        text = translate("#include <cuda_runtime.h>\n" + POSITIVES[name] + use).text
        answer = compile_for_gfx90a(text, tmp_path)
        assert answer.returncode != 0, name
    quiet = "".join(v for k, v in NEGATIVES.items() if k != "a comment")
    answer = compile_for_gfx90a(translate("#include <cuda_runtime.h>\n" + quiet).text, tmp_path)
    assert answer.returncode == 0, answer.stderr
