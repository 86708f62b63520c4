"""`rocmkit train`: train a preset or a config file; `rocmkit train export CKPT OUT` exports weights.

Works the same under torchrun (`torchrun --nproc-per-node 2 -m rocmkit train ...`): every rank
runs it, only rank 0 prints and writes. This module declares the arguments only;
`rocmkit.train.command` builds the job, chooses the run directory and trains, and the driver saves
and prints.
"""

from __future__ import annotations

import argparse

from rocmkit.cli.pipeline import add_output_options, handler
from rocmkit.cli.train_options import add_train_shortcuts


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train a model (GPT, ResNet, local HF causal LM) with fp32/fp16/bf16, DDP or FSDP2",
        description=(
            "Train from a preset and/or a TOML config; any setting can be overridden as "
            "--SECTION.KEY VALUE (e.g. --train.lr 3e-4; every setting is listed in docs/train.md). "
            "'rocmkit train export CKPT OUT.safetensors|OUT.pt' writes a checkpoint's weights."
        ),
    )
    parser.add_argument(
        "--preset", help="gpt-tiny, gpt2-124m, gpt2-350m, resnet18, resnet50, hf-causal-lm"
    )
    parser.add_argument("--config", help="TOML file with [model] [data] [train] ... sections")
    add_train_shortcuts(parser)
    parser.add_argument(
        "--resume",
        help="auto: the newest valid checkpoint of --out DIR (without --out: of the newest "
        "runs/train-* run that has one; damaged checkpoints are passed over), or a checkpoint path",
    )
    add_output_options(
        parser,
        "train",
        monitor_memory=True,
        out_help="run directory for metrics.jsonl, result.json and checkpoints "
        "(default: runs/train-<UTC stamp>; sets logging.run_dir)",
    )
    parser.add_argument("--run-dir", help="deprecated: use --out DIR (same meaning)")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads of a CPU run (default: OMP_NUM_THREADS, else the cores free when "
        "the run starts); idle OpenMP threads sleep (OMP_WAIT_POLICY=PASSIVE) unless you set it",
    )
    parser.add_argument(
        "--backend",
        choices=["torch", "jax"],
        default="torch",
        help="jax: the GPT presets with JAX/Flax (pip install 'rocmkit[jax]'), see docs/train-jax.md",
    )
    parser.set_defaults(handler=handler("rocmkit.train.command"), accepts_overrides=True)
