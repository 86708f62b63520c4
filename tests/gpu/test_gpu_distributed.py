"""NCCL/RCCL with one rank, and DDP / FSDP2 training with world size 1 on the GPU.

None of this ran on a GPU before: on CPU the same code runs on gloo. torch names RCCL "nccl" on
ROCm builds, so the backend asserted here is "nccl" on both vendors.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpu_helpers import as_flags, explain, measurements, run_rocmkit, tiny_gpt

from rocmkit.train import export_checkpoint, load_train_config, train

pytestmark = pytest.mark.gpu

COLLECTIVES = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all"}


@pytest.mark.multiproc
def test_one_rank_nccl_group_runs_every_collective_correctly(tmp_path: Path):
    out = tmp_path / "collectives"
    proc = run_rocmkit(
        "bench", "--suite", "collectives", "--out", str(out), "--no-power",
        "--collectives.sizes_bytes", "4096,1048576", "--collectives.num_iters", "3",
        torchrun_nproc=1, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, explain(proc)
    algbw = [row for row in measurements(out, "collectives") if row["metric"] == "algbw"]
    assert {row["params"]["op"] for row in algbw} == COLLECTIVES
    assert {row["params"]["size_bytes"] for row in algbw} == {4096, 1048576}
    assert {(row["params"]["backend"], row["params"]["world_size"]) for row in algbw} == {
        ("nccl", 1)
    }
    assert all(row["extra"]["correct"] for row in algbw), "a collective gave a wrong answer"
    assert all(row["value"] > 0 for row in algbw)


def _train(run_dir: Path, **overrides: object):
    config = load_train_config(preset="gpt-tiny", overrides=tiny_gpt(run_dir, **overrides))
    return train(config)


def _weight_names(checkpoint: Path, out: Path) -> set[str]:
    import torch

    export_checkpoint(checkpoint, out)
    weights = torch.load(out, weights_only=True)
    assert all(torch.isfinite(w).all() for w in weights.values())
    return set(weights)


# One rank sees the same samples as a plain run, so it must learn the same way. FSDP2 gathering
# bf16 parameters is compared with plain bf16 autocast: both multiply in bf16, hence the wider band.
@pytest.mark.parametrize(
    ("mode", "precision", "rel"),
    [
        ("ddp", {"precision.dtype": "fp32"}, 1e-3),
        ("fsdp", {"precision.dtype": "fp32"}, 1e-3),
        ("fsdp", {"precision.dtype": "bf16", "precision.param_dtype": "bf16"}, 2e-2),
    ],
)
def test_one_rank_ddp_and_fsdp_train_like_a_plain_run(
    tmp_path: Path, mode: str, precision: dict[str, str], rel: float
):
    steps = {"train.steps": 8}
    plain_precision = {"precision.dtype": precision["precision.dtype"]}
    plain = _train(tmp_path / "plain", **steps, **plain_precision)
    parallel = _train(
        tmp_path / mode,
        **steps,
        **precision,
        **{"parallel.mode": mode, "parallel.backend": "nccl"},
    )
    assert parallel.steps_done == 8
    assert parallel.losses == pytest.approx(plain.losses, rel=rel)
    assert parallel.losses[-1] < parallel.losses[0] - 0.3, parallel.losses
    # A checkpoint written by the wrapped model loads as the same plain weights.
    assert parallel.checkpoint is not None and plain.checkpoint is not None
    assert _weight_names(parallel.checkpoint, tmp_path / "parallel.pt") == _weight_names(
        plain.checkpoint, tmp_path / "plain.pt"
    )


def _steps_logged(run_dir: Path) -> list[int]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [r["step"] for r in map(json.loads, lines) if r.get("event", "step") == "step"]


@pytest.mark.multiproc
@pytest.mark.parametrize("mode", ["ddp", "fsdp"])
def test_torchrun_on_one_gpu_stops_and_resumes(tmp_path: Path, mode: str):
    run_dir = tmp_path / "run"
    # A GPU run reads its metrics every logging.log_every steps (10 by default): 1 logs each.
    overrides = {"train.steps": 6, "parallel.backend": "nccl", "logging.log_every": 1}
    flags = as_flags(tiny_gpt(run_dir, **overrides))
    common = ("train", "--preset", "gpt-tiny", "--parallel", mode, *flags)
    first = run_rocmkit(*common, "--train.stop_at_step", "3", torchrun_nproc=1)
    assert first.returncode == 0, explain(first)
    assert _steps_logged(run_dir) == [1, 2, 3]
    second = run_rocmkit(*common, "--resume", "auto", torchrun_nproc=1)
    assert second.returncode == 0, explain(second)
    assert _steps_logged(run_dir) == [1, 2, 3, 4, 5, 6]  # continued at 4, not restarted at 1
    assert (run_dir / "checkpoints" / "latest").read_text().strip() == "step_00000006"
