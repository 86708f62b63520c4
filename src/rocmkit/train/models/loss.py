"""Language-model loss: output head + cross-entropy, plain or chunked.

`plain` computes the logits [N, vocab] and `F.cross_entropy` on them. Under autocast the loss is
taken in fp32 (autocast's fp32 list), which in eager mode materialises a full fp32 copy of the
logits (GPT-2 124M at B=16, T=1024: 3.3 GB, and more again for its gradient). Inside a
`torch.compile`d step inductor fuses the upcast into the softmax kernel, so `plain` is the fast path
when the model is compiled (measured on an H100: docs/train.md), and in eager fp32, where there is
no copy to avoid.

`chunked` never materialises the logits in full: rows are processed `chunk_rows` at a time; each
chunk's logits are made, reduced to the loss (log-sum-exp in fp32) and turned into the gradients of
the hidden states and the head weight right away, then freed (the approach of Liger-Kernel's fused
linear cross-entropy). Backward only scales the stored gradients. The head's FLOPs are the same as
`plain`'s; peak memory drops by the logits and their gradient.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

__all__ = ["LOSS_IMPLS", "chunk_rows_for", "lm_head_loss", "resolve_loss_impl"]

LOSS_IMPLS = ("auto", "plain", "chunked")
IGNORE_INDEX = -100
# Chunk size: about this many bytes of fp32 logits per chunk.
_CHUNK_LOGIT_BYTES = 256 << 20


def resolve_loss_impl(setting: str, *, compiled: bool, mixed_precision: bool) -> str:
    """`auto` -> chunked in eager mode under bf16/fp16 autocast, plain otherwise."""
    if setting != "auto":
        return setting
    return "chunked" if mixed_precision and not compiled else "plain"


def chunk_rows_for(vocab_size: int) -> int:
    """Rows per chunk so one chunk's fp32 logits stay near 256 MiB (at least 16 rows)."""
    return max(16, _CHUNK_LOGIT_BYTES // (4 * vocab_size))


def lm_head_loss(
    hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, *, impl: str = "plain"
) -> torch.Tensor:
    """Mean cross-entropy of `hidden @ weight.T` against `labels` (IGNORE_INDEX rows skipped)."""
    hidden = hidden.flatten(0, -2)
    labels = labels.flatten()
    if impl == "chunked":
        out = _ChunkedLinearCrossEntropy.apply(
            hidden, weight, labels, chunk_rows_for(weight.shape[0])
        )
        return out  # type: ignore[no-any-return]
    logits = F.linear(hidden, weight)
    return F.cross_entropy(logits, labels, ignore_index=IGNORE_INDEX)


def _compute_dtype(device_type: str, fallback: torch.dtype) -> torch.dtype:
    if torch.is_autocast_enabled(device_type):
        return torch.get_autocast_dtype(device_type)
    return fallback


class _ChunkedLinearCrossEntropy(torch.autograd.Function):
    """Loss and both input gradients computed chunk by chunk in forward; backward scales them."""

    @staticmethod
    def forward(
        ctx: Any,
        hidden: torch.Tensor,
        weight: torch.Tensor,
        labels: torch.Tensor,
        chunk_rows: int,
    ) -> torch.Tensor:
        dtype = _compute_dtype(hidden.device.type, hidden.dtype)
        with torch.autocast(hidden.device.type, enabled=False):
            w = weight.to(dtype)
            valid = labels != IGNORE_INDEX
            count = valid.sum().clamp(min=1)
            # Gradients accumulate in fp32: they are divided by the token count only in backward,
            # so fp16 values never hold the tiny (softmax / N) numbers that would underflow.
            grad_hidden = torch.empty(hidden.shape, dtype=torch.float32, device=hidden.device)
            grad_weight = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device)
            total = torch.zeros((), dtype=torch.float32, device=hidden.device)
            for start in range(0, hidden.shape[0], chunk_rows):
                rows = slice(start, start + chunk_rows)
                h = hidden[rows].to(dtype)
                logits = (h @ w.t()).float()
                target = labels[rows].clamp(min=0)
                keep = valid[rows]
                lse = torch.logsumexp(logits, dim=-1)
                picked = logits.gather(1, target[:, None]).squeeze(1)
                total += torch.where(keep, lse - picked, 0.0).sum()
                # d(loss_row)/d(logits) = softmax - one_hot; ignored rows contribute nothing.
                grad_logits = torch.exp(logits - lse[:, None])
                grad_logits.scatter_add_(1, target[:, None], -torch.ones_like(lse)[:, None])
                grad_logits *= keep[:, None]
                g = grad_logits.to(dtype)
                del logits, grad_logits
                grad_hidden[rows] = g @ w
                grad_weight += (g.t() @ h).float()
        ctx.save_for_backward(grad_hidden, grad_weight, count)
        ctx.hidden_dtype, ctx.weight_dtype = hidden.dtype, weight.dtype
        return total / count

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[Any, ...]:
        grad_hidden, grad_weight, count = ctx.saved_tensors
        scale = grad_output.float() / count
        return (
            (grad_hidden * scale).to(ctx.hidden_dtype),
            (grad_weight * scale).to(ctx.weight_dtype),
            None,
            None,
        )
