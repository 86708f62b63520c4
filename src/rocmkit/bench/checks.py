"""Correctness checks on the output of the last timed iteration: every bench figure says whether
the work it timed gave the right answer (as nccl-tests does for every collective).

A check returns a `Check`; its `extra()` goes into the figure's Measurement.extra (`correct`,
`max_error`, `tolerance`, `num_wrong`, `check`). A figure whose check fails is still reported,
marked WRONG, and the run fails (exit 1).

Tolerances (u = unit roundoff of a format: fp32 2^-24, tf32/fp16 2^-11, bf16 2^-8):
- GEMM C = A.B, checked by the identity C.x = A.(B.x) for a random x with |x_j| in [1, 2) (no
  element of C is invisible), the right side in float64. Row i may differ by
  tol_i = (LAMBDA sqrt(k) u_acc + 2 u_in) (|A|.(|B|.|x|))_i
          + u_out min((|C|.|x|)_i, LAMBDA ||C_i* x||_2)
  where LAMBDA sqrt(k) u_acc is the probabilistic bound of Higham & Mary (SIAM J. Sci. Comput.
  2019) on a length-k accumulation (LAMBDA = 10: exceeded with probability < 2k e^-50), u_in the
  rounding of fp32 inputs to tf32, u_out the rounding of C to its dtype (worst case, or the same
  probabilistic bound on the n rounded terms of row i). u_acc is fp32's unless
  torch allows reduced-precision reductions for fp16/bf16 on the GPU, then the dtype's own.
- Attention, against softmax(QK^T/sqrt(d)) V computed in float64 from the same inputs:
  |out - ref| <= (ATTENTION_FACTOR (1 + max|s|) u + LAMBDA u_fp32 (sqrt(n) + max|s|)) (P.|V|)
  + u |ref|, elementwise, s the scaled scores, P the softmax weights, n the keys: the error of
  exp(s) is relative |s| u, of the weights rounded to the dtype u, of the output u, and the fp32
  accumulations of QK^T and PV add the probabilistic term.
- Copies and STREAM kernels move exact small integers: the destination must equal the expected
  pattern bit for bit (tolerance 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

LAMBDA = 10.0
ATTENTION_FACTOR = 8.0
UNIT_ROUNDOFF = {"fp32": 2.0**-24, "tf32": 2.0**-11, "fp16": 2.0**-11, "bf16": 2.0**-8}


@dataclass(frozen=True, kw_only=True)
class Check:
    """The verdict on one timed output: wrong elements (or rows) and the worst error met."""

    correct: bool
    max_error: float
    tolerance: float  # at the element (row) with the worst error/tolerance ratio
    num_wrong: int
    what: str

    def extra(self) -> dict[str, Any]:
        return {
            "correct": self.correct,
            "max_error": self.max_error,
            "tolerance": self.tolerance,
            "num_wrong": self.num_wrong,
            "check": self.what,
        }


def _verdict(error: torch.Tensor, tolerance: torch.Tensor, what: str) -> Check:
    """Elementwise error against tolerance; NaN and inf count as wrong."""
    import torch

    tolerance = tolerance.expand_as(error)
    wrong = ~(error <= tolerance)
    ratio = torch.where(tolerance > 0, error / tolerance, error)
    ratio = torch.nan_to_num(ratio, nan=math.inf)
    worst = int(torch.argmax(ratio.reshape(-1)))
    num_wrong = int(wrong.sum())
    return Check(
        correct=num_wrong == 0,
        max_error=float(error.reshape(-1)[worst]),
        tolerance=float(tolerance.reshape(-1)[worst]),
        num_wrong=num_wrong,
        what=what,
    )


def _reference_dtype(device: torch.device) -> torch.dtype:
    import torch

    return torch.float64 if device.type in ("cpu", "cuda") else torch.float32


def accumulation_roundoff(dtype: str, device: torch.device) -> float:
    """u of the format a matmul accumulates in: fp32, unless the GPU may reduce in fp16/bf16."""
    import torch

    matmul = torch.backends.cuda.matmul
    reduced = {
        "fp16": getattr(matmul, "allow_fp16_reduced_precision_reduction", False),
        "bf16": getattr(matmul, "allow_bf16_reduced_precision_reduction", False),
    }
    if device.type == "cuda" and reduced.get(dtype):
        return UNIT_ROUNDOFF[dtype]
    return UNIT_ROUNDOFF["fp32"]


def check_matmul(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, dtype: str) -> Check:
    """C = A.B checked as C.x = A.(B.x) in float64 (O(n^2) work against the product's O(n^3))."""
    import torch

    ref = _reference_dtype(c.device)
    k = a.shape[1]
    gen = torch.Generator(device="cpu").manual_seed(k)
    signs = torch.randint(0, 2, (c.shape[1],), generator=gen) * 2 - 1
    x = (signs * (1 + torch.rand(c.shape[1], generator=gen, dtype=torch.float64))).to(c.device, ref)
    a64, b64, c64 = a.to(ref), b.to(ref), c.to(ref)
    error = (c64 @ x - a64 @ (b64 @ x)).abs()
    magnitude = a64.abs() @ (b64.abs() @ x.abs())
    out_dtype = "bf16" if dtype == "fp8" else dtype
    u_out = UNIT_ROUNDOFF["fp32" if out_dtype == "tf32" else out_dtype]
    u_in = UNIT_ROUNDOFF["tf32"] if dtype == "tf32" else 0.0
    u_acc = accumulation_roundoff(out_dtype, c.device)
    tolerance = (LAMBDA * math.sqrt(k) * u_acc + 2 * u_in) * magnitude
    # rounding C to its dtype: at most u_out |C|.|x| per row, and with independent errors at most
    # LAMBDA u_out ||C_i x||_2 (far smaller for long rows); the smaller of the two bounds
    worst_case = c64.abs() @ x.abs()
    independent = LAMBDA * torch.sqrt((c64 * c64) @ (x * x))
    tolerance += u_out * torch.minimum(worst_case, independent) + 4 * k * 2.0**-53 * magnitude
    return _verdict(error, tolerance, "C.x vs A.(B.x), float64, random x")


def check_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, dtype: str, causal: bool
) -> Check:
    """SDPA output against softmax(QK^T/sqrt(d)) V in float64 from the same inputs."""
    import torch

    ref = _reference_dtype(out.device)
    q64, k64, v64 = (t.detach().to(ref) for t in (q, k, v))
    scores = q64 @ k64.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        seq_q, seq_k = scores.shape[-2], scores.shape[-1]
        mask = torch.ones(seq_q, seq_k, dtype=torch.bool, device=out.device).tril()
        scores = scores.masked_fill(~mask, -math.inf)
    weights = torch.softmax(scores, dim=-1)
    expected = weights @ v64
    u = UNIT_ROUNDOFF[dtype]
    largest = float(scores.masked_fill(scores.isinf(), 0).abs().max())
    # kernels accumulate QK^T (length d) and PV (length seq) in fp32
    accumulation = LAMBDA * UNIT_ROUNDOFF["fp32"] * (math.sqrt(scores.shape[-1]) + largest)
    tolerance = (ATTENTION_FACTOR * (1 + largest) * u + accumulation) * (weights @ v64.abs())
    tolerance += u * expected.abs()
    error = (out.detach().to(ref) - expected).abs()
    return _verdict(error, tolerance, "softmax(QK^T/sqrt(d))V in float64")


def check_equal(got: torch.Tensor, expected: torch.Tensor, what: str) -> Check:
    """Bit-exact comparison (copies, STREAM kernels on small integers)."""
    import torch

    if got.device != expected.device:
        got = got.to(expected.device)
    if torch.equal(got, expected):  # one pass over both; the details only for a wrong result
        return Check(correct=True, max_error=0.0, tolerance=0.0, num_wrong=0, what=what)
    error = torch.nan_to_num((got - expected).abs(), nan=math.inf)
    return _verdict(error, torch.zeros((), device=error.device, dtype=error.dtype), what)
