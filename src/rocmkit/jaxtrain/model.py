"""The GPT of rocmkit.train.models.gpt written with Flax NNX: same shape, same initialisation.

Pre-norm blocks, learned position embeddings, GELU (exact, as torch's default) MLP of width
4*d_model, causal attention through jax.nn.dot_product_attention (cuDNN/CK flash kernels where
XLA has them), GPT-2 initialisation with 1/sqrt(2*n_layer) residual projections, tied head.

Mixed precision mirrors torch.autocast: parameters stay fp32 (the master weights), the matmuls
run in the compute dtype, LayerNorm and the residual stream stay fp32 (autocast runs layer_norm
in fp32, and fp32 + bf16 promotes to fp32), the loss takes fp32 logits.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from rocmkit.train.models import ModelConfig

__all__ = ["GPT", "count_params"]

# torch.nn.LayerNorm's default; Flax's is 1e-6.
_LAYER_NORM_EPS = 1e-5
_INIT_STD = 0.02


def _normal(std: float) -> Any:
    return nnx.initializers.normal(stddev=std)


def _linear(
    d_in: int, d_out: int, config: ModelConfig, dtype: Any, rngs: nnx.Rngs, std: float
) -> nnx.Linear:
    return nnx.Linear(
        d_in,
        d_out,
        use_bias=config.bias,
        dtype=dtype,
        param_dtype=jnp.float32,
        kernel_init=_normal(std),
        rngs=rngs,
    )


def _layer_norm(config: ModelConfig, rngs: nnx.Rngs) -> nnx.LayerNorm:
    return nnx.LayerNorm(
        config.d_model,
        epsilon=_LAYER_NORM_EPS,
        use_bias=config.bias,
        dtype=jnp.float32,
        param_dtype=jnp.float32,
        rngs=rngs,
    )


class CausalSelfAttention(nnx.Module):
    def __init__(
        self, config: ModelConfig, dtype: Any, rngs: nnx.Rngs, fused_attention: bool = True
    ) -> None:
        d = config.d_model
        residual_std = _INIT_STD / math.sqrt(2 * config.n_layer)
        self.n_head = config.n_head
        self.fused_attention = fused_attention
        self.qkv = _linear(d, 3 * d, config, dtype, rngs, _INIT_STD)
        self.proj = _linear(d, d, config, dtype, rngs, residual_std)

    def __call__(self, x: jax.Array) -> jax.Array:
        batch, time, channels = x.shape
        q, k, v = jnp.split(self.qkv(x), 3, axis=-1)
        # [B, T, C] -> [B, T, H, C/H], the layout jax.nn.dot_product_attention expects.
        q, k, v = (t.reshape(batch, time, self.n_head, -1) for t in (q, k, v))
        attend = jax.nn.dot_product_attention if self.fused_attention else _causal_attention
        y = attend(q, k, v, is_causal=True)
        return self.proj(y.reshape(batch, time, channels))


def _causal_attention(q: jax.Array, k: jax.Array, v: jax.Array, is_causal: bool) -> jax.Array:
    """Attention with matmuls in the input dtype and the softmax in fp32.

    XLA's CPU backend has no fp16 matmul with fp32 accumulation, which the fused
    jax.nn.dot_product_attention asks for; this path serves fp16 on CPU.
    """
    assert is_causal
    scores = jnp.einsum("bthd,bshd->bhts", q, k) / math.sqrt(q.shape[-1])
    time = q.shape[1]
    causal = jnp.tril(jnp.ones((time, time), dtype=bool))
    scores = jnp.where(causal, scores.astype(jnp.float32), -jnp.inf)
    probs = jax.nn.softmax(scores, axis=-1).astype(q.dtype)
    return jnp.einsum("bhts,bshd->bthd", probs, v)


class MLP(nnx.Module):
    def __init__(self, config: ModelConfig, dtype: Any, rngs: nnx.Rngs) -> None:
        d = config.d_model
        residual_std = _INIT_STD / math.sqrt(2 * config.n_layer)
        self.fc = _linear(d, 4 * d, config, dtype, rngs, _INIT_STD)
        self.proj = _linear(4 * d, d, config, dtype, rngs, residual_std)

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.proj(jax.nn.gelu(self.fc(x), approximate=False))


class Block(nnx.Module):
    """Pre-norm residual block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(
        self, config: ModelConfig, dtype: Any, rngs: nnx.Rngs, fused_attention: bool = True
    ) -> None:
        self.ln_attn = _layer_norm(config, rngs)
        self.attn = CausalSelfAttention(config, dtype, rngs, fused_attention)
        self.ln_mlp = _layer_norm(config, rngs)
        self.mlp = MLP(config, dtype, rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        x = x + self.attn(self.ln_attn(x))
        return x + self.mlp(self.ln_mlp(x))


class GPT(nnx.Module):
    """input_ids [B, T] (int32) -> logits [B, T, vocab_size] in the compute dtype."""

    def __init__(
        self,
        config: ModelConfig,
        *,
        dtype: Any = jnp.float32,
        remat: bool = False,
        fused_attention: bool = True,
        rngs: nnx.Rngs,
    ) -> None:
        self.dtype = dtype
        self.remat = remat
        init = _normal(_INIT_STD)
        d = config.d_model
        self.token_embedding = nnx.Embed(config.vocab_size, d, embedding_init=init, rngs=rngs)
        self.position_embedding = nnx.Embed(config.seq_len, d, embedding_init=init, rngs=rngs)
        self.blocks = nnx.List(
            [Block(config, dtype, rngs, fused_attention) for _ in range(config.n_layer)]
        )
        self.final_norm = _layer_norm(config, rngs)
        self.lm_head = (
            None
            if config.tie_weights
            else nnx.Linear(
                d,
                config.vocab_size,
                use_bias=False,
                dtype=dtype,
                kernel_init=init,
                rngs=rngs,
            )
        )

    def __call__(self, input_ids: jax.Array) -> jax.Array:
        positions = jnp.arange(input_ids.shape[1])
        # Declared: nnx.remat returns an untyped callable, which would make x Any from here on.
        x: jax.Array = self.token_embedding(input_ids) + self.position_embedding(positions)
        for block in self.blocks:
            # Recompute the block's activations in backward instead of storing them.
            x = nnx.remat(_apply_block)(block, x) if self.remat else block(x)
        x = self.final_norm(x).astype(self.dtype)
        if self.lm_head is not None:
            return self.lm_head(x)
        table = self.token_embedding.embedding[...].astype(self.dtype)
        return x @ table.T


def _apply_block(block: Block, x: jax.Array) -> jax.Array:
    return block(x)


def count_params(model: nnx.Module) -> int:
    """Parameters counted once each (the tied table is one parameter), as torch counts them."""
    state = nnx.state(model, nnx.Param)
    return sum(int(leaf.size) for leaf in jax.tree.leaves(state))
