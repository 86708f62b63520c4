"""`rocmkit.jaxtrain.train`: learning, precision, accumulation, fp16 skips, exact resume, results."""

from __future__ import annotations

import json

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("optax")
pytest.importorskip("orbax.checkpoint")

import jax.numpy as jnp  # noqa: E402
from jax_helpers import small_config  # noqa: E402

from rocmkit.errors import UserError  # noqa: E402
from rocmkit.jaxtrain import train  # noqa: E402
from rocmkit.jaxtrain.loop import device_batch, setup  # noqa: E402
from rocmkit.platform import detect  # noqa: E402
from rocmkit.results import load_result  # noqa: E402


def _params(session):
    return [np.asarray(x) for x in jax.tree.leaves(session.state["params"])]


def test_loss_decreases_and_result_json_matches_the_torch_format(tmp_path):
    result = train(small_config(tmp_path / "run", train__steps=12, precision__dtype="bf16"))
    assert result.steps_done == 12
    assert np.mean(result.losses[-3:]) < result.losses[0] - 0.3
    saved = load_result(tmp_path / "run")
    rows = {m.metric: m for m in saved.measurements}
    assert {"tokens_per_s", "mfu", "peak_memory", "final_loss", "skipped_steps"} <= set(rows)
    assert rows["tokens_per_s"].name == "gpt-tiny bf16 jax"
    assert rows["tokens_per_s"].params["backend"] == "jax"
    assert rows["tokens_per_s"].value > 0
    assert rows["mfu"].value is None  # a CPU has no peak in the hardware facts
    assert saved.config["backend"] == "jax"
    assert saved.environment["jax"]["platform"] == "cpu"
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == list(range(1, 13))


def test_bf16_and_fp16_stay_close_to_fp32(tmp_path):
    losses = {
        dtype: train(small_config(tmp_path / dtype, train__steps=8, precision__dtype=dtype)).losses
        for dtype in ("fp32", "bf16", "fp16")
    }
    for dtype in ("bf16", "fp16"):
        np.testing.assert_allclose(losses[dtype], losses["fp32"], rtol=0.02)
    assert losses["bf16"] != losses["fp32"]  # it really computed in 16 bits


def test_gradient_accumulation_equals_the_larger_micro_batch(tmp_path):
    one = train(small_config(tmp_path / "a", train__steps=4, train__micro_batch=8))
    accumulated = train(
        small_config(tmp_path / "b", train__steps=4, train__micro_batch=4, train__grad_accum=2)
    )
    np.testing.assert_allclose(accumulated.losses, one.losses, rtol=1e-5)


def test_resume_continues_exactly(tmp_path):
    straight = small_config(tmp_path / "straight", train__steps=6, precision__dtype="fp16")
    full = train(straight)
    first = train(small_config(tmp_path / "split", train__steps=6, train__stop_at_step=3, precision__dtype="fp16"))
    assert first.checkpoint is not None and first.checkpoint.name == "3"
    second = train(
        small_config(
            tmp_path / "split", train__steps=6, checkpoint__resume="auto", precision__dtype="fp16"
        )
    )
    assert first.losses + second.losses == full.losses  # bit-identical, not just close
    a = setup(small_config(tmp_path / "straight", train__steps=6, precision__dtype="fp16", checkpoint__resume="auto"), detect())
    b = setup(small_config(tmp_path / "split", train__steps=6, precision__dtype="fp16", checkpoint__resume="auto"), detect())
    assert a.step == b.step == 6
    for x, y in zip(_params(a), _params(b), strict=True):
        np.testing.assert_array_equal(x, y)
    a.checkpoints.close()
    b.checkpoints.close()


def test_fp16_overflow_skips_the_step_counts_it_and_backs_off(tmp_path):
    # A scale of 2^40 overflows fp16 gradients: the step must leave the weights as they were.
    config = small_config(
        tmp_path / "run", train__steps=3, precision__dtype="fp16", precision__loss_scale_init=2**40
    )
    session = setup(config, detect())
    before = _params(session)
    state, metrics = session.step_fn(session.state, device_batch(session, 0), jnp.float32(1e-3))
    assert bool(metrics["skipped"])
    for x, y in zip(before, [np.asarray(p) for p in jax.tree.leaves(state["params"])], strict=True):
        np.testing.assert_array_equal(x, y)
    assert float(state["loss_scale"]["scale"]) == 2.0**39
    assert int(state["num_skipped_steps"]) == 1
    session.checkpoints.close()
    result = train(config)
    assert result.num_skipped_steps == 3
    assert load_result(tmp_path / "run").select(metric="skipped_steps")[0].value == 3.0


def test_fp16_loss_scale_grows_after_clean_steps(tmp_path):
    config = small_config(
        tmp_path / "run",
        train__steps=4,
        precision__dtype="fp16",
        precision__loss_scale_init=1024,
        precision__loss_scale_growth_interval=2,
    )
    seen = []
    train(config, callbacks=[lambda m: seen.append(m.loss_scale)])
    assert seen == [1024.0, 1024.0, 2048.0, 2048.0]


def test_settings_the_jax_backend_cannot_honour_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="fsdp|data parallel"):
        train(small_config(tmp_path / "a", parallel__mode="fsdp"))
    with pytest.raises(UserError, match="dropout"):
        train(small_config(tmp_path / "b", model__dropout=0.1))
    with pytest.raises(UserError, match="GPT"):
        from rocmkit.train import load_train_config

        train(load_train_config(preset="resnet18", overrides={"logging.run_dir": str(tmp_path)}))
