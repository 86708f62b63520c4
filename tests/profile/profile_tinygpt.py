"""A nanoGPT-shaped model for the profile tests (the layout the estimator assumes)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from rocmkit.profile.estimator import ModelShape


class Block(nn.Module):
    def __init__(self, shape: ModelShape) -> None:
        super().__init__()
        h = shape.d_model
        self.n_head = shape.n_head
        self.ln_1 = nn.LayerNorm(h, bias=shape.bias)
        self.qkv = nn.Linear(h, 3 * h, bias=shape.bias)
        self.proj = nn.Linear(h, h, bias=shape.bias)
        self.ln_2 = nn.LayerNorm(h, bias=shape.bias)
        self.fc = nn.Linear(h, 4 * h, bias=shape.bias)
        self.out = nn.Linear(4 * h, h, bias=shape.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln_2(x))))


class TinyGPT(nn.Module):
    def __init__(self, shape: ModelShape) -> None:
        super().__init__()
        self.wte = nn.Embedding(shape.vocab_size, shape.d_model)
        self.wpe = nn.Embedding(shape.seq_len, shape.d_model)
        self.blocks = nn.ModuleList(Block(shape) for _ in range(shape.n_layer))
        self.ln_f = nn.LayerNorm(shape.d_model, bias=shape.bias)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)

    def loss(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = self(idx)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))
