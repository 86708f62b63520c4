"""A GPT decoder: pre-norm blocks, SDPA causal attention, GPT-2 initialisation, tied weights.

The shape follows GPT-2 (learned position embeddings, GELU MLP of width 4*d_model) as nanoGPT
writes it. Attention goes through F.scaled_dot_product_attention(is_causal=True) so that the
flash / memory-efficient kernels are picked where the device has them (ROCm, CUDA).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from rocmkit.errors import UserError
from rocmkit.train.models import BuiltModel, ModelConfig, count_params
from rocmkit.train.models.loss import lm_head_loss, resolve_loss_impl

__all__ = ["GPT", "build_gpt", "gpt_flops_per_token"]


class CausalSelfAttention(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.n_head = config.n_head
        self.dropout = config.dropout
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model, bias=config.bias)
        self.proj = nn.Linear(config.d_model, config.d_model, bias=config.bias)
        self.proj_dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, time, channels = x.shape
        q, k, v = self.qkv(x).split(channels, dim=2)
        # [B, T, C] -> [B, H, T, C/H], the layout SDPA expects.
        q, k, v = (t.view(batch, time, self.n_head, -1).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(
            q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0
        )
        y = y.transpose(1, 2).contiguous().view(batch, time, channels)
        out: torch.Tensor = self.proj_dropout(self.proj(y))
        return out


class MLP(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.fc = nn.Linear(config.d_model, 4 * config.d_model, bias=config.bias)
        self.proj = nn.Linear(4 * config.d_model, config.d_model, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.dropout(self.proj(F.gelu(self.fc(x))))
        return out


class Block(nn.Module):
    """Pre-norm residual block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.ln_attn = nn.LayerNorm(config.d_model, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_mlp = nn.LayerNorm(config.d_model, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_attn(x))
        out: torch.Tensor = x + self.mlp(self.ln_mlp(x))
        return out


class GPT(nn.Module):
    """input_ids [B, T] (int64) -> logits [B, T, vocab_size], or the mean loss given labels.

    With labels the head and the loss run inside forward, so a compiled model compiles the loss
    too (no separate eager region holding the full logits); `loss_impl` picks plain or chunked.
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.seq_len = config.seq_len
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.position_embedding = nn.Embedding(config.seq_len, config.d_model)
        self.dropout = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.final_norm = nn.LayerNorm(config.d_model, bias=config.bias)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.tie_weights = config.tie_weights
        self.n_layer = config.n_layer
        self.loss_impl = config.loss_impl
        self.init_weights()

    def init_weights(self) -> None:
        """GPT-2 initialisation; call it again after materialising a model built on "meta"."""
        if self.tie_weights:
            # Tied here rather than once in __init__: Module.to_empty() unties shared parameters.
            self.lm_head.weight = self.token_embedding.weight
        self.apply(_init_weights)
        # GPT-2: scale the residual projections by 1/sqrt(2 * n_layer) so the residual stream's
        # variance does not grow with depth (two residual additions per block).
        residual_std = 0.02 / math.sqrt(2 * self.n_layer)
        for name, parameter in self.named_parameters():
            if name.endswith(("attn.proj.weight", "mlp.proj.weight")):
                nn.init.normal_(parameter, mean=0.0, std=residual_std)

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        time = input_ids.shape[1]
        if time > self.seq_len:
            raise UserError(
                f"sequence of {time} tokens is longer than model.seq_len = {self.seq_len}"
            )
        positions = torch.arange(time, device=input_ids.device)
        x = self.dropout(self.token_embedding(input_ids) + self.position_embedding(positions))
        for block in self.blocks:
            x = block(x)
        x = self.final_norm(x)
        if labels is None:
            logits: torch.Tensor = self.lm_head(x)
            return logits
        # auto: compiled, inductor fuses the fp32 upcast of the logits into the loss kernel. In
        # eager under autocast, plain would materialise an fp32 copy of all logits: chunked avoids
        # it. Eager fp32 has no copy to avoid, and plain's fused log-softmax is faster there.
        impl = resolve_loss_impl(
            self.loss_impl,
            compiled=torch.compiler.is_compiling(),
            mixed_precision=torch.is_autocast_enabled(input_ids.device.type),
        )
        return lm_head_loss(x, self.lm_head.weight, labels, impl=impl)


def _init_weights(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    elif isinstance(module, nn.LayerNorm):
        module.reset_parameters()  # ones and zeros; needed after to_empty() left memory as it was


def gpt_flops_per_token(config: ModelConfig, num_params: int) -> float:
    """Training FLOPs per token, 6N + 12*L*H*d_head*T (PaLM, appendix B; nanoGPT estimate_mfu).

    N counts the parameters that take part in matmuls: all of them except the position table
    and, when the head is untied, the input token table (both are lookups, no FLOPs). A tied
    token table is counted once, as the output head's matmul.
    """
    lookup_only = config.seq_len * config.d_model
    if not config.tie_weights:
        lookup_only += config.vocab_size * config.d_model
    matmul_params = num_params - lookup_only
    head_dim = config.d_model // config.n_head
    attention = 12 * config.n_layer * config.n_head * head_dim * config.seq_len
    return float(6 * matmul_params + attention)


def build_gpt(config: ModelConfig) -> BuiltModel:
    """The GPT decoder of `config` with its blocks and FLOPs per sample (= per sequence)."""
    module = GPT(config)
    num_params = count_params(module)
    return BuiltModel(
        module=module,
        blocks=list(module.blocks),
        block_list=module.blocks,
        block_slots=[(module.blocks, str(i)) for i in range(len(module.blocks))],
        task="lm",
        num_params=num_params,
        flops_per_sample=gpt_flops_per_token(config, num_params) * config.seq_len,
        units_per_sample=config.seq_len,
        unit_name="tokens",
    )
