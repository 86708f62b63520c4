"""torchvision ResNets (the `vision` extra), randomly initialised, any input size from 8 pixels.

torchvision's ResNets end in an adaptive average pool, so small inputs such as 32x32 work with
the ImageNet stem unchanged. `resnet10` (one BasicBlock per stage) is added for quick runs.

Small inputs have a catch: deep in the network a 3x3 convolution may see a 1x1 or 2x2 feature map,
so some kernel taps only ever meet zero padding and their true gradient is exactly 0. torch's CPU
(oneDNN) bf16 convolution backward leaves those entries of the weight gradient uninitialised
(docs/train.md, "Determinism"): garbage that gradient clipping turns into a different update in
every process, or NaN. `_zero_padding_only_taps` pins those gradients to 0 with a gradient hook.
"""

from __future__ import annotations

from collections.abc import Callable

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

        model: nn.Module = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=num_classes)
        return model
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
    _zero_padding_only_taps(module, _conv_input_sizes(config, size))
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
        supports_channels_last=True,
    )


def _conv_input_sizes(config: ModelConfig, size: int) -> dict[str, tuple[int, int]]:
    """Spatial input size of every Conv2d (by module name), from a shape-only forward pass."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    sizes: dict[str, tuple[int, int]] = {}
    with torch.random.fork_rng(devices=[]), FakeTensorMode(allow_non_fake_inputs=True):
        fake = _make_resnet(config.arch, config.num_classes).eval()
        for name, conv in fake.named_modules():
            if isinstance(conv, nn.Conv2d):
                conv.register_forward_pre_hook(
                    lambda _, args, name=name: sizes.__setitem__(name, tuple(args[0].shape[-2:]))
                )
        fake(torch.zeros(1, 3, size, size))
    return sizes


def _padding_only_taps(
    size: int, kernel: int, stride: int, padding: int, dilation: int
) -> list[int]:
    """Kernel positions (along one axis) that meet no input element at any output position."""
    outputs = (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1
    return [
        tap
        for tap in range(kernel)
        if not any(0 <= out * stride - padding + tap * dilation < size for out in range(outputs))
    ]


def _zero_padding_only_taps(module: nn.Module, input_sizes: dict[str, tuple[int, int]]) -> None:
    for name, conv in module.named_modules():
        if not isinstance(conv, nn.Conv2d) or isinstance(conv.padding, str):
            continue
        geometry = zip(
            input_sizes[name],
            conv.kernel_size,
            conv.stride,
            conv.padding,
            conv.dilation,
            strict=True,
        )
        rows, cols = (_padding_only_taps(*axis) for axis in geometry)
        if rows or cols:
            conv.weight.register_hook(_zeroing_hook(rows, cols))


def _zeroing_hook(rows: list[int], cols: list[int]) -> Callable[[torch.Tensor], torch.Tensor]:
    def hook(grad: torch.Tensor) -> torch.Tensor:
        grad = grad.clone()  # assignment, not multiplication: 0 * NaN would stay NaN
        grad[:, :, rows, :] = 0
        grad[:, :, :, cols] = 0
        return grad

    return hook
