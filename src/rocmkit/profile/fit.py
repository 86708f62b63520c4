"""Will a training run fit? The estimator's peak against what the device (or RAM) has, before
any step runs: a run that cannot fit should be told so in a second, not after minutes of setup."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocmkit.profile.runs import estimate_for_train_config

if TYPE_CHECKING:
    from rocmkit.platform import Platform
    from rocmkit.train import TrainConfig


def memory_warning(needed: int, available: int | None, *, on_gpu: bool) -> str | None:
    """The warning line when `needed` bytes (estimate) exceed `available`; None otherwise."""
    if not available or needed <= available:
        return None
    where = "GPU memory" if on_gpu else "free RAM"
    return (
        f"warning: this run needs about {needed / 2**30:.1f} GiB (estimate) but the machine has "
        f"{available / 2**30:.1f} GiB {where}: lower --micro-batch, use "
        "--train.activation_checkpointing true, or a smaller preset"
    )


def fit_warning(config: TrainConfig, platform: Platform) -> str | None:
    """The warning for `config` on `platform` (GPT models; None when it fits or is unknown)."""
    estimate = estimate_for_train_config(config)
    if estimate is None:
        return None
    on_gpu = config.train.device != "cpu" and platform.gpu_available
    needed = estimate.peak_bytes or estimate.total_bytes
    return memory_warning(needed, available_bytes(platform, on_gpu=on_gpu), on_gpu=on_gpu)


def available_bytes(platform: Platform, *, on_gpu: bool) -> int | None:
    """The first GPU's memory, or the RAM free now (None when unknown)."""
    if on_gpu:
        devices = platform.devices
        return devices[0].total_memory_bytes if devices else None
    import psutil

    return int(psutil.virtual_memory().available)
