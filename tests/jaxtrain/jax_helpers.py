"""Small JAX training configs shared by the tests of rocmkit.jaxtrain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rocmkit.train import load_train_config
from rocmkit.train.config import TrainConfig

# gpt-tiny at half the sequence length: compiles in a few seconds on one CPU core.
SMALL = {"model.seq_len": "32", "train.micro_batch": "4", "train.warmup": "2"}


def small_config(run_dir: Path, **overrides: Any) -> TrainConfig:
    """gpt-tiny, shortened, writing into `run_dir`; keyword overrides use __ for the dot."""
    dotted = {key.replace("__", "."): str(value) for key, value in overrides.items()}
    return load_train_config(
        preset="gpt-tiny",
        overrides={**SMALL, "logging.run_dir": str(run_dir), **dotted},
    )
