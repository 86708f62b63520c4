"""`rocmkit train`: mixed precision, accumulation, DDP/FSDP2 and exact resume.

from rocmkit.train import load_train_config, train
config = load_train_config(preset="gpt-tiny", overrides={"precision.dtype": "bf16"})
result = train(config)
"""

from typing import TYPE_CHECKING

from rocmkit.lazy import lazy_names

if TYPE_CHECKING:
    from rocmkit.train.checkpoint import export_checkpoint
    from rocmkit.train.config import TrainConfig, available_presets, load_train_config
    from rocmkit.train.failures import NonFiniteLossError
    from rocmkit.train.loop import train
    from rocmkit.train.memory import step_memory
    from rocmkit.train.metrics import StepMetrics, TrainResult
    from rocmkit.train.models.loss import resolve_loss_impl

# Loaded on first use, so that a config is read and checked before torch is imported (torch takes
# seconds to import; a typo in a config file should be answered at once), and so that the CLI,
# which reads `rocmkit.train.shortcuts` to declare its flags, does not load the config tree.
_LAZY = {
    "TrainConfig": "rocmkit.train.config",
    "available_presets": "rocmkit.train.config",
    "load_train_config": "rocmkit.train.config",
    "export_checkpoint": "rocmkit.train.checkpoint",
    "NonFiniteLossError": "rocmkit.train.failures",
    "train": "rocmkit.train.loop",
    "StepMetrics": "rocmkit.train.metrics",
    "TrainResult": "rocmkit.train.metrics",
    "resolve_loss_impl": "rocmkit.train.models.loss",
    "step_memory": "rocmkit.train.memory",
}


__getattr__ = lazy_names(__name__, _LAZY)


__all__ = [
    "NonFiniteLossError",
    "StepMetrics",
    "TrainConfig",
    "TrainResult",
    "available_presets",
    "export_checkpoint",
    "load_train_config",
    "resolve_loss_impl",
    "step_memory",
    "train",
]
