"""torchvision ResNets (the `vision` extra), randomly initialised, any input size from 8 pixels.

torchvision's ResNets end in an adaptive average pool, so small inputs such as 32x32 work with
the ImageNet stem unchanged. `resnet10` (one BasicBlock per stage) is added for quick runs.
"""

from __future__ import annotations

import torch
from torch import nn

from rocmkit.errors import UserError, require_extra
from rocmkit.train.models import BuiltModel, ModelConfig, count_params
from rocmkit.train.models.flops import measure_training_flops

__all__ = ["build_resnet", "resnet_arches"]

_TORCHVISION_ARCHES = (
    "resnet18",
    "resnet34",
    "resnet50",
    "resnet101",
    "resnet152",
    "resnext50_32x4d",
    "resnext101_32x8d",
    "resnext101_64x4d",
    "wide_resnet50_2",
    "wide_resnet101_2",
)


def resnet_arches() -> list[str]:
    """Architecture names accepted by model.arch."""
    return ["resnet10", *_TORCHVISION_ARCHES]


def _make_resnet(arch: str, num_classes: int) -> nn.Module:
    models = require_extra("torchvision.models", "vision")
    if arch == "resnet10":
        from torchvision.models.resnet import BasicBlock, ResNet

        return ResNet(BasicBlock, [1, 1, 1, 1], num_classes=num_classes)
    if arch not in _TORCHVISION_ARCHES:
        raise UserError(f"unknown model.arch {arch!r}; known: {', '.join(resnet_arches())}")
    return models.get_model(arch, weights=None, num_classes=num_classes)  # type: ignore[no-any-return]


def _block_slots(module: nn.Module) -> list[tuple[nn.Module, str]]:
    slots: list[tuple[nn.Module, str]] = []
    for stage_name in ("layer1", "layer2", "layer3", "layer4"):
        stage = getattr(module, stage_name)
        slots.extend((stage, str(i)) for i in range(len(stage)))
    return slots


def build_resnet(config: ModelConfig) -> BuiltModel:
    """A torchvision ResNet of `config.arch`; FLOPs per image measured once on a fake copy."""
    module = _make_resnet(config.arch, config.num_classes)
    size = config.image_size
    flops = measure_training_flops(
        lambda: _make_resnet(config.arch, config.num_classes),
        lambda: torch.zeros(1, 3, size, size),
        lambda model, images: model(images),
    )
    slots = _block_slots(module)
    return BuiltModel(
        module=module,
        blocks=[getattr(parent, name) for parent, name in slots],
        block_slots=slots,
        task="image",
        num_params=count_params(module),
        flops_per_sample=flops,
        units_per_sample=1,
        unit_name="images",
    )
