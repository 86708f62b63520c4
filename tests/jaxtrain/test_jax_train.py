"""`rocmkit.jaxtrain.train`: learning, precision, accumulation, refusals, result.json."""

from __future__ import annotations

import json

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("optax")
pytest.importorskip("orbax.checkpoint")

from jax_helpers import small_config  # noqa: E402

from rocmkit.errors import UserError  # noqa: E402
from rocmkit.jaxtrain import train  # noqa: E402


@pytest.mark.slow
def test_loss_decreases_and_result_json_matches_the_torch_format(tmp_path):
    result = train(
        small_config(
            tmp_path / "run", train__steps=12, precision__dtype="bf16", logging__log_every=1
        )
    )
    assert result.steps_done == 12
    assert np.mean(result.losses[-3:]) < result.losses[0] - 0.3
    saved = result.run
    assert saved is not None and not (tmp_path / "run" / "result.json").exists()
    rows = {m.metric: m for m in saved.measurements}
    assert {"tokens_per_s", "mfu", "peak_memory", "final_loss", "skipped_steps"} <= set(rows)
    assert rows["tokens_per_s"].name == "gpt-tiny bf16 jax"
    assert rows["tokens_per_s"].params["backend"] == "jax"
    assert rows["tokens_per_s"].value > 0
    if jax.default_backend() == "cpu":
        assert rows["mfu"].value is None  # a CPU has no peak in the hardware facts
    else:  # a GPU's bf16 peak is known: a tiny model uses a sliver of it, but not none
        assert 0 < rows["mfu"].value < 100
    assert saved.config["backend"] == "jax"
    assert saved.environment["jax"]["platform"] == jax.default_backend()
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == list(range(1, 13))


@pytest.mark.slow
def test_bf16_and_fp16_stay_close_to_fp32(tmp_path):
    losses = {
        dtype: train(small_config(tmp_path / dtype, train__steps=8, precision__dtype=dtype)).losses
        for dtype in ("fp32", "bf16", "fp16")
    }
    for dtype in ("bf16", "fp16"):
        np.testing.assert_allclose(losses[dtype], losses["fp32"], rtol=0.02)
    assert losses["bf16"] != losses["fp32"]  # it really computed in 16 bits


@pytest.mark.slow
def test_gradient_accumulation_equals_the_larger_micro_batch(tmp_path):
    one = train(small_config(tmp_path / "a", train__steps=4, train__micro_batch=8))
    accumulated = train(
        small_config(tmp_path / "b", train__steps=4, train__micro_batch=4, train__grad_accum=2)
    )
    np.testing.assert_allclose(accumulated.losses, one.losses, rtol=1e-5)


def test_settings_the_jax_backend_cannot_honour_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="data parallel only"):
        train(small_config(tmp_path / "a", parallel__mode="fsdp"))
    with pytest.raises(UserError, match="dropout"):
        train(small_config(tmp_path / "b", model__dropout=0.1))
    with pytest.raises(UserError, match="GPT"):
        from rocmkit.train import load_train_config

        train(load_train_config(preset="resnet18", overrides={"logging.run_dir": str(tmp_path)}))


def test_a_missing_jax_extra_says_how_to_install_it(tmp_path, monkeypatch):
    from rocmkit.errors import MissingExtraError

    monkeypatch.setitem(__import__("sys").modules, "orbax.checkpoint", None)
    with pytest.raises(MissingExtraError, match=r"rocmkit\[jax\]"):
        train(small_config(tmp_path / "run"))


@pytest.mark.slow
def test_strict_fp32_runs_the_step_in_full_fp32_matmuls(tmp_path):
    """precision.strict_fp32 reaches XLA (default: TF32 on GPUs) while the step runs, and only then."""
    seen: list[str | None] = []

    def record(_metrics) -> None:
        seen.append(jax.config.jax_default_matmul_precision)

    train(
        small_config(tmp_path / "strict", train__steps=2, precision__strict_fp32="true"),
        callbacks=[record],
    )
    train(small_config(tmp_path / "default", train__steps=2), callbacks=[record])
    assert seen == ["highest", "highest", None, None]
    assert jax.config.jax_default_matmul_precision is None  # restored after the run
