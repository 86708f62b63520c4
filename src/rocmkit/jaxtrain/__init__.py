"""`rocmkit train --backend jax`: the GPT presets trained with JAX, Flax NNX, Optax and Orbax.

JAX is an optional extra (`pip install 'rocmkit[jax]'`; on ROCm also the JAX ROCm plugin). This
package imports nothing heavy until `train` is called, so `rocmkit` works without JAX.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rocmkit.errors import require_extra

if TYPE_CHECKING:
    from rocmkit.platform import Platform
    from rocmkit.train.config import TrainConfig
    from rocmkit.train.metrics import StepMetrics, TrainResult

__all__ = ["train"]


def train(
    config: TrainConfig,
    platform: Platform | None = None,
    callbacks: Sequence[Callable[[StepMetrics], None]] = (),
    *,
    handle_signals: bool = True,
) -> TrainResult:
    """Train `config`'s GPT with JAX (same config, data, metrics and result document as torch)."""
    for module in ("jax", "flax", "optax", "orbax.checkpoint"):
        require_extra(module, "jax")
    from rocmkit.jaxtrain.loop import train as train_jax

    return train_jax(
        config,
        platform=platform,
        callbacks=callbacks,
        handle_signals=handle_signals,
    )
