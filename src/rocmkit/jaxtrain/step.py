"""One optimizer step as one compiled XLA program: accumulate, unscale, clip, AdamW, (fp16) skip.

The state is a plain pytree {params, opt_state, loss_scale, step, num_skipped_steps}; the model's
structure (NNX graphdef) is static and closed over, so `jax.jit` traces a pure function and the
whole step, loss and accumulation loop (`lax.scan` over micro-batches) included, runs without a
return to Python. Synthetic batches are made inside the step from the step number
(rocmkit.jaxtrain.data). Only under fp16 loss scaling does the step check its gradients for
inf/NaN and skip itself. Under a data-parallel mesh the state is replicated and the batch split on its
sample axis: XLA inserts the gradient all-reduce itself.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from rocmkit.jaxtrain.precision import Policy, all_finite, next_loss_scale
from rocmkit.train.config import TrainSection

__all__ = ["init_state", "lm_loss", "make_optimizer", "make_train_step"]

# torch.nn.utils.clip_grad_norm_ adds this to the norm before dividing.
_CLIP_EPS = 1e-6
_ADAM_EPS = 1e-8  # torch.optim.AdamW's default
_IGNORE_INDEX = -100

State = dict[str, Any]
Batch = dict[str, jax.Array]


def make_optimizer(train: TrainSection) -> optax.GradientTransformation:
    """AdamW without the learning rate (applied per step): decay on matrices only, like torch's."""

    def matrices(params: Any) -> Any:
        return jax.tree.map(lambda p: p.ndim >= 2, params)

    return optax.chain(
        optax.scale_by_adam(b1=train.beta1, b2=train.beta2, eps=_ADAM_EPS),
        optax.add_decayed_weights(train.weight_decay, mask=matrices),
    )


def init_state(params: Any, optimizer: optax.GradientTransformation, policy: Policy) -> State:
    """The training state at step 0."""
    return {
        "params": params,
        "opt_state": optimizer.init(params),
        "loss_scale": policy.initial_loss_scale(),
        "step": jnp.int32(0),
        "num_skipped_steps": jnp.int32(0),
    }


def lm_loss(graphdef: nnx.GraphDef[Any], params: Any, batch: Batch) -> jax.Array:
    """Mean next-token cross-entropy over labelled positions, from fp32 logits."""
    model = nnx.merge(graphdef, params)
    logits = model(batch["input_ids"]).astype(jnp.float32)
    labels = batch["labels"]
    valid = labels != _IGNORE_INDEX
    losses = optax.softmax_cross_entropy_with_integer_labels(logits, jnp.where(valid, labels, 0))
    return jnp.sum(jnp.where(valid, losses, 0.0)) / jnp.maximum(jnp.sum(valid), 1)


def _accumulate(graphdef: Any, params: Any, batch: Batch, scale: jax.Array) -> tuple[Any, Any]:
    """Summed gradients of loss * scale / num_micro over the [num_micro, ...] batch, and the
    unscaled mean loss; the gradients are still scaled."""
    num_micro = batch["input_ids"].shape[0]

    def scaled_loss(p: Any, micro: Batch) -> jax.Array:
        return lm_loss(graphdef, p, micro) * scale / num_micro

    def body(total: Any, micro: Batch) -> tuple[Any, jax.Array]:
        loss, grads = jax.value_and_grad(scaled_loss)(params, micro)
        return jax.tree.map(jnp.add, total, grads), loss

    zeros = jax.tree.map(jnp.zeros_like, params)
    grads, losses = jax.lax.scan(body, zeros, batch)
    return grads, jnp.sum(losses) / scale


def _train_step(
    state: State,
    batch: Batch | None,
    lr: jax.Array,
    *,
    graphdef: Any,
    optimizer: optax.GradientTransformation,
    policy: Policy,
    grad_clip: float,
    make_batch: Callable[[jax.Array], Batch] | None,
    batch_sharding: jax.sharding.Sharding | None,
) -> tuple[State, dict[str, jax.Array]]:
    if batch is None:  # made on the device from the step number: no host work, no copy
        assert make_batch is not None
        batch = make_batch(state["step"])
        if batch_sharding is not None:  # each device makes only its own samples
            batch = jax.lax.with_sharding_constraint(batch, batch_sharding)
    params, scale = state["params"], state["loss_scale"]["scale"]
    grads, loss = _accumulate(graphdef, params, batch, scale)
    if policy.uses_loss_scaling:
        grads = jax.tree.map(lambda g: g / scale, grads)
    norm = jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in jax.tree.leaves(grads)))
    if grad_clip > 0:
        coef = jnp.minimum(1.0, grad_clip / (norm + _CLIP_EPS))
        grads = jax.tree.map(lambda g: g * coef, grads)
    updates, opt_state = optimizer.update(grads, state["opt_state"], params)
    stepped = jax.tree.map(lambda p, u: p - lr * u, params, updates)
    new_state = {**state, "params": stepped, "opt_state": opt_state, "step": state["step"] + 1}
    metrics = {"loss": loss, "grad_norm": norm}
    if not policy.uses_loss_scaling:
        # No step can be skipped: a NaN/inf loss stops the run at the next sync point (as torch
        # does), so no finiteness pass over the gradients and no select over the whole state.
        return new_state, metrics

    # An overflowing fp16 step leaves weights and optimizer state untouched.
    finite = all_finite(grads) & jnp.isfinite(loss)

    def unless_overflow(new: Any, old: Any) -> Any:
        return jax.tree.map(lambda a, b: jnp.where(finite, a, b), new, old)

    new_state["params"] = unless_overflow(stepped, params)
    new_state["opt_state"] = unless_overflow(opt_state, state["opt_state"])
    new_state["loss_scale"] = next_loss_scale(policy, state["loss_scale"], finite)
    new_state["num_skipped_steps"] = state["num_skipped_steps"] + jnp.where(finite, 0, 1)
    return new_state, {**metrics, "skipped": ~finite, "loss_scale": scale}


def make_train_step(
    graphdef: Any,
    optimizer: optax.GradientTransformation,
    policy: Policy,
    *,
    grad_clip: float,
    replicated: jax.sharding.Sharding | None = None,
    make_batch: Callable[[jax.Array], Batch] | None = None,
    batch_sharding: jax.sharding.Sharding | None = None,
) -> jax.stages.Wrapped:
    """The jitted step(state, batch, lr) -> (state, metrics); the old state's buffers are donated.

    With `make_batch`, pass batch=None: the step makes its batch from state["step"] on the device.
    The metrics are loss and grad_norm, plus skipped and loss_scale under loss scaling."""
    step = partial(
        _train_step,
        graphdef=graphdef,
        optimizer=optimizer,
        policy=policy,
        grad_clip=grad_clip,
        make_batch=make_batch,
        batch_sharding=batch_sharding,
    )
    if replicated is None:
        return jax.jit(step, donate_argnums=0)
    return jax.jit(step, donate_argnums=0, out_shardings=replicated)
