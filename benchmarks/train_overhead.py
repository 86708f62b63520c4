"""How much does rocmkit's training loop cost over a minimal hand-written PyTorch loop?

Both loops train the same model (same preset, seed and precision) on the same batches in this
process, with the same optimizer, gradient clipping and per-step loss read-back; rocmkit adds
its schedule, metrics, JSONL log and signal handling. Per-step wall time is measured between
consecutive completed steps (so logging and callbacks count), the first `--warmup` steps are
dropped, runs alternate between the two loops to share any machine noise, and the ratio of the
medians over all kept steps is printed. Goal: rocmkit within 3% of the hand-written loop.

    OMP_NUM_THREADS=1 python benchmarks/train_overhead.py --preset gpt-tiny --steps 200
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from pathlib import Path

import torch

from rocmkit.train import load_train_config, train
from rocmkit.train.config import TrainConfig
from rocmkit.train.data import build_data
from rocmkit.train.loop import build_optimizer
from rocmkit.train.models import build_model

_AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}


def hand_written_step_times(config: TrainConfig) -> list[float]:
    """The loop a person writes from the PyTorch docs: autocast, (scaled) backward, clip, step."""
    train_cfg, device = config.train, "cpu"
    torch.manual_seed(train_cfg.seed)
    built = build_model(config.model)
    data = build_data(config.data, config.model)
    model = built.module
    optimizer = build_optimizer(model, train_cfg, device)
    dtype = _AUTOCAST.get(config.precision.dtype)
    scaler = torch.amp.GradScaler(device, enabled=config.precision.dtype == "fp16")
    stamps = [time.perf_counter()]
    for step in range(train_cfg.steps):
        for micro_step in range(train_cfg.grad_accum):
            batch = data.get_batch(
                step=step, micro_step=micro_step, micro_batch_size=train_cfg.micro_batch,
                grad_accum=train_cfg.grad_accum, rank=0, world_size=1,
            )  # fmt: skip
            with torch.autocast(device, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
                loss = built.loss(batch) / train_cfg.grad_accum
            scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), train_cfg.grad_clip or float("inf"))
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        loss.item()
        stamps.append(time.perf_counter())
    return [b - a for a, b in itertools.pairwise(stamps)]


def rocmkit_step_times(config: TrainConfig) -> list[float]:
    stamps: list[float] = []
    start = time.perf_counter()
    train(config, callbacks=[lambda _: stamps.append(time.perf_counter())])
    stamps.insert(0, start)
    return [b - a for a, b in itertools.pairwise(stamps)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="gpt-tiny")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10, help="steps dropped from each run")
    parser.add_argument("--repeats", type=int, default=6, help="alternating runs of each loop")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        overrides = {
            "train.steps": str(args.steps),
            "precision.dtype": args.precision,
            "logging.run_dir": str(Path(tmp) / "run"),
            "checkpoint.save_final": "false",
        }
        config = load_train_config(preset=args.preset, overrides=overrides)
        hand: list[float] = []
        ours: list[float] = []
        for _ in range(args.repeats):
            hand += hand_written_step_times(config)[args.warmup :]
            ours += rocmkit_step_times(config)[args.warmup :]
    hand_ms, ours_ms = statistics.median(hand) * 1e3, statistics.median(ours) * 1e3
    print(f"preset {args.preset}, {args.precision}, {args.steps} steps x {args.repeats} runs each")
    print(f"hand-written loop: median step {hand_ms:.3f} ms")
    print(f"rocmkit loop:      median step {ours_ms:.3f} ms")
    print(f"step-time ratio rocmkit/hand-written: {ours_ms / hand_ms:.4f} (goal <= 1.03)")


if __name__ == "__main__":
    main()
