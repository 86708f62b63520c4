"""What one training step of a config holds in memory, by category: the figure `rocmkit profile`
compares its estimate with and bench's train-precision suite reports on CPU."""

from __future__ import annotations

import torch

from rocmkit.measure.memory import CategoryPeaks, measure_step_memory
from rocmkit.train.config import TrainConfig
from rocmkit.train.data import build_data
from rocmkit.train.loop import build_optimizer, checkpoint_blocks
from rocmkit.train.models import build_model
from rocmkit.train.precision import build_precision


def step_memory(config: TrainConfig, *, device: str = "cpu") -> CategoryPeaks:
    """Peak memory per category (parameters, gradients, optimizer, activations) of one real
    optimizer step of `config` in this process, under MemTracker, after one warm-up step."""
    torch.manual_seed(config.train.seed)
    built = build_model(config.model)
    data = build_data(config.data, config.model)
    precision = build_precision(config.precision, device)
    built.module = precision.prepare_model(built.module).to(device)
    if config.train.activation_checkpointing:
        checkpoint_blocks(built)
    optimizer = build_optimizer(built.module, config.train, device)
    batch = data.get_batch(
        step=0,
        micro_step=0,
        micro_batch_size=config.train.micro_batch,
        grad_accum=1,
        rank=0,
        world_size=1,
    )
    batch = {k: v.to(device) for k, v in batch.items()}

    def step() -> None:
        with precision.autocast():
            loss = built.loss(batch)
        precision.backward(loss)
        precision.step(optimizer)
        optimizer.zero_grad(set_to_none=True)

    return measure_step_memory(step, modules=[built.module], optimizer=optimizer)
