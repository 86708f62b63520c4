"""The JAX GPT has the torch GPT's shape: same parameter count, same FLOPs per token."""

from __future__ import annotations

import pytest

jax = pytest.importorskip("jax")
nnx = pytest.importorskip("flax.nnx")

import jax.numpy as jnp  # noqa: E402

from rocmkit.jaxtrain.model import GPT, count_params  # noqa: E402
from rocmkit.jaxtrain.step import lm_loss  # noqa: E402
from rocmkit.train.models import ModelConfig  # noqa: E402
from rocmkit.train.models.gpt import build_gpt, gpt_flops_per_token  # noqa: E402

SHAPES = [
    {"vocab_size": 256, "seq_len": 64, "n_layer": 2, "n_head": 2, "d_model": 64},
    {"vocab_size": 300, "seq_len": 16, "n_layer": 3, "n_head": 4, "d_model": 32, "bias": True},
    {
        "vocab_size": 128,
        "seq_len": 16,
        "n_layer": 1,
        "n_head": 1,
        "d_model": 32,
        "tie_weights": False,
    },
]


@pytest.mark.slow
@pytest.mark.parametrize("shape", SHAPES)
def test_same_parameter_count_and_flops_as_the_torch_gpt(shape):
    config = ModelConfig(**shape)
    torch_model = build_gpt(config)
    jax_params = count_params(GPT(config, rngs=nnx.Rngs(0)))
    assert jax_params == torch_model.num_params
    jax_flops = gpt_flops_per_token(config, jax_params) * config.seq_len
    assert jax_flops == torch_model.flops_per_sample


@pytest.mark.slow
def test_xla_counts_about_the_formula_flops_for_a_training_pass():
    # XLA's own count of the compiled forward + backward: the matmuls the formula counts plus
    # norms, softmax and GELU, which add a few percent at this width.
    config = ModelConfig(vocab_size=1024, seq_len=128, n_layer=2, n_head=4, d_model=256)
    model = GPT(config, rngs=nnx.Rngs(0))
    graphdef, params = nnx.split(model)
    tokens = jnp.zeros((2, config.seq_len), jnp.int32)
    batch = {"input_ids": tokens, "labels": tokens}
    grad = jax.jit(jax.grad(lambda p, b: lm_loss(graphdef, p, b)))
    cost = grad.lower(params, batch).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    formula = gpt_flops_per_token(config, count_params(model)) * config.seq_len * 2
    assert 1.0 <= cost["flops"] / formula < 1.05


@pytest.mark.slow
def test_mixed_precision_keeps_fp32_master_weights_and_computes_in_16_bit():
    config = ModelConfig(**SHAPES[0])
    model = GPT(config, dtype=jnp.bfloat16, rngs=nnx.Rngs(0))
    dtypes = {leaf.dtype for leaf in jax.tree.leaves(nnx.state(model, nnx.Param))}
    assert dtypes == {jnp.dtype(jnp.float32)}
    logits = model(jnp.zeros((1, 8), jnp.int32))
    assert logits.dtype == jnp.bfloat16
    assert logits.shape == (1, 8, config.vocab_size)


@pytest.mark.slow
def test_causal_attention_ignores_future_tokens():
    config = ModelConfig(**SHAPES[1])
    model = GPT(config, rngs=nnx.Rngs(1))
    first = jnp.array([[1, 2, 3, 4, 5, 6]], jnp.int32)
    changed_tail = first.at[0, 4:].set(7)
    out_a, out_b = model(first), model(changed_tail)
    assert jnp.allclose(out_a[:, :4], out_b[:, :4], atol=1e-6)
    assert not jnp.allclose(out_a[:, 4:], out_b[:, 4:], atol=1e-3)


@pytest.mark.slow
def test_activation_checkpointing_recomputes_the_same_gradients():
    config = ModelConfig(**SHAPES[1])
    tokens = jnp.arange(32, dtype=jnp.int32).reshape(2, 16) % config.vocab_size
    batch = {"input_ids": tokens, "labels": (tokens + 1) % config.vocab_size}
    grads = []
    for remat in (False, True):
        graphdef, params = nnx.split(GPT(config, remat=remat, rngs=nnx.Rngs(3)))
        grads.append(jax.grad(lambda p, g=graphdef: lm_loss(g, p, batch))(params))
    for plain, recomputed in zip(jax.tree.leaves(grads[0]), jax.tree.leaves(grads[1]), strict=True):
        assert jnp.allclose(plain, recomputed, atol=1e-6)


def test_a_precision_registered_for_pytorch_only_is_a_user_error():
    from rocmkit.errors import UserError
    from rocmkit.jaxtrain.precision import build_policy
    from rocmkit.train import config as train_config

    train_config.register_precision("fp32-torch-only", "fp32", peak_dtype="fp32")
    try:
        with pytest.raises(UserError, match=r"PyTorch backend only.*fp32, bf16, fp16"):
            build_policy(train_config.PrecisionConfig(dtype="fp32-torch-only"))
    finally:
        train_config._PRECISIONS.pop("fp32-torch-only")
