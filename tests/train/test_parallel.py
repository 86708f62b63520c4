"""DDP and FSDP2 with 2 gloo processes under torchrun equal one process with the same global
batch; a checkpoint saved by 2 FSDP ranks resumes in 1 process (resharding)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from loop_helpers import as_flags, checkpoint_weights, run_cli, tiny_overrides

from rocmkit.train import load_train_config, train

pytestmark = [pytest.mark.multiproc, pytest.mark.slow]

STEPS, STOP = 6, 3
GLOBAL_BATCH = 8


def _losses(run_dir: Path) -> dict[int, float]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return {r["step"]: r["loss"] for r in map(json.loads, lines)}


def _max_abs_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max((a[k].float() - b[k].float()).abs().max().item() for k in a)


@pytest.fixture(scope="module")
def single(tmp_path_factory) -> Path:
    """The reference: one process, micro-batch 8, run to STOP and separately to STEPS."""
    root = tmp_path_factory.mktemp("single")
    for name, extra in (("stop", {"train.stop_at_step": STOP}), ("full", {})):
        overrides = tiny_overrides(
            root / name,
            **{"train.steps": STEPS, "train.micro_batch": GLOBAL_BATCH, "checkpoint.keep": 5},
            **extra,
        )
        train(load_train_config(preset="gpt-tiny", overrides=overrides))
    return root


def _torchrun(run_dir: Path, mode: str, micro_batch: int) -> None:
    overrides = tiny_overrides(
        run_dir,
        **{"train.steps": STEPS, "train.stop_at_step": STOP, "train.micro_batch": micro_batch},
    )
    proc = run_cli(
        "train", "--preset", "gpt-tiny", "--parallel", mode,
        "--train.global_batch", str(GLOBAL_BATCH), *as_flags(overrides),
        nproc=2,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "step 3/6" in proc.stdout and "step 3/6" not in proc.stderr


# DDP: 2 ranks x micro-batch 4; FSDP2: 2 ranks x micro-batch 2 x accumulation 2 (no reduce on
# the first micro-step). Both see exactly the single process's 8 samples per step.
@pytest.mark.parametrize(("mode", "micro_batch"), [("ddp", 4), ("fsdp", 2)])
def test_two_ranks_equal_one_process(single: Path, tmp_path: Path, mode: str, micro_batch: int):
    run_dir = tmp_path / mode
    _torchrun(run_dir, mode, micro_batch)
    reference = _losses(single / "stop")
    ranks = _losses(run_dir)
    assert ranks.keys() == reference.keys() == {1, 2, 3}
    loss_diff = max(abs(ranks[s] - reference[s]) for s in reference)
    weight_diff = _max_abs_diff(
        checkpoint_weights(run_dir / "checkpoints"),
        checkpoint_weights(single / "stop" / "checkpoints"),
    )
    print(f"{mode}: max abs loss diff {loss_diff:.2e}, max abs parameter diff {weight_diff:.2e}")
    assert loss_diff < 1e-5
    assert weight_diff < 1e-5
    meta = json.loads((run_dir / "checkpoints" / "step_00000003" / "meta.json").read_text())
    assert meta["world_size"] == 2
    if mode == "fsdp":
        _resume_in_one_process(run_dir, single)


def _resume_in_one_process(run_dir: Path, single: Path) -> None:
    """Resharding: the 2-rank FSDP2 checkpoint continues in a single plain process."""
    overrides = tiny_overrides(
        run_dir,
        **{"train.steps": STEPS, "train.micro_batch": GLOBAL_BATCH, "checkpoint.resume": "auto"},
    )
    result = train(load_train_config(preset="gpt-tiny", overrides=overrides))
    assert result.steps_done == STEPS and len(result.losses) == STEPS - STOP
    reference = _losses(single / "full")
    assert result.losses == pytest.approx([reference[s] for s in (4, 5, 6)], abs=1e-5)
    diff = _max_abs_diff(
        checkpoint_weights(run_dir / "checkpoints"),
        checkpoint_weights(single / "full" / "checkpoints"),
    )
    assert diff < 1e-5, f"max abs parameter diff after resharded resume {diff:.2e}"
