"""The same config trains to the same per-step losses in two fresh processes.

The ResNet case is the regression test for torch's CPU (oneDNN) bf16 convolution backward
leaving the weight gradient of padding-only kernel taps uninitialised (docs/train.md,
"Determinism"). The second process fills fresh heap memory with a byte pattern (glibc's
MALLOC_PERTURB_) so that uninitialised memory differs between the two runs every time instead
of in one run out of four; elsewhere the variable is ignored and the test is a plain rerun.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from loop_helpers import as_flags, run_cli, tiny_overrides

RESNET = {
    "model.kind": "resnet",
    "model.arch": "resnet10",
    "model.num_classes": "4",
    "model.image_size": "16",  # layer4 sees 1x1 maps: most 3x3 taps only ever meet padding
    "train.micro_batch": "16",
    "train.lr": "3e-3",
    "train.steps": "3",
}


def _losses(run_dir: Path, flags: list[str], **env: str) -> list[float]:
    proc = run_cli("train", "--preset", "gpt-tiny", *flags, "--logging.log_every", "1", **env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [record["loss"] for record in map(json.loads, lines) if record["event"] == "step"]


@pytest.mark.parametrize(
    ("name", "extra"),
    [("resnet-bf16", RESNET), ("gpt-bf16", {"train.steps": "3"})],
)
@pytest.mark.slow
def test_two_fresh_processes_give_identical_losses(tmp_path: Path, name: str, extra: dict):
    runs = []
    for index, perturb in enumerate(("0", "165")):
        run_dir = tmp_path / f"{name}-{index}"
        overrides = tiny_overrides(run_dir, **{"precision.dtype": "bf16", **extra})
        runs.append(_losses(run_dir, as_flags(overrides), MALLOC_PERTURB_=perturb))
    assert len(runs[0]) == 3
    assert runs[0] == runs[1]  # bit-identical, not approximately equal


@pytest.mark.parametrize(
    ("size", "stride", "padding"), [(1, 2, 1), (2, 2, 1), (1, 1, 1), (4, 2, 1), (3, 1, 0)]
)
def test_padding_only_taps_are_the_taps_whose_true_gradient_is_zero(size, stride, padding):
    import torch

    from rocmkit.train.models.resnet import _padding_only_taps

    weight = torch.zeros(1, 1, 3, 3, requires_grad=True)
    images = torch.ones(1, 1, size, size)  # every real pixel contributes to every tap that meets it
    torch.nn.functional.conv2d(images, weight, stride=stride, padding=padding).sum().backward()
    assert weight.grad is not None
    zero_rows = [row for row in range(3) if not weight.grad[0, 0, row].any()]
    assert _padding_only_taps(size, 3, stride, padding, 1) == zero_rows
