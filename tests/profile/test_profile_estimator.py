"""The memory estimator: ZeRO accounting, activations, and agreement with MemTracker on CPU."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from profile_tinygpt import TinyGPT
from torch.utils.checkpoint import checkpoint

from rocmkit.errors import UserError
from rocmkit.measure.memory import measure_step_memory
from rocmkit.profile.estimator import (
    EstimateConfig,
    ModelShape,
    block_activation_bytes,
    chart_configs,
    estimate,
)

GPT2 = ModelShape(n_layer=12, d_model=768, n_head=12, seq_len=1024, vocab_size=50304)
SMALL = ModelShape(n_layer=2, d_model=128, n_head=4, seq_len=256, vocab_size=1024)

# Stated tolerance of the estimate against MemTracker on CPU (docs/profile.md has the table).
ACTIVATION_TOLERANCE = 0.10
PEAK_TOLERANCE = 0.12


@pytest.mark.parametrize("bias", [False, True])
def test_parameter_count_matches_a_real_model(bias):
    shape = replace(SMALL, bias=bias)
    model = TinyGPT(shape)
    assert shape.num_params == sum(p.numel() for p in model.parameters())


def test_gpt2_124m_has_the_published_parameter_count():
    # GPT-2 small: 124M parameters with a 50257 vocabulary (nanoGPT pads it to 50304).
    assert abs(replace(GPT2, vocab_size=50257, bias=True).num_params - 124_439_808) == 0


def test_zero_stages_shard_what_the_zero_paper_says():
    base = EstimateConfig(shape=GPT2, precision="bf16", master_weights=True, micro_batch=1)
    ddp = estimate(replace(base, sharding="ddp", world_size=8))
    zero1 = estimate(replace(base, sharding="zero1", world_size=8))
    zero2 = estimate(replace(base, sharding="zero2", world_size=8))
    zero3 = estimate(replace(base, sharding="zero3", world_size=8))
    n = GPT2.num_params
    # Mixed precision Adam: 2 + 2 + 12 bytes per parameter (ZeRO paper, section 3.1).
    assert (ddp.parameters_bytes, ddp.gradients_bytes, ddp.optimizer_bytes) == (
        2 * n,
        2 * n,
        12 * n,
    )
    assert zero1.optimizer_bytes == -(-12 * n // 8) and zero1.gradients_bytes == 2 * n
    assert zero2.gradients_bytes == -(-2 * n // 8) and zero2.parameters_bytes == 2 * n
    assert zero3.parameters_bytes < ddp.parameters_bytes / 4
    assert ddp.total_bytes > zero1.total_bytes > zero2.total_bytes > zero3.total_bytes
    assert ddp.activations_bytes == zero3.activations_bytes  # data parallelism keeps the batch


def test_autocast_keeps_fp32_parameters_and_shrinks_block_activations():
    fp32 = EstimateConfig(shape=GPT2, precision="fp32", micro_batch=8)
    bf16 = replace(fp32, precision="bf16")
    assert estimate(fp32).parameters_bytes == estimate(bf16).parameters_bytes == 4 * GPT2.num_params
    # The residual stream stays fp32 under autocast: 36 instead of 64 bytes per s*b*h.
    ratio = block_activation_bytes(bf16) / block_activation_bytes(fp32)
    assert ratio == pytest.approx(36 / 64, rel=0.01)


def test_activation_checkpointing_shrinks_activations_of_deep_models():
    plain = estimate(EstimateConfig(shape=GPT2, precision="bf16", micro_batch=8))
    ckpt = estimate(replace(plain.config, activation_checkpointing=True))
    # Only block inputs stay: all but about one block's saved tensors are freed.
    block = block_activation_bytes(plain.config)
    assert ckpt.activations_bytes < plain.activations_bytes - (GPT2.n_layer - 2) * block
    assert ckpt.parameters_bytes == plain.parameters_bytes


def test_int8_inference_stores_one_byte_per_weight_and_no_training_state():
    infer = estimate(EstimateConfig(shape=GPT2, precision="int8", mode="infer"))
    assert infer.parameters_bytes == GPT2.num_params
    assert infer.gradients_bytes == infer.optimizer_bytes == 0


def test_chart_has_the_guides_five_bars():
    labels = [estimate(c).label for c in chart_configs(EstimateConfig(shape=GPT2), world_size=8)]
    assert labels == ["fp32", "fp16", "bf16", "int8 infer", "bf16 zero3 x8"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"world_size": 0, "sharding": "ddp"},
        {"world_size": 4, "sharding": "none"},
        {"precision": "int8"},
        {"precision": "fp64"},
        {"micro_batch": 0},
        {"master_weights": True, "precision": "fp32"},
    ],
)
def test_bad_settings_are_user_errors(kwargs):
    with pytest.raises(UserError):
        EstimateConfig(shape=SMALL, **kwargs)


def test_bad_shape_is_a_user_error():
    with pytest.raises(UserError, match="divisible"):
        replace(SMALL, n_head=3)


def _measure(shape: ModelShape, *, precision: str, checkpointing: bool, micro_batch: int):
    torch.manual_seed(0)
    model = TinyGPT(shape)
    if checkpointing:
        for block in model.blocks:
            forward = block.forward
            block.forward = lambda x, f=forward: checkpoint(f, x, use_reentrant=False)
    optimizer = torch.optim.AdamW(model.parameters(), foreach=True)  # as rocmkit.train on CPU
    idx = torch.randint(0, shape.vocab_size, (micro_batch, shape.seq_len))
    targets = torch.randint(0, shape.vocab_size, (micro_batch, shape.seq_len))

    def step() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision != "fp32"):
            loss = model.loss(idx, targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return measure_step_memory(step, modules=[model], optimizer=optimizer)


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("checkpointing", [False, True])
def test_estimate_agrees_with_memtracker_on_cpu(precision, checkpointing):
    config = EstimateConfig(
        shape=SMALL, precision=precision, micro_batch=4, activation_checkpointing=checkpointing
    )
    predicted = estimate(config)
    measured = _measure(SMALL, precision=precision, checkpointing=checkpointing, micro_batch=4)
    assert measured.after_step_bytes["parameters"] == predicted.parameters_bytes
    assert measured.peak_bytes["gradients"] == predicted.gradients_bytes
    # MemTracker counts AdamW's `step` counters too (a few bytes per tensor).
    assert measured.after_step_bytes["optimizer"] == pytest.approx(
        predicted.optimizer_bytes, rel=1e-3
    )
    assert measured.peak_bytes["activations"] == pytest.approx(
        predicted.activations_bytes, rel=ACTIVATION_TOLERANCE
    )
    assert measured.total_peak_bytes == pytest.approx(predicted.peak_bytes, rel=PEAK_TOLERANCE)
