"""The JAX loop never waits for the device between sync points, and its batches come from the device.

Synthetic batches are made inside the compiled step and must be the very tokens torch's
SyntheticTokens serves; the steps' scalars are read only at sync points (the first step, log steps,
checkpoints, the last step), where the NaN/inf check runs too.
"""

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

from rocmkit.jaxtrain import loop  # noqa: E402
from rocmkit.jaxtrain.data import DeviceTokens  # noqa: E402
from rocmkit.jaxtrain.loop import train  # noqa: E402
from rocmkit.train.data import SyntheticTokens  # noqa: E402
from rocmkit.train.failures import NonFiniteLossError  # noqa: E402


@pytest.mark.parametrize("seed", [0, 2**33 + 5])
def test_device_batches_are_the_torch_batches_past_2_to_the_32_samples(seed):
    source = SyntheticTokens(vocab_size=2048, seq_len=16, seed=seed)
    make = jax.jit(DeviceTokens(source, micro_batch_size=6, grad_accum=3))
    # The last step numbers put the samples past 2**32: the 64-bit numbering must carry.
    for step in (0, 7, 300_000_000, 2**31 - 1):
        made = make(jnp.int32(step))
        for micro in range(3):
            expected = source.get_batch(
                step=step, micro_step=micro, micro_batch_size=6, grad_accum=3, rank=0, world_size=1
            )
            for key in ("input_ids", "labels"):
                np.testing.assert_array_equal(np.asarray(made[key][micro]), expected[key].numpy())


def _counting_reads(monkeypatch):
    reads = []
    real = loop.read_device

    def counted(values):
        reads.append(len(values) if isinstance(values, list) else 1)
        return real(values)

    monkeypatch.setattr(loop, "read_device", counted)
    return reads


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_step_scalars_are_read_only_at_sync_points(tmp_path, monkeypatch, dtype):
    reads = _counting_reads(monkeypatch)
    config = small_config(
        tmp_path / "run",
        train__steps=10,
        logging__log_every=4,
        precision__dtype=dtype,
        checkpoint__save_final="false",
    )
    # Any implicit read (int(), float(), bool() of a device array) between sync points fails.
    with jax.transfer_guard_device_to_host("disallow"):
        result = train(config, handle_signals=False)
    # Sync points: step 1 (first), 4 and 8 (log), 10 (last); then the skipped-step count.
    assert reads == [1, 3, 4, 2, 1]
    assert len(result.losses) == 10 and all(np.isfinite(result.losses))
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [4, 8, 10]


@pytest.mark.slow
def test_a_nan_loss_found_at_a_sync_point_names_its_step_and_saves_nothing(tmp_path):
    # lr 1e6 blows bf16 training up within a few steps; no step is skipped without loss scaling,
    # so the run stops at the next read with the first bad step's number, before any checkpoint.
    config = small_config(
        tmp_path / "run",
        train__steps=12,
        train__lr=1e6,
        train__warmup=1,
        train__grad_clip=0,
        logging__log_every=6,
        checkpoint__every=6,
        precision__dtype="bf16",
    )
    seen = []
    with pytest.raises(NonFiniteLossError, match=r"at step (\d+)") as raised:
        train(config, callbacks=[lambda m: seen.append(m.step)], handle_signals=False)
    bad_step = int(raised.value.args[0].split("at step ")[1].split(":")[0])
    assert bad_step <= 6 and set(seen) <= set(range(1, bad_step))
    assert not (tmp_path / "run" / "checkpoints" / "jax" / "6").exists()
