"""Mixed precision on the GPU: the fp16 loss scaler skips and counts overflowing steps, bf16 learns."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from gpu_helpers import tiny_gpt

from rocmkit.train import StepMetrics, load_train_config, train

pytestmark = pytest.mark.gpu


def _train(run_dir: Path, callbacks=(), **overrides: object):
    config = load_train_config(preset="gpt-tiny", overrides=tiny_gpt(run_dir, **overrides))
    return train(config, callbacks=callbacks)


def test_fp16_loss_scale_backs_off_on_overflow_grows_back_and_counts_skips(run_dir: Path):
    # 2**30 times a logit gradient of ~1e-2 is far above fp16's 65504: the first steps overflow
    # until the scale has halved enough; then every 2 clean steps double it again.
    init_scale = 2.0**30
    seen: list[StepMetrics] = []
    result = _train(
        run_dir,
        callbacks=[seen.append],
        **{
            "train.steps": 30,
            "precision.dtype": "fp16",
            "precision.loss_scale_init": init_scale,
            "precision.loss_scale_growth_interval": 2,
            "precision.max_consecutive_skips": 30,
        },
    )
    assert [m.step for m in seen] == list(range(1, 31))
    skipped = [m.skipped for m in seen]
    assert skipped[0], "a 2**30 loss scale must overflow fp16 gradients on the first step"
    assert 1 <= result.num_skipped_steps == sum(skipped) < 25, skipped
    scales = [init_scale] + [m.loss_scale for m in seen]
    assert all(s is not None for s in scales)
    for before, after, step in zip(scales, scales[1:], seen, strict=False):
        if step.skipped:
            assert after == before / 2, f"step {step.step}: scale {before} -> {after}"
    grew = [m.step for m, a, b in zip(seen, scales, scales[1:], strict=False) if b > a]
    assert grew, f"the scale never grew back after clean steps: {scales}"
    assert all(math.isfinite(loss) for loss in result.losses)
    clean = [m.loss for m in seen if not m.skipped]
    assert min(clean[-5:]) < clean[0] - 0.3, result.losses  # the applied steps learned


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_autocast_training_on_the_gpu_learns_like_fp32(tmp_path: Path, dtype: str):
    steps = {"train.steps": 20}
    seen: list[StepMetrics] = []
    reference = _train(tmp_path / "fp32", **steps)
    mixed = _train(tmp_path / dtype, callbacks=[seen.append], **steps, **{"precision.dtype": dtype})
    # Same weights and data: the first loss differs only by rounding (bf16 keeps 8 mantissa bits).
    assert mixed.losses[0] == pytest.approx(reference.losses[0], rel=2e-2)
    assert sum(mixed.losses[-5:]) / 5 < mixed.losses[0] - 0.5, mixed.losses
    assert mixed.num_skipped_steps == 0  # the default fp16 scale does not overflow this model
    if dtype == "bf16":
        assert all(m.loss_scale is None for m in seen)  # bf16 needs no loss scaling
    else:
        assert all(m.loss_scale is not None and m.loss_scale >= 2.0**16 for m in seen)
