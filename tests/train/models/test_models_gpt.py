"""The GPT decoder: shapes, causality, tying, parameter count, FLOPs, and that it learns."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

from rocmkit.config import from_dict
from rocmkit.errors import UserError
from rocmkit.train.models import ModelConfig, build_model, model_kinds
from rocmkit.train.models.flops import measure_training_flops
from rocmkit.train.models.gpt import GPT

TINY = ModelConfig(vocab_size=97, seq_len=16, n_layer=2, n_head=2, d_model=32)


def _tokens(config: ModelConfig, batch: int = 2, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, config.vocab_size, (batch, config.seq_len), generator=generator)


def test_forward_gives_logits_per_position():
    built = build_model(TINY)
    logits = built.module(_tokens(TINY, batch=3))
    assert logits.shape == (3, TINY.seq_len, TINY.vocab_size)
    assert built.task == "lm" and built.unit_name == "tokens"
    assert built.units_per_sample == TINY.seq_len
    assert len(built.blocks) == TINY.n_layer


def test_changing_a_future_token_leaves_earlier_logits_unchanged():
    built = build_model(TINY)
    built.module.eval()
    tokens = _tokens(TINY, batch=1)
    changed = tokens.clone()
    changed[0, 10] = (tokens[0, 10] + 1) % TINY.vocab_size
    with torch.no_grad():
        before, after = built.module(tokens), built.module(changed)
    torch.testing.assert_close(before[:, :10], after[:, :10], rtol=0, atol=0)
    assert not torch.allclose(before[:, 10:], after[:, 10:])


def test_tied_head_shares_the_embedding_and_counts_it_once():
    tied = build_model(TINY)
    untied = build_model(dataclasses.replace(TINY, tie_weights=False))
    module = tied.module
    assert isinstance(module, GPT)
    assert module.lm_head.weight is module.token_embedding.weight
    assert untied.num_params - tied.num_params == TINY.vocab_size * TINY.d_model
    tied.loss({"input_ids": _tokens(TINY), "labels": _tokens(TINY, seed=1)}).backward()
    assert module.token_embedding.weight.grad is not None


@pytest.mark.parametrize("bias", [False, True])
def test_parameter_count_matches_the_gpt2_layout(bias):
    config = dataclasses.replace(TINY, bias=bias)
    d, L, V, T = config.d_model, config.n_layer, config.vocab_size, config.seq_len
    per_block = 12 * d * d + 2 * d  # qkv 3d², proj d², MLP 8d², two LayerNorm weights
    if bias:
        per_block += 3 * d + d + 4 * d + d + 2 * d  # qkv, proj, fc, mlp proj, LayerNorm biases
    final_norm = 2 * d if bias else d
    expected = L * per_block + final_norm + V * d + T * d
    assert build_model(config).num_params == expected


@pytest.mark.parametrize("tie_weights", [True, False])
def test_flops_formula_agrees_with_torch_flop_counter(tie_weights):
    config = dataclasses.replace(TINY, tie_weights=tie_weights, vocab_size=512, seq_len=32)
    built = build_model(config)
    measured = measure_training_flops(
        lambda: GPT(config),
        lambda: torch.zeros(1, config.seq_len, dtype=torch.long),
        lambda model, tokens: model(tokens),
    )
    # The formula also charges LayerNorm weights; the counter charges flash attention's
    # recomputation in backward. Both are small.
    assert built.flops_per_sample == pytest.approx(measured, rel=0.05)


def test_init_is_deterministic_under_manual_seed_and_gpt2_scaled():
    torch.manual_seed(3)
    first = build_model(TINY).module.state_dict()
    torch.manual_seed(3)
    second = build_model(TINY).module.state_dict()
    for name, tensor in first.items():
        torch.testing.assert_close(tensor, second[name], rtol=0, atol=0)
    residual_std = first["blocks.0.mlp.proj.weight"].std().item()
    assert residual_std == pytest.approx(0.02 / (2 * TINY.n_layer) ** 0.5, rel=0.2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_loss_falls_when_training_on_one_batch(dtype):
    torch.manual_seed(0)
    built = build_model(TINY)
    batch = {"input_ids": _tokens(TINY), "labels": _tokens(TINY, seed=1)}
    optimizer = torch.optim.AdamW(built.module.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        with torch.autocast("cpu", dtype=dtype, enabled=dtype != torch.float32):
            loss = built.loss(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[0] == pytest.approx(torch.log(torch.tensor(97.0)).item(), rel=0.1)
    assert losses[-1] < 0.5 * losses[0]


def test_checkpoint_wrapped_blocks_give_the_same_output():
    torch.manual_seed(0)
    built = build_model(TINY)
    tokens = _tokens(TINY)
    expected = built.module(tokens)
    for index, block in enumerate(list(built.blocks)):
        built.set_block(index, checkpoint_wrapper(block))
    assert built.block_list is not None
    assert all(type(b).__name__ == "CheckpointWrapper" for b in built.block_list)
    torch.testing.assert_close(built.module(tokens), expected)


def test_sequence_longer_than_context_is_a_user_error():
    built = build_model(TINY)
    with pytest.raises(UserError, match="seq_len"):
        built.module(torch.zeros(1, TINY.seq_len + 1, dtype=torch.long))


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"d_model": 30, "n_head": 4}, "divisible"),
        ({"n_layer": 0}, "n_layer"),
        ({"dropout": 1.0}, "dropout"),
        ({"kind": "hf"}, "model.path"),
        ({"kind": "mamba"}, "kind must be one of"),
    ],
)
def test_invalid_model_settings_fail_at_construction(settings, message):
    with pytest.raises(UserError, match=message):
        from_dict(ModelConfig, settings)


def test_registry_lists_the_three_kinds():
    assert model_kinds() == ["gpt", "hf", "resnet"]
