"""torchvision ResNets through build_model: small inputs, blocks, FLOPs per image."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

from rocmkit.errors import UserError
from rocmkit.train.models import ModelConfig, build_model

pytest.importorskip("torchvision")

TINY = ModelConfig(kind="resnet", arch="resnet10", num_classes=10, image_size=32)


def _batch(config: ModelConfig, size: int = 4) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    images = torch.randn(size, 3, config.image_size, config.image_size, generator=generator)
    return {"images": images, "labels": torch.arange(size) % config.num_classes}


@pytest.mark.parametrize("arch", ["resnet10", "resnet18"])
def test_tiny_images_train_forward_and_backward(arch):
    config = dataclasses.replace(TINY, arch=arch)
    built = build_model(config)
    assert built.task == "image" and built.unit_name == "images" and built.units_per_sample == 1
    logits = built.module(_batch(config)["images"])
    assert logits.shape == (4, 10)
    loss = built.loss(_batch(config))
    loss.backward()
    assert torch.isfinite(loss)
    assert all(p.grad is not None for p in built.module.parameters())


def test_blocks_are_the_residual_blocks_and_can_be_wrapped():
    torch.manual_seed(0)
    built = build_model(dataclasses.replace(TINY, arch="resnet18"))
    assert len(built.blocks) == 8  # two BasicBlocks in each of four stages
    built.module.eval()
    images = _batch(TINY)["images"]
    expected = built.module(images)
    for index, block in enumerate(list(built.blocks)):
        built.set_block(index, checkpoint_wrapper(block))
    assert type(built.module.layer4[1]).__name__ == "CheckpointWrapper"
    torch.testing.assert_close(built.module(images), expected)


def test_flops_per_image_grow_with_the_pixel_count_and_leave_the_model_untouched():
    small = build_model(TINY)
    large = build_model(dataclasses.replace(TINY, image_size=64))
    assert small.flops_per_sample is not None and large.flops_per_sample is not None
    # Convolutions dominate and scale with the pixel count; the classifier does not.
    assert large.flops_per_sample / small.flops_per_sample == pytest.approx(4.0, rel=0.05)
    # A 32x32 resnet10 is ~0.035 GFLOPs forward (0.5% of its 224x224 cost); x3 for training.
    assert 0.05e9 < small.flops_per_sample < 0.2e9
    assert all(p.grad is None for p in small.module.parameters())


@pytest.mark.slow
def test_flops_of_resnet50_match_its_published_cost():
    built = build_model(
        dataclasses.replace(TINY, arch="resnet50", image_size=224, num_classes=1000)
    )
    # torchvision documents 4.09 GFLOPS (multiply-adds) for resnet50 at 224: 8.2e9 FLOPs forward.
    assert built.flops_per_sample / 3 == pytest.approx(2 * 4.09e9, rel=0.02)
    assert built.num_params == 25_557_032


def test_unknown_architecture_is_a_user_error():
    with pytest.raises(UserError, match="resnet18"):
        build_model(dataclasses.replace(TINY, arch="vgg16"))
