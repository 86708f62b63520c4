"""Precision policies for the JAX backend: compute dtype and fp16 dynamic loss scaling.

fp32 master weights always; bf16 and fp16 only change the dtype the matmuls run in. fp16 has
a narrow exponent range, so its loss is multiplied by a scale before the backward pass and the
gradients divided by it after, with torch.amp.GradScaler's rule for the scale: halve it and skip
the step when a gradient overflows, double it after `growth_interval` clean steps in a row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from rocmkit.errors import UserError
from rocmkit.train.config import PrecisionConfig

__all__ = ["LossScale", "Policy", "all_finite", "build_policy", "next_loss_scale"]

_COMPUTE_DTYPES: dict[str, Any] = {
    "fp32": jnp.float32,
    "bf16": jnp.bfloat16,
    "fp16": jnp.float16,
}
# torch.amp.GradScaler's defaults, so both backends start from the same scale.
DEFAULT_LOSS_SCALE = 2.0**16
DEFAULT_GROWTH_INTERVAL = 2000
_BACKOFF = 0.5
_GROWTH = 2.0

LossScale = dict[str, jax.Array]  # {"scale": f32 [], "good_steps": i32 []}: part of the state


@dataclass(frozen=True, kw_only=True)
class Policy:
    """What the train step needs to know about precision."""

    name: str
    compute_dtype: Any
    uses_loss_scaling: bool
    initial_scale: float
    growth_interval: int

    def initial_loss_scale(self) -> LossScale:
        scale = self.initial_scale if self.uses_loss_scaling else 1.0
        return {"scale": jnp.float32(scale), "good_steps": jnp.int32(0)}


def build_policy(config: PrecisionConfig) -> Policy:
    """The policy for precision.dtype (fp32 | bf16 | fp16)."""
    if config.dtype not in _COMPUTE_DTYPES:  # a policy registered for the PyTorch backend
        raise UserError(
            f"precision {config.dtype!r} is registered for the PyTorch backend only; with "
            f"--backend jax use one of {', '.join(_COMPUTE_DTYPES)}"
        )
    return Policy(
        name=config.dtype,
        compute_dtype=_COMPUTE_DTYPES[config.dtype],
        uses_loss_scaling=config.dtype == "fp16",
        initial_scale=config.loss_scale_init or DEFAULT_LOSS_SCALE,
        growth_interval=config.loss_scale_growth_interval or DEFAULT_GROWTH_INTERVAL,
    )


def all_finite(tree: Any) -> jax.Array:
    """True when no leaf of `tree` holds an inf or a NaN (one fused reduction under jit)."""
    leaves = [jnp.all(jnp.isfinite(leaf)) for leaf in jax.tree.leaves(tree)]
    return jnp.all(jnp.stack(leaves))


def next_loss_scale(policy: Policy, state: LossScale, finite: jax.Array) -> LossScale:
    """GradScaler.update(): back off on overflow, grow after growth_interval clean steps."""
    if not policy.uses_loss_scaling:
        return state
    good = jnp.where(finite, state["good_steps"] + 1, 0)
    grow = good >= policy.growth_interval
    scale = jnp.where(
        finite, jnp.where(grow, state["scale"] * _GROWTH, state["scale"]), state["scale"] * _BACKOFF
    )
    return {"scale": scale, "good_steps": jnp.where(grow, 0, good).astype(jnp.int32)}
