"""Per-device defaults of a training run: TF32/XF32, cuDNN/MIOpen benchmark mode, channels_last."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from rocmkit.train.config import TrainConfig
from rocmkit.train.models import BuiltModel

__all__ = ["device_settings", "use_channels_last"]


@contextlib.contextmanager
def device_settings(config: TrainConfig, device_type: str) -> Iterator[None]:
    """GPU defaults a strong engineer sets, restored afterwards (they are process-wide).

    fp32 matmuls and convolutions use TF32 (XF32 on MI300) unless precision.strict_fp32, and
    cuDNN/MIOpen pick the fastest convolution algorithm for the shapes seen (benchmark mode).
    """
    if device_type != "cuda":
        yield
        return
    matmul_precision = torch.get_float32_matmul_precision()
    cudnn = torch.backends.cudnn
    saved = (cudnn.benchmark, cudnn.allow_tf32)
    try:
        if not config.precision.strict_fp32:
            torch.set_float32_matmul_precision("high")
            cudnn.allow_tf32 = True
        cudnn.benchmark = True
        yield
    finally:
        torch.set_float32_matmul_precision(matmul_precision)
        cudnn.benchmark, cudnn.allow_tf32 = saved


def use_channels_last(built: BuiltModel, config: TrainConfig, device_type: str) -> bool:
    """NHWC for convolution nets: by default on GPUs (cuDNN/MIOpen), as model.channels_last says."""
    if not built.supports_channels_last:
        return False
    setting = config.model.channels_last
    return device_type == "cuda" if setting == "auto" else bool(setting)
