"""Issue 26, seventh round: mechanisms read from the emitters' own definitions (C++'s conversion
rules for HIP's 64-bit lane masks, torch.utils.cpp_extension's CUDA_HOME, nvcc's option table,
NVML's bindings, ONNX Runtime's and TensorRT's install docs), each with a case where it applies
and one where it must not, on small synthetic trees (shapes written for these tests, not copied
from the corpus)."""

from __future__ import annotations

from pathlib import Path

import pytest
from port_helpers import scan_files as _scan

from rocmkit.port.warp_mask import narrow_masks


def _shown(report) -> set[tuple[str, int, str, str]]:  # type: ignore[no-untyped-def]
    return {
        (f.path, line, f.rule_id, f.severity)
        for f in report.findings
        for line in f.lines
        if f.severity != "info"
    }


# -- a warp mask's type is evaluated, whatever its spelling -------------------------------------


@pytest.mark.parametrize(
    ("mask", "narrow"),
    [
        ("uint32_t(-1)", True),  # a functional cast: the type named
        ("std::uint32_t{0xffffffff}", True),
        ("(unsigned)-1", True),
        ("static_cast<unsigned int>(-1)", True),
        ("-1", True),  # int
        ("HALF | 1u", True),  # the common type of two 32-bit operands
        ("uint64_t(-1)", False),
        ("static_cast<unsigned long long>(-1)", False),
        ("(unsigned long long)-1", False),
        ("-1ll", False),
        ("WIDE | 1u", False),  # converted to the 64-bit operand's type
        ("lane_mask_t(-1)", False),  # an unknown type: undecided, left alone
        ("HALF | __activemask()", False),  # a call: undecided
    ],
)
def test_a_mask_expression_is_typed_by_cpp_conversion_rules(mask: str, narrow: bool) -> None:
    text = (
        "#include <cstdint>\nconstexpr unsigned HALF = 0xffffu;\nconstexpr uint64_t WIDE = ~0ull;\n"
        f"__device__ int f(int v) {{\n  return __any_sync({mask}, v);\n}}\n"
    )
    assert bool(narrow_masks(text)) is narrow


_MACRO_KERNEL = """#include <cstdint>
const unsigned int kLanes = 0xffffffff;
const uint64_t kWideLanes = 0xffffffffffffffffull;

#define SHFL_STEP(MASK, V, D) \\
  V += __shfl_xor_sync(MASK, V, D)

#define REDUCE(MASK, V)                    \\
  for (int d = 16; d > 0; d >>= 1) {       \\
    SHFL_STEP(MASK, V, d);                 \\
  }

__device__ float narrow_sum(float v) {
  REDUCE(kLanes, v);
  return v;
}
"""


def test_a_mask_passed_through_macro_parameters_is_typed_at_the_macro_uses(
    tmp_path: Path,
) -> None:
    report = _scan(tmp_path, {"ops/reduce.cuh": _MACRO_KERNEL})
    assert _shown(report) == {
        ("ops/reduce.cuh", 6, "cuda-warp-mask-32", "error"),  # the call, in the macro
        ("ops/reduce.cuh", 2, "cuda-warp-mask-32", "error"),  # the declaration: the fix
    }


def test_a_macro_whose_uses_pass_64_bit_or_unknown_masks_is_not_reported() -> None:
    wide = _MACRO_KERNEL.replace("REDUCE(kLanes, v)", "REDUCE(kWideLanes, v)")
    assert narrow_masks(wide) == []
    mixed = wide.replace("  return v;\n}\n", "  REDUCE(mask_of(v), v);\n  return v;\n}\n", 1)
    assert narrow_masks(mixed) == []
