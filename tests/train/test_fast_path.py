"""The fast path: loss inside the compiled model, chunked head + loss, no host reads between log
steps, device-made synthetic data, prefetched host data, channels_last, launch mistakes."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from loop_helpers import tiny_overrides
from torch.overrides import TorchFunctionMode

from rocmkit.errors import UserError
from rocmkit.train import NonFiniteLossError, StepMetrics, load_train_config, train
from rocmkit.train.batches import BatchFeeder
from rocmkit.train.data import SyntheticImages, SyntheticTokens, TokenFile
from rocmkit.train.models import build_model
from rocmkit.train.models.loss import _ChunkedLinearCrossEntropy, lm_head_loss
from rocmkit.train.parallel import check_local_rank_has_gpu


def _head_inputs(rows: int = 50, dim: int = 16, vocab: int = 300):
    generator = torch.Generator().manual_seed(0)
    hidden = torch.randn(rows, dim, generator=generator, requires_grad=True)
    weight = torch.randn(vocab, dim, generator=generator, requires_grad=True)
    labels = torch.randint(vocab, (rows,), generator=generator)
    labels[::7] = -100  # ignored positions (padding)
    return hidden, weight, labels


def _loss_and_grads(fn, hidden, weight, labels):
    hidden.grad = weight.grad = None
    loss = fn(hidden, weight, labels)
    (loss * 3.0).backward()  # a scale, as grad accumulation and fp16 loss scaling apply
    return loss.detach(), hidden.grad.clone(), weight.grad.clone()


def test_chunked_loss_equals_the_plain_loss_and_its_gradients():
    hidden, weight, labels = _head_inputs()
    plain = _loss_and_grads(lambda h, w, y: lm_head_loss(h, w, y, impl="plain"), *_head_inputs())
    chunked = _loss_and_grads(
        lambda h, w, y: _ChunkedLinearCrossEntropy.apply(h, w, y, 8), hidden, weight, labels
    )
    for mine, theirs in zip(chunked, plain, strict=True):
        torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-6)


def test_chunked_loss_under_bf16_autocast_keeps_fp32_gradients_close():
    hidden, weight, labels = _head_inputs()
    reference = _loss_and_grads(
        lambda h, w, y: lm_head_loss(h, w, y, impl="plain"), *_head_inputs()
    )
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = _ChunkedLinearCrossEntropy.apply(hidden, weight, labels, 16)
    (loss * 3.0).backward()
    assert loss.dtype == torch.float32 and hidden.grad.dtype == torch.float32
    torch.testing.assert_close(loss.detach(), reference[0], rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(weight.grad, reference[2], rtol=5e-2, atol=5e-3)


def test_gpt_returns_the_loss_from_forward_so_compile_takes_it_in():
    """With labels the GPT's own forward makes the loss: one compiled graph holds the model and the
    cross-entropy, so no eager region keeps the full logits."""
    config = load_train_config(preset="gpt-tiny", overrides=tiny_overrides(Path("unused")))
    built = build_model(config.model)
    graphs: list[torch.fx.GraphModule] = []

    def record(gm: torch.fx.GraphModule, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    built.module = torch.compile(built.module, backend=record)
    batch = SyntheticTokens(vocab_size=256, seq_len=32, seed=0).samples(range(2))
    loss = built.loss(batch)
    assert loss.dim() == 0
    assert len(graphs) == 1  # no graph break between the model and its loss
    code = graphs[0].code
    assert "embedding" in code and "scaled_dot_product_attention" in code
    assert "cross_entropy" in code
    torch._dynamo.reset()


class _HostReads(TorchFunctionMode):
    """Counts the calls that copy a device value to the host (and wait for the device)."""

    NAMES = frozenset({"item", "tolist", "__float__", "__int__", "__bool__", "numpy", "cpu"})

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in self.NAMES:
            self.count += 1
        return func(*args, **(kwargs or {}))


def _count_host_reads(run_dir: Path, **overrides) -> tuple[int, list[StepMetrics]]:
    settings = {"train.steps": 12, "checkpoint.save_final": "false", **overrides}
    config = load_train_config(preset="gpt-tiny", overrides=tiny_overrides(run_dir, **settings))
    seen: list[StepMetrics] = []
    with _HostReads() as reads:
        train(config, callbacks=[seen.append])
    return reads.count, seen


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_steps_between_log_steps_read_nothing_from_the_device(tmp_path: Path, dtype: str):
    # The fused AdamW (the GPU default) also reads nothing; the foreach one reads its step count.
    precision = {"precision.dtype": dtype, "train.optimizer_impl": "fused"}
    every_step, _ = _count_host_reads(tmp_path / "a", **precision, **{"logging.log_every": 1})
    every_sixth, seen = _count_host_reads(tmp_path / "b", **precision, **{"logging.log_every": 6})
    assert every_sixth <= 3  # one read after step 1 (the run's first estimate), 6 and 12
    assert every_step >= 12
    assert [m.step for m in seen] == list(range(1, 13))  # still a metric per step
    assert all(m.step_time_s > 0 and math.isfinite(m.loss) for m in seen)


def test_nan_is_caught_within_log_every_steps_and_no_bad_checkpoint_is_kept(run_dir: Path):
    overrides = {
        "train.lr": 1e30,
        "train.warmup": 0,
        "train.grad_clip": 0,
        "checkpoint.every": 4,
        "train.steps": 12,
        "logging.log_every": 4,
    }
    config = load_train_config(preset="gpt-tiny", overrides=tiny_overrides(run_dir, **overrides))
    with pytest.raises(NonFiniteLossError, match=r"loss is nan at step 2") as info:
        train(config)
    assert info.value.exit_code == 3
    assert not (run_dir / "checkpoints" / "latest").exists()  # step 4 had NaN weights: not saved
    assert not list((run_dir / "checkpoints").glob("step_*"))


def test_synthetic_batches_are_made_on_the_requested_device():
    tokens = SyntheticTokens(vocab_size=1000, seq_len=16, seed=3)
    images = SyntheticImages(num_classes=10, image_size=32, seed=3)
    kwargs = {"step": 2, "micro_step": 0, "micro_batch_size": 4, "grad_accum": 1}
    for source in (tokens, images):
        on_meta = source.get_batch(**kwargs, rank=0, world_size=1, device="meta")
        assert all(t.device.type == "meta" for t in on_meta.values())
    batch = tokens.get_batch(**kwargs, rank=0, world_size=1)
    assert torch.equal(batch["input_ids"][:, 1:], batch["labels"][:, :-1])
    picture = images.get_batch(**kwargs, rank=0, world_size=1)["images"]
    assert picture.shape == (4, 3, 32, 32)
    assert abs(float(picture.mean())) < 0.5 and 0.5 < float(picture.std()) < 2.0


def test_prefetched_host_batches_are_the_batches_of_each_position():
    import numpy as np

    source = TokenFile(np.arange(5000, dtype=np.uint16), seq_len=16, seed=1)
    feeder = BatchFeeder(
        source, device=torch.device("cpu"), micro_batch_size=3, grad_accum=2, rank=0, world_size=1
    )
    feeder.prefetch = True  # as on a GPU: the next batch is read in a background thread
    try:
        order = [(0, 0), (0, 1), (1, 0), (1, 1), (5, 1), (6, 0)]  # a jump, as after a resume
        for step, micro in order:
            expected = source.get_batch(
                step=step, micro_step=micro, micro_batch_size=3, grad_accum=2, rank=0, world_size=1
            )
            got = feeder.get(step, micro)
            assert torch.equal(got["input_ids"], expected["input_ids"]), (step, micro)
    finally:
        feeder.close()


@pytest.mark.slow
def test_channels_last_resnet_trains_like_the_default_layout(tmp_path: Path):
    pytest.importorskip("torchvision")
    common = {
        "model.arch": "resnet10",
        "model.image_size": 32,
        "model.num_classes": 10,
        "train.steps": 3,
        "train.micro_batch": 4,
        "precision.dtype": "fp32",
    }
    results = {}
    for layout in ("false", "true"):
        config = load_train_config(
            preset="resnet18",
            overrides=tiny_overrides(
                tmp_path / layout, **common, **{"model.channels_last": layout}
            ),
        )
        results[layout] = train(config).losses
    # Same numbers up to summation order; later steps drift apart as any reordering makes them.
    assert results["true"][:2] == pytest.approx(results["false"][:2], rel=1e-4)


def test_more_ranks_than_gpus_is_a_launch_mistake_with_a_fix():
    check_local_rank_has_gpu(0, 1)
    with pytest.raises(
        UserError, match=r"LOCAL_RANK 1 has no GPU.*--nproc-per-node 1.*--train.device cpu"
    ):
        check_local_rank_has_gpu(1, 1)


@pytest.mark.gpu
def test_gpu_steps_never_synchronise_with_the_host(run_dir: Path, monkeypatch):
    """Every step of a GPU run passes under torch.cuda.set_sync_debug_mode("error")."""
    from rocmkit.train import loop

    original = loop._train_step

    def strict_step(*args, **kwargs):
        torch.cuda.set_sync_debug_mode("error")
        try:
            return original(*args, **kwargs)
        finally:
            torch.cuda.set_sync_debug_mode("default")

    monkeypatch.setattr(loop, "_train_step", strict_step)
    for dtype in ("bf16", "fp16"):
        overrides = tiny_overrides(
            run_dir / dtype,
            **{"train.device": "cuda", "precision.dtype": dtype, "logging.log_every": 5},
        )
        result = train(load_train_config(preset="gpt-tiny", overrides=overrides))
        assert result.steps_done == 20 and math.isfinite(result.final_loss)
