"""`rocmkit bench` below the command line: the BenchConfig its flags ask for.

Layers, later wins: the sizes `device_defaults` picks for the device and mode, the command's own
flags, dotted overrides (`--gemm.sizes 256,512`), and the short train flags of the train-precision
suite (`--micro-batch 2`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rocmkit.bench.sizing import Mode
from rocmkit.bench.suites import BenchConfig, Device, device_defaults
from rocmkit.bench.train_precision import with_train_shortcuts
from rocmkit.config import load_config

if TYPE_CHECKING:
    from rocmkit.platform import Platform

# --full without --suite adds attention; collectives need torchrun and are always asked for by name.
FULL_SUITES = ("gemm", "bandwidth", "attention", "train-precision")


def bench_config(
    platform: Platform,
    *,
    mode: Mode = "quick",
    suites: Sequence[str] = (),
    label: str | None = None,
    threads: int | None = None,
    device: Device = "auto",
    power: bool = True,
    overrides: Mapping[str, str] | None = None,
    train_shortcuts: Mapping[str, str] | None = None,
) -> BenchConfig:
    """The run's config: device-sized defaults <- these settings <- dotted `overrides` <- the
    train-precision suite's `train_shortcuts` (rocmkit.train.shortcuts overrides)."""
    base: dict[str, object] = {"mode": mode, "power": power, "device": device}
    base.update(device_defaults(platform, mode))
    if suites:
        base["suites"] = list(suites)
    elif mode == "full":
        base["suites"] = list(FULL_SUITES)
    if label:
        base["label"] = label
    if threads is not None:
        base["threads"] = threads
    config = load_config(BenchConfig, base=base, overrides=dict(overrides or {}))
    if config.train_precision is not None and train_shortcuts:
        config.train_precision = with_train_shortcuts(config.train_precision, train_shortcuts)
    return config
