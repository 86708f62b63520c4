"""`rocmkit.jaxtrain`: exact resume from Orbax checkpoints, fp16 loss scaling and skipped steps."""

from __future__ import annotations

import os

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
from rocmkit.jaxtrain.loop import setup, step_input  # noqa: E402
from rocmkit.platform import detect  # noqa: E402

# XLA on a GPU picks each compile's kernels by timing them unless told to stay deterministic;
# tests/gpu/test_gpu_jax.py runs the resume test under this flag and demands bit-identity.
DETERMINISTIC_FLAG = "--xla_gpu_exclude_nondeterministic_ops=true"


def _exact() -> bool:
    """Bit-identical resume is promised on CPU, and on a GPU under DETERMINISTIC_FLAG."""
    return jax.default_backend() == "cpu" or DETERMINISTIC_FLAG in os.environ.get("XLA_FLAGS", "")


def _params(session):
    return [np.asarray(x) for x in jax.tree.leaves(session.state["params"])]


@pytest.mark.slow
def test_resume_continues_exactly(tmp_path):
    straight = small_config(tmp_path / "straight", train__steps=6, precision__dtype="fp16")
    full = train(straight)
    first = train(
        small_config(
            tmp_path / "split", train__steps=6, train__stop_at_step=3, precision__dtype="fp16"
        )
    )
    assert first.checkpoint is not None and first.checkpoint.name == "3"
    second = train(
        small_config(
            tmp_path / "split", train__steps=6, checkpoint__resume="auto", precision__dtype="fp16"
        )
    )
    if _exact():
        assert first.losses + second.losses == full.losses  # bit-identical, not just close
    else:  # XLA autotunes each compile by timing on a GPU (docs/train-jax.md): the last bits move
        np.testing.assert_allclose(first.losses + second.losses, full.losses, rtol=1e-5)
    a = setup(
        small_config(
            tmp_path / "straight",
            train__steps=6,
            precision__dtype="fp16",
            checkpoint__resume="auto",
        ),
        detect(),
    )
    b = setup(
        small_config(
            tmp_path / "split", train__steps=6, precision__dtype="fp16", checkpoint__resume="auto"
        ),
        detect(),
    )
    assert a.step == b.step == 6
    for x, y in zip(_params(a), _params(b), strict=True):
        if _exact():
            np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_allclose(x, y, rtol=1e-3, atol=1e-5)
    a.checkpoints.close()
    b.checkpoints.close()
    other_model = small_config(
        tmp_path / "straight", model__n_layer=1, precision__dtype="fp16", checkpoint__resume="auto"
    )
    with pytest.raises(UserError, match="resume it with the same"):
        setup(other_model, detect())


@pytest.mark.slow
def test_fp16_overflow_skips_the_step_counts_it_and_backs_off(tmp_path):
    # A scale of 2^40 overflows fp16 gradients: the step must leave the weights as they were.
    config = small_config(
        tmp_path / "run", train__steps=3, precision__dtype="fp16", precision__loss_scale_init=2**40
    )
    session = setup(config, detect())
    before = _params(session)
    state, metrics = session.step_fn(session.state, step_input(session, 0), jnp.float32(1e-3))
    assert bool(metrics["skipped"])
    for x, y in zip(before, [np.asarray(p) for p in jax.tree.leaves(state["params"])], strict=True):
        np.testing.assert_array_equal(x, y)
    assert float(state["loss_scale"]["scale"]) == 2.0**39
    assert int(state["num_skipped_steps"]) == 1
    session.checkpoints.close()
    result = train(config)
    assert result.num_skipped_steps == 3
    assert result.run is not None
    assert result.run.select(metric="skipped_steps")[0].value == 3.0


@pytest.mark.slow
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
