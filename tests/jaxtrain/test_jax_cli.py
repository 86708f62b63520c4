"""`rocmkit train --backend jax` end to end: the issue's done-when command, with exact resume."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("optax")
pytest.importorskip("orbax.checkpoint")


@pytest.mark.slow
def test_cli_trains_gpt_tiny_bf16_and_resumes(tmp_path):
    run_dir = tmp_path / "run"
    base = [sys.executable, "-m", "rocmkit", "train", "--backend", "jax", "--preset", "gpt-tiny"]
    common = ["--precision", "bf16", "--run-dir", str(run_dir), "--model.seq_len", "32"]
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    first = subprocess.run(
        [*base, *common, "--steps", "6", "--train.stop_at_step", "3"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert first.returncode == 0, first.stderr
    assert "checkpoints/jax/3" in first.stdout
    second = subprocess.run(
        [*base, *common, "--steps", "6", "--resume", "auto"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert second.returncode == 0, second.stderr
    assert "step 6/6" in second.stdout
    steps = [json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").open()]
    assert steps == [3, 6]  # every logging.log_every (10) steps and each run's last step
    # Once more: the run is complete, and every file stays as it was (issue 23).
    before = {p: p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}
    third = subprocess.run(
        [*base, *common, "--steps", "6", "--resume", "auto"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert third.returncode == 0, third.stderr
    assert "already complete (step 6 of 6)" in third.stderr
    assert {p: p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()} == before
