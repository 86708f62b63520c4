"""Issue 26, eighth round, C++ side: what a ROCm build compiles, read from hip-clang's, HIP's and
torch's own definitions (the macros they define, hipify's `#if` evaluator, cuda_arch.toml), each
with a case where a mechanism applies and one where it must not, on small synthetic sources
(shapes written for these tests, not copied from the corpus)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from port_helpers import scan_files as _scan

from rocmkit.port.cpp_scan import TORCH_HIP_DEFINES, names_hip


def _by_line(report) -> dict[tuple[str, int], set[tuple[str, str]]]:  # type: ignore[no-untyped-def]
    found: dict[tuple[str, int], set[tuple[str, str]]] = {}
    for f in report.findings:
        for line in f.lines:
            found.setdefault((f.path, line), set()).add((f.rule_id, f.severity))
    return found


def _severities(report, path: str, line: int) -> set[str]:  # type: ignore[no-untyped-def]
    return {severity for _, severity in _by_line(report).get((path, line), set())}


# -- a project's own HIP switch, by what defines it ----------------------------------------------

_PER_VENDOR_REDUCE = """#ifdef {flag}
#define WARP_W 64
#else
#define WARP_W 32
#endif
#define FULL_MASK 0xffffffff

template <typename T>
__device__ T reduce(T v) {{
  for (int offset = WARP_W / 2; offset > 0; offset /= 2)
#ifdef {flag}
    v += __shfl_down(v, offset);
#else
    v += __shfl_down_sync(FULL_MASK, v, offset);
#endif
  return v;
}}
"""


def test_a_flag_named_for_hip_is_the_projects_switch(tmp_path: Path) -> None:
    """`#ifdef MMCV_WITH_HIP`: the project's build defines it for ROCm; the CUDA side of it (a
    32-bit mask, `#define WARP_W 32`) and the width's uses are info."""
    report = _scan(tmp_path, {"ops/reduce.cuh": _PER_VENDOR_REDUCE.format(flag="LIB_WITH_HIP")})
    shown = [f for f in report.findings if f.severity != "info"]
    assert shown == []
    assert "info" in _severities(report, "ops/reduce.cuh", 4)  # #define WARP_W 32, CUDA side
    assert "info" in _severities(report, "ops/reduce.cuh", 10)  # WARP_W / 2: defined per vendor


def test_a_flag_that_only_contains_the_letters_is_not_a_switch(tmp_path: Path) -> None:
    """`CHIP_FAST` has the letters, not the word: the 32-lane code it selects stays a hazard."""
    report = _scan(tmp_path, {"ops/reduce.cuh": _PER_VENDOR_REDUCE.format(flag="CHIP_FAST")})
    assert "error" in _severities(report, "ops/reduce.cuh", 14)  # the 32-bit mask at the call
    assert "warn" in _severities(report, "ops/reduce.cuh", 4)  # #define WARP_W 32


@pytest.mark.parametrize(
    ("condition", "hip"),
    [
        ("defined(USE_ROCM)", True),
        ("defined(__HIP_PLATFORM_AMD__)", True),
        ("HIPBLAS_V2", True),
        ("defined(MMCV_WITH_HIP)", True),
        ("!defined(WITH_ROCM)", True),
        ("defined(__gfx942__)", True),
        ("defined(__AMDGCN__)", True),
        ("defined(CHIP_ID)", False),
        ("defined(SHIPPED)", False),
        ("CUDA_VERSION >= 11000", False),
    ],
)
def test_which_macros_name_a_hip_build(condition: str, hip: bool) -> None:
    assert names_hip(condition) is hip


def test_every_macro_torch_defines_for_a_rocm_extension_build_is_a_hip_switch() -> None:
    """torch.utils.cpp_extension adds COMMON_HIP_FLAGS to every hipcc line of a ROCm build: a
    macro it defines there is a HIP switch. Read from the installed torch, so a new one fails."""
    torch = pytest.importorskip("torch")
    source = (Path(torch.__file__).parent / "utils" / "cpp_extension.py").read_text()
    block = re.search(r"COMMON_HIP_FLAGS = \[(.*?)\]", source, re.S)
    assert block is not None
    defined = re.findall(r"'-D(\w+)", block.group(1))
    assert defined and set(defined) <= set(TORCH_HIP_DEFINES)
    assert all(names_hip(f"defined({name})") for name in defined)


# -- code in a branch no AMD compile takes (hipify's #if evaluator) ------------------------------

_VERSIONED = """#include <cuda.h>
#if {condition}
__device__ inline float wrap_shfl(unsigned mask, float v, int lane) {{
  return __shfl_sync(mask, v, lane);
}}
__device__ float pick(float v) {{
  unsigned m = 0xffffu;
  return __shfl_sync(m, v, 0);
}}
#endif
"""


def test_a_mask_in_a_branch_hip_clang_never_compiles_is_info(tmp_path: Path) -> None:
    """HIP defines no CUDA_VERSION, so `#if CUDA_VERSION >= 9000` is false under hip-clang."""
    files = {"k.cuh": _VERSIONED.format(condition="CUDA_VERSION >= 9000")}
    report = _scan(tmp_path, files)
    assert _severities(report, "k.cuh", 8) == {"info"}
    assert "not compiled for AMD" in " ".join(f.evidence for f in report.findings)


def test_a_mask_under_a_flag_amd_may_define_stays(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"k.cuh": _VERSIONED.format(condition="defined(WITH_SHUFFLES)")})
    assert "error" in _severities(report, "k.cuh", 8)


# -- __CUDA_ARCH__ guards: what a ROCm build compiles instead ------------------------------------

_GUARDED = """#include <cuda_fp16.h>
__device__ bool is_nan(half v) {{
#if __CUDA_ARCH__ >= {threshold}
  return __hisnan(v);
{alternative}#endif
}}
"""


def test_an_arch_guard_with_an_else_is_info_naming_the_branch_amd_compiles(
    tmp_path: Path,
) -> None:
    source = _GUARDED.format(threshold=700, alternative="#else\n  return !__heq(v, v);\n")
    report = _scan(tmp_path, {"k.cu": source})
    guard = [f for f in report.findings if f.rule_id == "cuda-arch-guard"]
    assert [(f.line, f.severity) for f in guard] == [(3, "info")]
    assert "line 5" in guard[0].evidence
    # hipify's own cuda-arch hazard is the same guard: not a second finding
    assert [f for f in report.findings if f.rule_id != "cuda-arch-guard"] == []


def test_an_arch_guard_that_leaves_a_body_empty_is_warn(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"k.cu": _GUARDED.format(threshold=800, alternative="")})
    assert _severities(report, "k.cu", 3) == {"warn"}


@pytest.mark.parametrize(
    "alternative",
    [
        "#else\n  // not supported below sm_80\n",
        '#else\n  assert(false && "needs sm_80");\n',
        '#else\n  asm volatile("trap;");\n',
        "#elif __CUDA_ARCH__ >= 750\n  return __hisnan(v);\n",  # false on AMD too
    ],
)
def test_an_alternative_that_only_stops_is_no_path_for_amd(
    tmp_path: Path, alternative: str
) -> None:
    report = _scan(tmp_path, {"k.cu": _GUARDED.format(threshold=800, alternative=alternative)})
    assert _severities(report, "k.cu", 3) == {"warn"}


def test_an_arch_guard_on_a_feature_hip_has_is_info(tmp_path: Path) -> None:
    """cuda_arch.toml (from HIP's headers): AMD has what sm_60 and below gate, e.g. the
    double-precision atomicAdd; the guard drops code HIP could compile: check, not a hazard."""
    source = (
        "template <typename T> struct Add;\n"
        "#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 600)\n"
        "template <> struct Add<double> {\n"
        "  __device__ double operator()(double* a, double v) { return atomicAdd(a, v); }\n"
        "};\n#endif\n"
    )
    report = _scan(tmp_path, {"atomics.cuh": source})
    guard = [f for f in report.findings if f.rule_id == "cuda-arch-guard"]
    assert [(f.line, f.severity) for f in guard] == [(2, "info")]
    assert "HIP has double-precision atomicAdd" in guard[0].evidence


# -- a warp width bound by name: reported where it is defined ------------------------------------

_NAMED_WIDTH = """namespace {{
{definition}

__device__ float block_sum(float v) {{
  static __shared__ float partial[WARP_W];
  int lane = threadIdx.x % WARP_W;
  int warp = threadIdx.x / WARP_W;
  for (int offset = WARP_W / 2; offset > 0; offset >>= 1)
    v += __shfl_down_sync({mask}, v, offset);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  return partial[0];
}}
}}
"""


def test_a_named_warp_width_is_reported_at_its_definition_naming_its_uses(
    tmp_path: Path,
) -> None:
    report = _scan(
        tmp_path,
        {"reduce.cuh": _NAMED_WIDTH.format(definition="const int WARP_W = 32;", mask="0xFFFFFFFF")},
    )
    finding = next(f for f in report.findings if f.rule_id == "cuda-kernel-hazard")
    assert finding.severity == "warn"
    assert finding.line == 2  # the constant: where the fix goes
    assert {5, 6, 7, 8} <= set(finding.lines)  # and every use, still listed
    assert finding.evidence.startswith("WARP_W = 32 sizes warp code at lines 5, 6, 7, 8")


def test_a_width_bound_to_warp_size_is_not_reported(tmp_path: Path) -> None:
    definition = "const int WARP_W = warpSize;"
    report = _scan(
        tmp_path,
        {"reduce.cuh": _NAMED_WIDTH.format(definition=definition, mask="0xffffffffffffffffull")},
    )
    assert [f for f in report.findings if f.severity != "info"] == []


# -- lane indices through a name in a file that already has a HIP path ---------------------------

_LANES = """{switch}#define {name} 32
__global__ void k(float* out) {{
  int group = threadIdx.x / {name};
  int lane = threadIdx.x % {name};
  out[group * {name} + lane] = 0.f;
  if ((threadIdx.x & 31) == 0) out[group] = 1.f;
}}
"""


def test_lane_indices_through_a_name_in_a_ported_file_are_info(tmp_path: Path) -> None:
    switch = "#ifdef USE_ROCM\n#include <hip/hip_runtime.h>\n#endif\n"
    report = _scan(tmp_path, {"k.cu": _LANES.format(switch=switch, name="WARP_LANES")})
    assert _severities(report, "k.cu", 6) == {"info"}
    assert _severities(report, "k.cu", 7) == {"info"}


def test_lane_indices_through_a_name_elsewhere_stay_warn(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"k.cu": _LANES.format(switch="", name="WARP_LANES")})
    assert _severities(report, "k.cu", 3) == {"warn"}
    assert _severities(report, "k.cu", 4) == {"warn"}


def test_a_32_named_for_threads_or_pixels_is_a_tile_size_to_check(tmp_path: Path) -> None:
    """CUDA's warp width is warpSize; `PER_PIXEL = 32` is a group of threads the code chose, right
    on AMD unless the group must be one hardware warp: info (check), not a hazard."""
    report = _scan(tmp_path, {"k.cu": _LANES.format(switch="", name="PER_PIXEL")})
    assert _severities(report, "k.cu", 3) == {"info"}
    assert "not named for a warp" in " ".join(f.evidence for f in report.findings)


@pytest.mark.parametrize(
    ("mask", "narrow"),
    [("0xffffffffffffffffull", False), ("~0ull", False), ("0xffffffffu", True), ("~0u", True)],
)
def test_a_full_mask_is_32_lanes_only_when_its_literal_is(
    tmp_path: Path, mask: str, narrow: bool
) -> None:
    """The 64-bit full mask is what HIP's *_sync intrinsics want: not the 32-lane hazard."""
    source = f"__device__ float f(float v) {{\n  return __shfl_xor_sync({mask}, v, 1);\n}}\n"
    report = _scan(tmp_path, {"k.cu": source})
    assert bool([f for f in report.findings if f.severity != "info"]) is narrow


def test_a_width_bound_only_below_its_uses_is_not_their_definition(tmp_path: Path) -> None:
    """Another function's `constexpr int WARP_W = 32;` further down does not size the uses above."""
    source = (
        _NAMED_WIDTH.format(definition="#define WARP_W 32", mask="0xFFFFFFFF").replace(
            "#define WARP_W 32", "", 1
        )
        + "__device__ int later() {\n  constexpr int WARP_W = 32;\n  return WARP_W;\n}\n"
    )
    report = _scan(tmp_path, {"reduce.cuh": source})
    shown = [f for f in report.findings if f.rule_id == "cuda-kernel-hazard"]
    assert shown and shown[0].line == 5  # the uses are still reported, from the first
    assert "sizes warp code" not in " ".join(f.evidence for f in report.findings)
