"""The JAX backend data parallel over two (forced) CPU devices."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("optax")
pytest.importorskip("orbax.checkpoint")


DATA_PARALLEL = """
import json, sys
from rocmkit.jaxtrain import train
from rocmkit.train import load_train_config
run_dir, mode, micro = sys.argv[1:4]
overrides = {"model.seq_len": "32", "train.steps": "4", "train.micro_batch": micro,
             "parallel.mode": mode, "logging.run_dir": run_dir}
result = train(load_train_config(preset="gpt-tiny", overrides=overrides))
rows = result.run.select(metric="tokens_per_s")
print(json.dumps({"losses": result.losses, "world_size": rows[0].params["world_size"]}))
"""


def _in_two_cpu_devices(tmp_path, mode, micro):
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    env["JAX_PLATFORMS"] = "cpu"
    out = subprocess.run(
        [sys.executable, "-c", DATA_PARALLEL, str(tmp_path / mode), mode, str(micro)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_data_parallel_over_two_devices_matches_one_device_with_the_same_samples(tmp_path):
    # Two devices x micro-batch 4 see the same 8 samples per step as one device x 8.
    parallel = _in_two_cpu_devices(tmp_path, "ddp", 4)
    single = _in_two_cpu_devices(tmp_path, "none", 8)
    assert parallel["world_size"] == 2
    assert single["world_size"] == 1
    np.testing.assert_allclose(parallel["losses"], single["losses"], rtol=1e-5)
