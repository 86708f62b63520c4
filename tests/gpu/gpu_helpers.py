"""Helpers of the GPU tests: the rocmkit CLI in a subprocess (plain or under torchrun), tiny runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def src_dir() -> str:
    import rocmkit

    return str(Path(rocmkit.__file__).resolve().parent.parent)


def cli_env(**extra: str) -> dict[str, str]:
    """This checkout's rocmkit first on PYTHONPATH, so a subprocess runs the code under test."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([src_dir(), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update(extra)
    return env


def run_rocmkit(
    *args: str, torchrun_nproc: int | None = None, timeout: float = 300, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    """`python -m rocmkit ARGS`, or the same under torchrun with `torchrun_nproc` ranks."""
    launcher: list[str] = []
    if torchrun_nproc is not None:
        launcher = ["-m", "torch.distributed.run", "--standalone"]
        launcher += ["--nproc-per-node", str(torchrun_nproc)]
    command = [sys.executable, *launcher, "-m", "rocmkit", *args]
    return subprocess.run(
        command, env=cli_env(), capture_output=True, text=True, timeout=timeout, cwd=cwd
    )


def explain(proc: subprocess.CompletedProcess) -> str:
    """The end of a failed subprocess's output, for an assertion message."""
    return f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"


def tiny_gpt(run_dir: Path, **extra: Any) -> dict[str, str]:
    """gpt-tiny pinned to the GPU: a few seconds per run, and an error rather than a CPU run."""
    values: dict[str, Any] = {
        "model.seq_len": 32,
        "model.d_model": 64,
        "model.n_layer": 2,
        "model.n_head": 2,
        "train.micro_batch": 8,
        "train.steps": 20,
        "train.warmup": 2,
        "train.lr": 1e-2,
        "train.device": "cuda",
        "logging.run_dir": str(run_dir),
        **extra,
    }
    return {key: str(value) for key, value in values.items()}


def as_flags(overrides: dict[str, str]) -> list[str]:
    return [token for key, value in overrides.items() for token in (f"--{key}", value)]


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def measurements(run_dir: Path, suite: str | None = None) -> list[dict[str, Any]]:
    """The measurement rows of a run's result.json, as a user reading the file sees them."""
    rows = read_json(run_dir / "result.json")["measurements"]
    return [row for row in rows if suite is None or row["suite"] == suite]
