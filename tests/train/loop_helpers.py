"""Helpers for the trainloop tests: CLI subprocesses (plain and torchrun), small configs, weights."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

LAUNCH = Path(__file__).resolve().parent / "launch.py"


def src_dir() -> str:
    import rocmkit

    return str(Path(rocmkit.__file__).resolve().parent.parent)


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([src_dir(), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["OMP_NUM_THREADS"] = "1"
    env.update(extra)
    return env


def rocmkit_command(
    *args: str, nproc: int = 1, launcher: bool = False, torchrun_args: tuple[str, ...] = ()
) -> list[str]:
    """`python -m rocmkit ...`, or torchrun with `nproc` ranks; `launcher`: tests/train/launch.py
    (the same CLI with a crash injected on request)."""
    target = [str(LAUNCH)] if launcher else ["-m", "rocmkit"]
    if nproc == 1:
        return [sys.executable, *target, *args]
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        str(nproc),
        "--standalone",  # a free port per run; static --master-port restarts are flaky on gloo
        *torchrun_args,
        *target,
        *args,
    ]


def run_cli(
    *args: str, nproc: int = 1, timeout: float = 240, **env: str
) -> subprocess.CompletedProcess:
    return subprocess.run(
        rocmkit_command(*args, nproc=nproc),
        env=cli_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def tiny_overrides(run_dir: Path, **extra: Any) -> dict[str, str]:
    """gpt-tiny made smaller still: seconds per run on one CPU thread."""
    values = {
        "model.seq_len": 32,
        "model.d_model": 32,
        "model.n_layer": 2,
        "model.n_head": 2,
        "train.micro_batch": 4,
        "train.steps": 20,
        "train.warmup": 2,
        # These tests are about CPU behaviour: pinned, so that they mean the same on a GPU box.
        "train.device": "cpu",
        "logging.log_every": 1,
        "logging.run_dir": str(run_dir),
        **extra,
    }
    return {k: str(v) for k, v in values.items()}


def as_flags(overrides: dict[str, str]) -> list[str]:
    return [token for key, value in overrides.items() for token in (f"--{key}", value)]


def checkpoint_weights(path: Path) -> dict[str, Any]:
    """The model weights of a checkpoint (dir or checkpoints dir), loaded in this process."""
    import torch

    from rocmkit.train import export_checkpoint

    out = path.parent / f"{path.name}-export.pt" if path.is_dir() else path
    export_checkpoint(path, out)
    return torch.load(out, weights_only=True)
