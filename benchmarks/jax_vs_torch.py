"""rocmkit's JAX backend against its torch backend (eager and compiled), same GPT, same settings.

For each shape, the three loops run through rocmkit's public `train()` (torch eager, torch with
`train.compile`, `--backend jax`) in alternated rounds in one process (eager, compiled, JAX, eager,
...), on the same synthetic data, precision and optimizer settings. Each loop is timed from the
sync point at the end of warm-up (compilation included there) to the last step, in process CPU
time on a CPU (all threads of this process: XLA's own thread pool counts too; run with
OMP_NUM_THREADS=1 on a shared machine) and wall time on a GPU. Prints tokens per second of each
loop and the ratios JAX / torch eager and torch compiled / JAX per shape.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/jax_vs_torch.py [--precision bf16]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from resultfile import ResultRun, add_result_args, ratios

from rocmkit.train import load_train_config, train
from rocmkit.train.config import TrainConfig

# gpt-tiny as shipped, and a larger one: twice the width and the sequence, 8x the vocabulary (torch's
# CPU bf16 eager step costs seconds of CPU at train_vs_reference.py's d192 shape: too slow to repeat).
SHAPES: dict[str, dict[str, str]] = {
    "gpt-tiny": {},
    "gpt-d128": {
        "model.vocab_size": "2048",
        "model.seq_len": "128",
        "model.d_model": "128",
        "model.n_layer": "2",
        "model.n_head": "2",
    },
}
LOOPS = ("torch_eager", "torch_compiled", "jax")


def _clock() -> float:
    return time.perf_counter() if torch.cuda.is_available() else time.process_time()


def config_for(shape: str, loop: str, args: argparse.Namespace, run_dir: Path) -> TrainConfig:
    overrides = {
        **SHAPES[shape],
        "train.micro_batch": "8",
        "train.grad_accum": "1",
        "train.steps": str(args.warmup + args.steps),
        "train.compile": "true" if loop == "torch_compiled" else "false",
        "precision.dtype": args.precision,
        "logging.log_every": str(args.log_every),
        "logging.run_dir": str(run_dir),
        "checkpoint.every": "0",
        "checkpoint.save_final": "false",
    }
    return load_train_config(preset="gpt-tiny", overrides=overrides)


def timed_run(config: TrainConfig, loop: str, warmup: int, steps: int) -> tuple[float, float]:
    """(tokens per second of the timed steps on this script's clock, final loss)."""
    stamps: dict[int, float] = {}

    def on_step(metrics: Any) -> None:
        if metrics.step in (warmup, warmup + steps):
            stamps[metrics.step] = _clock()

    runner: Callable[..., Any]
    if loop == "jax":
        from rocmkit.jaxtrain import train as runner
    else:
        runner = train
    result = runner(config, callbacks=[on_step], handle_signals=False)
    tokens = steps * config.train.micro_batch * config.model.seq_len
    return tokens / (stamps[warmup + steps] - stamps[warmup]), float(result.final_loss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--shapes", default=",".join(SHAPES), help="comma list of " + ",".join(SHAPES)
    )
    parser.add_argument("--precision", default="bf16", choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--steps", type=int, default=10, help="timed steps per run")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps (compilation)")
    parser.add_argument("--log-every", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds of the loops")
    add_result_args(parser, "jax_vs_torch")
    args = parser.parse_args()
    if args.warmup % args.log_every or args.steps % args.log_every:
        parser.error("--warmup and --steps must be multiples of --log-every (timing points)")
    run = ResultRun.start("jax_vs_torch", args)
    clock = "wall" if torch.cuda.is_available() else "process"
    unit = "tok/s" if clock == "wall" else "tok/CPU-s"
    with tempfile.TemporaryDirectory(prefix="rocmkit-jax-vs-torch-") as tmp:
        for shape in args.shapes.split(","):
            rates: dict[str, list[float]] = {loop: [] for loop in LOOPS}
            for index in range(args.rounds):
                for loop in LOOPS:
                    config = config_for(shape, loop, args, Path(tmp) / f"{shape}-{loop}-{index}")
                    rate, loss = timed_run(config, loop, args.warmup, args.steps)
                    rates[loop].append(rate)
                    print(f"  {shape} {loop}: {rate:,.0f} {unit} (loss {loss:.3f})", flush=True)
            for loop in LOOPS:
                run.add(f"{shape}.{loop}", rates[loop], unit=unit, clock=clock)
            jax_eager = run.add(
                f"{shape}.jax_over_torch_eager",
                ratios(rates["jax"], rates["torch_eager"]),
                unit="x",
                clock=clock,
                baseline="torch_eager",
            )
            compiled_jax = run.add(
                f"{shape}.torch_compiled_over_jax",
                ratios(rates["torch_compiled"], rates["jax"]),
                unit="x",
                clock=clock,
                baseline="jax",
            )
            medians = {loop: statistics.median(rates[loop]) for loop in LOOPS}
            print(f"{shape} {args.precision}: " + ", ".join(
                f"{loop} {value:,.0f} {unit}" for loop, value in medians.items()))  # fmt: skip
            print(f"  JAX / torch eager {jax_eager['median']:.2f}x, "
                  f"torch compiled / JAX {compiled_jax['median']:.2f}x")  # fmt: skip
    run.finish()


if __name__ == "__main__":
    main()
