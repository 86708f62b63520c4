"""`rocmkit train`: mixed precision, accumulation, DDP/FSDP2 and exact resume.

from rocmkit.train import load_train_config, train
config = load_train_config(preset="gpt-tiny", overrides={"precision.dtype": "bf16"})
result = train(config)
"""

from rocmkit.train.checkpoint import export_checkpoint
from rocmkit.train.config import TrainConfig, available_presets, load_train_config
from rocmkit.train.loop import NonFiniteLossError, train
from rocmkit.train.metrics import StepMetrics, TrainResult

__all__ = [
    "NonFiniteLossError",
    "StepMetrics",
    "TrainConfig",
    "TrainResult",
    "available_presets",
    "export_checkpoint",
    "load_train_config",
    "train",
]
