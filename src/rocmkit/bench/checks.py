"""Correctness checks on the output of the last timed iteration: every bench figure says whether
the work it timed gave the right answer (as nccl-tests does for every collective).

A check returns a `Check`; its `extra()` goes into the figure's Measurement.extra (`correct`,
`max_error`, `tolerance`, `num_wrong`, `check`). A figure whose check fails is still reported,
marked WRONG, and the run fails (exit 1).

Tolerances (u = unit roundoff of a format: fp32 2^-24, tf32/fp16 2^-11, bf16 2^-8):
- GEMM C = A.B, checked by the identity C.x = A.(B.x) for a random x with |x_j| in [1, 2) (no
  element of C is invisible), the right side in float64. Row i may differ by
  tol_i = (LAMBDA sqrt(k) u_acc + 2 u_in) (|A|.(|B|.|x|))_i
          + u_out min((|C|.|x|)_i, LAMBDA max|x| ||C_i||_2)
  where LAMBDA sqrt(k) u_acc is the probabilistic bound of Higham & Mary (SIAM J. Sci. Comput.
  2019) on a length-k accumulation (LAMBDA = 10: exceeded with probability < 2k e^-50), u_in the
  rounding of fp32 inputs to tf32, u_out the rounding of C to its dtype (worst case, or the same
  probabilistic bound on the n rounded terms of row i). A.(B.x) and the first term are computed
  once from the inputs before timing; the check of the timed C is three passes over it. u_acc
  is fp32's unless torch allows reduced-precision reductions for fp16/bf16 on the GPU, then the
  dtype's own.
- Attention, against softmax(QK^T/sqrt(d)) V computed in float64 from the same inputs:
  |out - ref| <= (ATTENTION_FACTOR (1 + max|s|) u + LAMBDA u_fp32 (sqrt(n) + max|s|)) (P.|V|)
  + (u + u_fp32) |ref|, elementwise, compared in fp32; s the scaled scores, P the softmax
  weights, n the keys: the error of exp(s) is relative |s| u, of the weights rounded to the dtype
  u, of the output u, of the reference rounded to fp32 u_fp32, and the fp32 accumulations of QK^T
  and PV add the probabilistic term. The reference and tolerance are made once from the inputs
  before timing; the check of the timed output is a few passes over it.
- Copies and STREAM kernels move exact small integers: the destination must equal the expected
  pattern bit for bit (tolerance 0). Checked in one read of the destination (`exact_reference`,
  `check_exact_output`): the sum of its bits as int64 words, wrapping modulo 2^64, must equal the
  expected array's (summed once before timing), and a rotating sample of its 64-byte lines (every
  SAMPLE_STRIDE-th, starting one line further at each check) must equal the expected lines. One
  wrong element, or any set of them whose bit changes do not cancel modulo 2^64, changes the sum:
  caught for certain. Bits moved between places (a swap, a misplaced block) keep the sum; they are
  caught when a sampled line holds one of them, so for certain once a misplaced run spans
  SAMPLE_STRIDE lines (4 KiB). Only when that fails is the destination compared in full (for
  `num_wrong` and `max_error`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

LAMBDA = 10.0
ATTENTION_FACTOR = 8.0
TINY = 2.0**-1000  # a floor for tolerances: every ratio error/tolerance is defined
TINY_FP32 = 2.0**-120
SAMPLE_STRIDE = 64  # an exact check compares every 64th 64-byte line besides the checksum
LINE_WORDS = 8  # int64 words in a 64-byte line
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
    """Elementwise error (a fresh tensor, overwritten) against a positive tolerance; NaN and inf
    count as wrong. Two passes when right (the ratio, its maximum); the count only when wrong."""
    import torch

    tolerance = tolerance.expand_as(error)
    ratio = error.div_(tolerance).view(-1)
    worst = int(torch.argmax(ratio))  # NaN is the maximum for argmax
    worst_ratio = float(ratio[worst])
    num_wrong = 0 if worst_ratio <= 1 else int((~(ratio <= 1)).sum())
    worst_tolerance = float(tolerance.reshape(-1)[worst])
    return Check(
        correct=num_wrong == 0,
        max_error=worst_ratio * worst_tolerance,
        tolerance=worst_tolerance,
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


@dataclass(frozen=True, kw_only=True)
class Reference:
    """What a correct output must be, made once from the inputs before timing: checking the last
    timed output is then a pass or two over it (well under 2% of the timed work)."""

    expected: torch.Tensor  # float64: A.(B.x) for GEMM, the float64 attention for SDPA
    tolerance: torch.Tensor  # the part of the tolerance that depends on the inputs only
    u_out: float  # unit roundoff of the output's dtype
    x: torch.Tensor | None = None  # GEMM's random vector
    what: str = ""


def matmul_reference(a: torch.Tensor, b: torch.Tensor, dtype: str) -> Reference:
    """A.(B.x) in float64 and the accumulation part of the tolerance (O(n^2) work)."""
    import torch

    ref = _reference_dtype(a.device)
    k = a.shape[1]
    gen = torch.Generator(device="cpu").manual_seed(k)
    signs = torch.randint(0, 2, (b.shape[1],), generator=gen) * 2 - 1
    x = (signs * (1 + torch.rand(b.shape[1], generator=gen, dtype=torch.float64))).to(a.device, ref)
    a64, b64 = a.to(ref), b.to(ref)
    magnitude = a64.abs() @ (b64.abs() @ x.abs())
    out_dtype = "bf16" if dtype == "fp8" else dtype
    u_in = UNIT_ROUNDOFF["tf32"] if dtype == "tf32" else 0.0
    u_acc = accumulation_roundoff(out_dtype, a.device)
    tolerance = (LAMBDA * math.sqrt(k) * u_acc + 2 * u_in + 4 * k * 2.0**-53) * magnitude
    tolerance.clamp_(min=TINY)  # a zero row of A: C.x must be 0 there, and 0/TINY is 0
    return Reference(
        expected=a64 @ (b64 @ x),
        tolerance=tolerance,
        u_out=UNIT_ROUNDOFF["fp32" if out_dtype == "tf32" else out_dtype],
        x=x,
        what="C.x vs A.(B.x), float64, random x",
    )


def check_matmul_output(reference: Reference, c: torch.Tensor) -> Check:
    """The timed output C against its reference: three passes over C."""
    import torch

    assert reference.x is not None
    x = reference.x
    c64 = c.to(x.dtype)
    error = (c64 @ x - reference.expected).abs()
    # rounding C to its dtype: at most u_out |C|.|x| per row, and with independent errors at most
    # LAMBDA u_out ||C_i x||_2 <= LAMBDA u_out max|x| ||C_i||_2 (far smaller for long rows)
    worst_case = c64.abs() @ x.abs()
    independent = LAMBDA * float(x.abs().max()) * torch.linalg.vector_norm(c64, dim=1)
    tolerance = reference.tolerance + reference.u_out * torch.minimum(worst_case, independent)
    return _verdict(error, tolerance, reference.what)


def check_matmul(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, dtype: str) -> Check:
    """C = A.B checked as C.x = A.(B.x) in float64 (O(n^2) work against the product's O(n^3))."""
    return check_matmul_output(matmul_reference(a, b, dtype), c)


def attention_reference(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dtype: str, causal: bool
) -> Reference:
    """softmax(QK^T/sqrt(d)) V in float64 from the inputs, and the tolerance of each element."""
    import torch

    ref = _reference_dtype(q.device)
    q64, k64, v64 = (t.detach().to(ref) for t in (q, k, v))
    scores = q64 @ k64.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        seq_q, seq_k = scores.shape[-2], scores.shape[-1]
        mask = torch.ones(seq_q, seq_k, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~mask, -math.inf)
    weights = torch.softmax(scores, dim=-1)
    expected = weights @ v64
    u = UNIT_ROUNDOFF[dtype]
    largest = float(scores.masked_fill(scores.isinf(), 0).abs().max())
    # kernels accumulate QK^T (length d) and PV (length seq) in fp32
    accumulation = LAMBDA * UNIT_ROUNDOFF["fp32"] * (math.sqrt(scores.shape[-1]) + largest)
    tolerance = (ATTENTION_FACTOR * (1 + largest) * u + accumulation) * (weights @ v64.abs())
    # compared in fp32 (one pass fewer over the output): the reference rounded to fp32 errs by u_fp32
    tolerance += (u + UNIT_ROUNDOFF["fp32"]) * expected.abs()
    return Reference(
        expected=expected.float(),
        tolerance=tolerance.float().clamp_(min=TINY_FP32),
        u_out=u,
        what="softmax(QK^T/sqrt(d))V in float64",
    )


def check_attention_output(reference: Reference, out: torch.Tensor) -> Check:
    """The timed output against the reference: a subtraction, a division and a maximum."""
    error = (out.detach().float() - reference.expected).abs_()
    return _verdict(error, reference.tolerance, reference.what)


def check_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, dtype: str, causal: bool
) -> Check:
    """SDPA output against softmax(QK^T/sqrt(d)) V in float64 from the same inputs."""
    return check_attention_output(attention_reference(q, k, v, dtype, causal), out)


def check_equal(got: torch.Tensor, expected: torch.Tensor, what: str) -> Check:
    """Bit-exact comparison (copies, STREAM kernels on small integers)."""
    import torch

    if got.device != expected.device:
        got = got.to(expected.device)
    if torch.equal(_bits(got), _bits(expected)):  # one pass; the details only when wrong
        return Check(correct=True, max_error=0.0, tolerance=0.0, num_wrong=0, what=what)
    error = torch.nan_to_num((got - expected).abs(), nan=math.inf).view(-1)
    worst = int(torch.argmax(error))
    num_wrong = int((~(got == expected)).sum())
    return Check(
        correct=False, max_error=float(error[worst]), tolerance=0.0, num_wrong=num_wrong, what=what
    )


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's bits as wide integers: a bitwise comparison, and torch compares int64 fastest
    (on a CPU about 1.4x faster than float32)."""
    import torch

    if tensor.is_contiguous() and tensor.element_size() == 4 and tensor.numel() % 2 == 0:
        return tensor.view(torch.int64)
    return tensor


@dataclass(kw_only=True)
class ExactReference:
    """What an exact output must be, summarised once before timing: its bit checksum."""

    expected: torch.Tensor
    checksum: int | None  # the int64 words of `expected` summed modulo 2^64 (None: no words)
    what: str
    checks: int = 0  # checks so far: the sampled lines start one line further each time


def exact_reference(expected: torch.Tensor, what: str) -> ExactReference:
    """The checksum of `expected` for `check_exact_output` (one pass, before timing)."""
    expected = expected.contiguous()
    words = _words(expected)
    checksum = None if words is None else _checksum(words)
    return ExactReference(expected=expected, checksum=checksum, what=what)


def check_exact_output(reference: ExactReference, got: torch.Tensor) -> Check:
    """`got` must equal the expected array bit for bit: its checksum and a rotating sample of its
    lines are compared (one read of `got`, on its own device); the full comparison only when
    they disagree."""
    import torch

    start = reference.checks % SAMPLE_STRIDE
    reference.checks += 1
    expected, words = reference.expected, _words(got)
    if reference.checksum is None or words is None or got.shape != expected.shape:
        return check_equal(got, expected, reference.what)
    expected_words = _words(expected)
    assert expected_words is not None
    sample = _lines(words)[start::SAMPLE_STRIDE].to(expected.device)
    if _checksum(words) == reference.checksum and torch.equal(
        sample, _lines(expected_words)[start::SAMPLE_STRIDE]
    ):
        return Check(correct=True, max_error=0.0, tolerance=0.0, num_wrong=0, what=reference.what)
    return check_equal(got, expected, reference.what)


def _words(tensor: torch.Tensor) -> torch.Tensor | None:
    """The tensor's bits as int64 words (int32 ones for an odd count of 4-byte elements); None
    for a tensor that is not a contiguous array of 4- or 8-byte elements."""
    import torch

    if not tensor.is_contiguous() or tensor.element_size() not in (4, 8):
        return None
    if tensor.element_size() == 4 and tensor.numel() % 2:
        return tensor.view(torch.int32).view(-1)
    return tensor.view(torch.int64).view(-1)


def _checksum(words: torch.Tensor) -> int:
    """The words summed as int64, wrapping modulo 2^64 (int32 words are widened first)."""
    import torch

    return int(words.sum(dtype=torch.int64))


def _lines(words: torch.Tensor) -> torch.Tensor:
    """64-byte lines of int64 words (single words when the count does not divide)."""
    if words.element_size() == 8 and words.numel() % LINE_WORDS == 0:
        return words.view(-1, LINE_WORDS)
    return words
