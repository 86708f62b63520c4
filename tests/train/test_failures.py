"""Crashes lose nothing: SIGKILL at a random step or mid-save, SIGTERM, then resume exactly."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch
from loop_helpers import as_flags, checkpoint_weights, cli_env, rocmkit_command, tiny_overrides

from rocmkit.train import load_train_config, train

pytestmark = pytest.mark.slow

STEPS = 60
# The preset's own size (about 20 ms a step here) so that a kill lands in the middle of a run.
SETTINGS = {
    "model.seq_len": 64,
    "model.d_model": 64,
    "train.micro_batch": 8,
    "train.steps": STEPS,
    "checkpoint.every": 5,
    "logging.log_every": 1,  # a metrics line per step, to know when to strike
}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("reference")
    train(load_train_config(preset="gpt-tiny", overrides=tiny_overrides(run_dir, **SETTINGS)))
    return run_dir


def _start(run_dir: Path, **env: str) -> subprocess.Popen:
    flags = as_flags(tiny_overrides(run_dir, **SETTINGS, **{"checkpoint.resume": "auto"}))
    return subprocess.Popen(
        rocmkit_command("train", "--preset", "gpt-tiny", *flags, launcher=True),
        env=cli_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_step(run_dir: Path, proc: subprocess.Popen, step: int) -> None:
    log = run_dir / "metrics.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and len(log.read_text().splitlines()) >= step:
            return
        time.sleep(0.002)
    pytest.fail(f"training ended or stalled before step {step}: {proc.communicate()}")


def _last_losses(run_dir: Path) -> dict[int, float]:
    """Loss per step; a step re-run after a resume overwrites the killed attempt's line."""
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return {r["step"]: r["loss"] for r in map(json.loads, lines)}


def _assert_matches(run_dir: Path, reference: Path) -> None:
    assert _last_losses(run_dir) == _last_losses(reference)
    mine = checkpoint_weights(run_dir / "checkpoints")
    theirs = checkpoint_weights(reference / "checkpoints")
    for key in theirs:
        assert torch.equal(mine[key], theirs[key]), key


def _resume(run_dir: Path) -> None:
    overrides = tiny_overrides(run_dir, **SETTINGS, **{"checkpoint.resume": "auto"})
    result = train(load_train_config(preset="gpt-tiny", overrides=overrides))
    assert result.steps_done == STEPS


def test_sigkill_at_a_random_step_then_resume(tmp_path: Path, reference: Path):
    run_dir = tmp_path / "run"
    kill_at = random.Random().randint(3, STEPS - 10)
    proc = _start(run_dir)
    _wait_for_step(run_dir, proc, kill_at)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    _resume(run_dir)
    _assert_matches(run_dir, reference)


def test_sigkill_during_a_checkpoint_save_then_resume(tmp_path: Path, reference: Path):
    run_dir = tmp_path / "run"
    proc = _start(run_dir, ROCMKIT_TEST_KILL_IN_SAVE="2")  # dies publishing step 10
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    checkpoints = run_dir / "checkpoints"
    assert (checkpoints / "latest").read_text().strip() == "step_00000005"
    assert (checkpoints / ".tmp-step_00000010").is_dir()  # written, never published
    _resume(run_dir)
    assert not (checkpoints / ".tmp-step_00000010").exists()
    _assert_matches(run_dir, reference)


@pytest.mark.parametrize(
    ("signum", "exit_code", "outcome"),
    [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")],
    ids=["SIGTERM", "SIGINT"],
)
def test_stop_signal_saves_a_checkpoint_and_exits_128_plus_the_signal(
    tmp_path: Path, reference: Path, signum: signal.Signals, exit_code: int, outcome: str
):
    run_dir = tmp_path / "run"
    proc = _start(run_dir)
    _wait_for_step(run_dir, proc, 7)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == exit_code, err
    stopped_at = max(_last_losses(run_dir))
    assert stopped_at < STEPS
    # The console view says how to continue; the driver's last stderr line says it stopped early.
    assert f"stopped by {signum.name} at step {stopped_at};" in out
    assert f"--out {run_dir} and --resume auto" in out
    partial = f"stopped by {signum.name} at step {stopped_at} of {STEPS}"
    # The first signal says at once where the run will stop (and, for Ctrl-C, how to stop now).
    (notice,) = [line for line in err.splitlines() if line.startswith(f"{signum.name}: stopping")]
    assert f"stopping after step {stopped_at} of {STEPS} and saving a checkpoint, est. " in notice
    assert notice.endswith("without a new checkpoint") == (signum == signal.SIGINT)
    assert err.splitlines()[-1] == f"partial: {partial}; what finished is saved in {run_dir}"
    saved = json.loads((run_dir / "result.json").read_text())
    assert (saved["outcome"], saved["partial"]) == (outcome, partial)
    assert saved["data"]["steps_done"] == stopped_at
    latest = (run_dir / "checkpoints" / "latest").read_text().strip()
    assert latest == f"step_{stopped_at:08d}"  # saved exactly where it stopped
    report = subprocess.run(
        rocmkit_command("report", str(run_dir)), env=cli_env(), capture_output=True, text=True
    )
    assert report.returncode == 0, report.stderr
    assert "partial" in report.stdout and partial in " ".join(report.stdout.split())
    _resume(run_dir)
    _assert_matches(run_dir, reference)
