"""Inline assembly: device-side PTX is reported, host asm stays quiet (issue 29: 14 of 21
warnings on real code were host x86/PowerPC asm)."""

from __future__ import annotations

import pytest

from rocmkit.hipify import translate


def _asm_findings(source: str) -> list[int]:
    return [d.line for d in translate(source).diagnostics if d.category == "inline-ptx"]


@pytest.mark.parametrize(
    "source",
    [
        # In a kernel or device function, whatever the template says.
        '__global__ void k(int* x) {\n  asm volatile("s_nop 0");\n}\n',
        '__device__ __forceinline__ unsigned lane() {\n  unsigned r;\n  asm("mov.u32 %0, 7;" : "=r"(r));\n  return r;\n}\n',
        'template <typename T>\n__device__ T f(T v) {\n  if (v) { __asm__ __volatile__("nop"); }\n  return v;\n}\n',
        # PTX spelled in the template, wherever it is (a macro, a helper without __device__).
        '#define LANE_ID(r) asm("mov.u32 %0, %%laneid;" : "=r"(r))\n',
        'inline void load(const float* p) {\n  asm volatile("ld.global.nc.f32 %0, [%1];" :: "l"(p));\n}\n',
        'static inline void mma() {\n  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 ...");\n}\n',
        'void f() {\n  asm volatile(".reg .pred p;\\n\\t" "setp.ne.b32 p, %0, 0;" :: "r"(1));\n}\n',
    ],
)
def test_device_side_asm_is_reported(source):
    assert len(_asm_findings(source)) == 1


@pytest.mark.parametrize(
    "source",
    [
        # RDTSC and x86 atomics as in boost headers and timing helpers.
        'static inline unsigned long long rdtsc() {\n  unsigned lo, hi;\n  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));\n  return ((unsigned long long)hi << 32) | lo;\n}\n',
        'inline long atomic_add(long* p, long v) {\n  __asm__ __volatile__("lock; xaddl %0, %1" : "+r"(v), "+m"(*p));\n  return v;\n}\n',
        'inline void cpuid(int* r) { asm volatile("cpuid" : "=a"(r[0]) : "a"(0)); }\n',
        # PowerPC barriers and time base.
        'inline void lwsync() { __asm__ __volatile__("lwsync" ::: "memory"); }\n',
        'inline unsigned long tb() { unsigned long t; asm volatile("mftb %0" : "=r"(t)); return t; }\n',
        # A host function after a __device__ variable and after a closed device function.
        '__device__ int counter;\nvoid host() { asm volatile("pause"); }\n',
        '__device__ int twice(int x) { return 2 * x; }\nvoid host() { asm volatile("pause"); }\n',
    ],
)
def test_host_asm_is_quiet(source):
    assert _asm_findings(source) == []


# Field corpus (issue 29, DeepSpeed's memory_access_utils.h): 54 PTX loads under `#ifdef
# PTX_AVAILABLE` with a portable `#else`, all of them harmless on AMD, were warnings.
_LANE_PTX = '  int id; asm volatile("mov.u32 %0, %%laneid;" : "=r"(id)); return id;\n'


def _asm_kinds(source: str) -> list[str]:
    return [d.kind for d in translate(source).diagnostics if d.category == "inline-ptx"]


@pytest.mark.parametrize(
    "source",
    [
        # a project macro with the project's own fallback
        f"__device__ int lane() {{\n#ifdef PTX_AVAILABLE\n{_LANE_PTX}#else\n  return 0;\n#endif\n}}\n",
        f"__device__ int lane() {{\n#if defined(USE_PTX) && X > 2\n{_LANE_PTX}#elif Y\n  return 1;\n#endif\n}}\n",
        # in the #else of a test that AMD takes
        f"__device__ int lane() {{\n#ifdef __HIP_PLATFORM_AMD__\n  return 0;\n#else\n{_LANE_PTX}#endif\n}}\n",
    ],
)
def test_ptx_with_a_fallback_branch_is_a_note(source):
    assert _asm_kinds(source) == ["note"]


@pytest.mark.parametrize(
    "source",
    [
        f"__device__ int lane() {{\n{_LANE_PTX}}}\n",
        # guarded, but with no other branch: nothing replaces it
        f"__device__ int lane() {{\n#ifdef PTX_AVAILABLE\n{_LANE_PTX}#endif\n  return 0;\n}}\n",
        # a branch every AMD compile takes (__CUDACC__ becomes __HIPCC__)
        f"__device__ int lane() {{\n#ifdef __CUDACC__\n{_LANE_PTX}#else\n  return 0;\n#endif\n}}\n",
        f"__device__ int lane() {{\n#if !defined(__HIP_PLATFORM_AMD__)\n  return 0;\n#else\n{_LANE_PTX}#endif\n}}\n",
        # a nested group closed before the asm does not count as its fallback
        f"__device__ int lane() {{\n#ifdef A\n  int a;\n#else\n  int b;\n#endif\n{_LANE_PTX}}}\n",
    ],
)
def test_ptx_that_amd_compiles_stays_a_warning(source):
    assert _asm_kinds(source) == ["hazard"]


@pytest.mark.parametrize("defined", [False, True])
def test_the_note_case_compiles_unless_the_project_defines_the_macro(tmp_path, defined):
    from hipcc_compile import compile_for_gfx90a

    source = f"__global__ void k(int* out) {{\n#ifdef PTX_AVAILABLE\n{_LANE_PTX.replace('return id;', 'out[0] = id;')}#else\n  out[0] = 0;\n#endif\n}}\n"
    if defined:
        source = "#define PTX_AVAILABLE\n" + source
    answer = compile_for_gfx90a(translate(source).text, tmp_path)
    assert (answer.returncode == 0) is (not defined), answer.stderr[-400:]
