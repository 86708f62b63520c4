"""Warp-size analysis that follows values (`warp-size` hazards, issue 29)."""

from __future__ import annotations

import pytest

from rocmkit.hipify import translate


def _warp_size(source: str) -> list[tuple[int, str]]:
    result = translate(source)
    return [(d.line, d.message) for d in result.diagnostics if d.category == "warp-size"]


def _kernel(body: str, before: str = "") -> str:
    return f"{before}__global__ void k(const float* in, float* out, int n, int blockSize) {{\n{body}\n}}\n"


@pytest.mark.parametrize(
    ("before", "body", "says"),
    [
        # Lane masks and warp ids, literal or through a followed value.
        ("", "  unsigned tail = (blockSize & 31);", "lane ids of 0-31"),
        ("", "  int lane = (threadIdx.x + 1) & 0x1f;", "lane ids of 0-31"),
        ("", "  int w = threadIdx.y * blockDim.x >> 5;", "two 'warps' share"),
        ("#define WARP 32\n", "  int lane = threadIdx.x % WARP;", "through WARP = 32"),
        ("constexpr int kLanes = 32;\n", "  int wid = threadIdx.x / kLanes;", "through kLanes"),
        ("const int W{32};\n", "  int lane = tid_in_block & (W - 1);", "through W = 32"),
        # Shuffle reductions that start at 16 (or 32 / 2 through a name).
        (
            "",
            "  float v = 0;\n  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);",
            "half of the partial sums are lost",
        ),
        (
            "#define WS 32\n",
            "  float v = 0;\n  for (int o = WS / 2; o; o >>= 1) v += __shfl_xor(v, o);",
            "half of the partial sums are lost",
        ),
        # Loops stepping over lanes by 32.
        (
            "",
            "  float v = 0;\n  for (int i = threadIdx.x % 64; i < n; i += 32) v += in[i];",
            "step by warpSize",
        ),
        (
            "constexpr int kW = 32;\n",
            "  for (int i = lane0(); i < n; i += kW) out[i] = 0;",
            "step by warpSize",
        ),
        # Per-warp partials in a [32] shared array indexed by a warp id.
        (
            "",
            "  __shared__ float partial[32];\n  partial[threadIdx.x / warpSize] = in[0];",
            "one partial result per 32-lane warp",
        ),
        (
            "#define NW 32\n",
            "  __shared__ float s[NW];\n  int warp = threadIdx.x >> 6;\n  s[warp] = 1;",
            "one partial result",
        ),
        # Full masks through a name, and a ballot compared with the 32-lane full mask.
        (
            "#define FULL_MASK 0xffffffff\n",
            "  float v = __shfl_sync(FULL_MASK, in[0], 0);",
            "FULL_MASK is a 32-lane full mask",
        ),
        (
            "const unsigned kAll = 0xFFFFFFFFu;\n",
            "  bool all = __all_sync(kAll, n > 0);",
            "kAll is a 32-lane",
        ),
        (
            "",
            "  unsigned m = __ballot_sync(__activemask(), n > 0);\n  if (m == 0xffffffff) out[0] = 1;",
            "never (or always) holds",
        ),
    ],
)
def test_32_lane_assumptions_are_reported_with_the_64_lane_consequence(before, body, says):
    found = _warp_size(_kernel(body, before))
    assert found, "nothing reported"
    assert any(says in message for _, message in found), found


@pytest.mark.parametrize(
    ("before", "body"),
    [
        ("", "  int bytes = n % 32;  // a size, not a lane"),
        ("const int kAlign = 32;\n", "  char* p = (char*)out; p += ((size_t)p & (kAlign - 1));"),
        ("", "  __shared__ float tile[32][33];\n  tile[0][1] = in[threadIdx.y * 32];"),
        ("", "  __align__(32) float buffer[8];\n  out[0] = buffer[0];"),
        (
            "",
            "  int lane = threadIdx.x % warpSize;\n  for (int i = lane; i < n; i += warpSize) out[i] = 0;",
        ),
        ("", "  for (int o = warpSize / 2; o > 0; o /= 2) out[0] += __shfl_down(out[0], o);"),
        ("", '  // lane = threadIdx.x & 31\n  const char* s = "tid % 32";'),
    ],
)
def test_other_uses_of_32_in_device_code_are_quiet(before, body):
    assert _warp_size(_kernel(body, before)) == []


@pytest.mark.parametrize(
    "source",
    [
        "int bucket(int pos) { return pos % 32; }\n",
        "void fill(float* a) { for (int i = 0; i < 32; i += 32) a[i] = 0; }\n",
        "#define WARP 32\nint lanes(int tid) { return tid % WARP; }\n",
        "__device__ int counter;\nint host(int tid) { return tid & 31; }\n",
        "unsigned host_mask(unsigned m) { return m == 0xffffffff; }\n",
    ],
)
def test_host_code_is_quiet(source):
    assert _warp_size(source) == []


def test_a_line_a_fixed_rule_reported_is_not_reported_twice():
    source = _kernel("  int lane = threadIdx.x & 31;")
    categories = [d.category for d in translate(source).diagnostics if d.kind == "hazard"]
    assert categories == ["warp-lane-arithmetic"]
