"""The single-process loop: learning in every precision, accumulation, schedule, metrics, failures."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest
import torch
from loop_helpers import checkpoint_weights, tiny_overrides

from rocmkit.train import NonFiniteLossError, StepMetrics, load_train_config, train
from rocmkit.train.config import TrainSection
from rocmkit.train.loop import lr_at


def _train(run_dir: Path, preset: str = "gpt-tiny", callbacks=(), **overrides):
    config = load_train_config(preset=preset, overrides=tiny_overrides(run_dir, **overrides))
    return train(config, callbacks=callbacks)


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
def test_gpt_loss_decreases(run_dir: Path, dtype: str):
    overrides = {"precision.dtype": dtype, "train.steps": 30, "train.lr": 1e-2, "train.warmup": 5}
    result = _train(run_dir, **overrides)
    assert result.steps_done == 30
    assert result.num_skipped_steps == 0
    # Starts at ln(vocab) = 5.5 nats (uniform guess); the synthetic cycles are learnable.
    last = sum(result.losses[-5:]) / 5
    assert last < result.losses[0] - 0.5, result.losses


def _tiny_resnet(**extra):
    return {
        "model.kind": "resnet",
        "model.arch": "resnet10",
        "model.num_classes": 4,
        "model.image_size": 16,
        "train.micro_batch": 16,
        "train.weight_decay": 0.0,
        "train.lr": 3e-3,
        **extra,
    }


# fp16 autocast is many times slower than bf16 on CPUs without fp16 matmul units: 3 steps there.
@pytest.mark.slow
@pytest.mark.parametrize(("dtype", "steps"), [("fp32", 5), ("bf16", 5), ("fp16", 3)])
def test_tiny_resnet_loss_decreases(run_dir: Path, dtype: str, steps: int):
    result = _train(run_dir, **_tiny_resnet(**{"precision.dtype": dtype, "train.steps": steps}))
    assert result.unit_name == "images"
    assert result.num_skipped_steps == 0
    # Synthetic images are class prototypes plus noise: a working loop separates 4 classes fast.
    assert result.losses[-1] < 0.5 * result.losses[0], result.losses


def test_accumulation_matches_one_big_batch(tmp_path: Path):
    """micro-batch 2 x accumulation 4 takes the same optimizer steps as micro-batch 8."""
    common = {"train.steps": 3, "train.grad_clip": 0.5}
    small = _train(tmp_path / "accum", **common, **{"train.micro_batch": 2, "train.grad_accum": 4})
    big = _train(tmp_path / "big", **common, **{"train.micro_batch": 8, "train.grad_accum": 1})
    assert small.losses == pytest.approx(big.losses, rel=1e-5)
    a, b = checkpoint_weights(small.checkpoint), checkpoint_weights(big.checkpoint)
    max_diff = max((a[k] - b[k]).abs().max().item() for k in a)
    assert max_diff < 1e-5, f"max abs parameter difference {max_diff}"


def test_cosine_schedule_with_warmup():
    train_section = TrainSection(steps=110, warmup=10, lr=1.0, min_lr_ratio=0.1)
    assert lr_at(0, train_section) == pytest.approx(0.1)
    assert lr_at(9, train_section) == pytest.approx(1.0)
    assert lr_at(60, train_section) == pytest.approx(0.55)
    assert lr_at(110, train_section) == pytest.approx(0.1)
    lrs = [lr_at(s, train_section) for s in range(10, 110)]
    assert all(x >= y for x, y in itertools.pairwise(lrs))


def test_metrics_log_result_and_callbacks(run_dir: Path):
    seen: list[StepMetrics] = []
    result = _train(run_dir, callbacks=[seen.append], **{"train.steps": 4})
    assert [m.step for m in seen] == [1, 2, 3, 4]
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines] == [1, 2, 3, 4]
    assert lines[-1]["loss"] == pytest.approx(result.final_loss)
    first = seen[0]
    assert first.units_per_s == pytest.approx(4 * 32 / first.step_time_s)
    assert first.mfu is None  # CPU: no peak in the hardware-facts table, so no MFU guess
    assert first.peak_memory_bytes and first.peak_memory_bytes > 10 * 2**20
    # The loop returns the result document; only the driver (rocmkit train) saves result.json.
    assert not (run_dir / "result.json").exists()
    saved = result.run
    assert saved is not None and saved.kind == "train"
    assert saved.environment["torch_device"] == "cpu"
    assert saved.config["train"]["steps"] == 4
    tokens = saved.select(metric="tokens_per_s")
    assert tokens and tokens[0].value == pytest.approx(result.units_per_s)
    assert saved.select(metric="mfu")[0].value is None


def test_nan_loss_stops_and_keeps_last_good_checkpoint(run_dir: Path):
    overrides = {
        "train.lr": 1e30,
        "train.warmup": 0,
        "train.grad_clip": 0,
        "checkpoint.every": 1,
        "train.steps": 6,
    }
    with pytest.raises(NonFiniteLossError, match=r"loss is nan at step 2.*checkpoint \(step 1\)"):
        _train(run_dir, **overrides)
    checkpoints = run_dir / "checkpoints"
    assert (checkpoints / "latest").read_text().strip() == "step_00000001"
    weights = checkpoint_weights(checkpoints)
    assert all(torch.isfinite(w).all() for w in weights.values())


def test_fp16_overflow_skips_steps_and_counts_them(run_dir: Path):
    seen: list[StepMetrics] = []
    result = _train(
        run_dir,
        callbacks=[seen.append],
        **{"precision.dtype": "fp16", "precision.loss_scale_init": 1e20, "train.steps": 2},
    )
    assert result.num_skipped_steps == 2
    assert [m.skipped for m in seen] == [True, True]
    assert seen[1].loss_scale is not None and seen[1].loss_scale < 1e20
    assert all(math.isfinite(m.loss) for m in seen)


@pytest.mark.parametrize(
    "memory_saver",
    [
        {"train.activation_checkpointing": "true"},
        pytest.param({"train.compile": "true"}, marks=pytest.mark.slow),
    ],
    ids=["activation_checkpointing", "compile"],
)
def test_memory_savers_do_not_change_the_result(tmp_path: Path, memory_saver):
    # One loss implementation for both (auto picks chunked in eager, plain when compiled; their
    # agreement is tested in test_fast_path.py).
    common = {"train.steps": 3, "model.dropout": 0.0, "model.loss_impl": "plain"}
    plain = _train(tmp_path / "plain", **common)
    saver = _train(tmp_path / "saver", **common, **memory_saver)
    assert saver.losses == pytest.approx(plain.losses, rel=1e-5)
    a, b = checkpoint_weights(plain.checkpoint), checkpoint_weights(saver.checkpoint)
    # Compiled, the loss's log-softmax is fused: gradients differ at rounding level, and AdamW's
    # normalised update (lr 3e-3 here) turns that into weight differences of a small part of lr.
    assert max((a[k] - b[k]).abs().max().item() for k in a) < 1e-4


def test_mfu_uses_the_hardware_facts_peak_and_never_guesses():
    from rocmkit.platform import DeviceInfo, Platform
    from rocmkit.platform.specs import lookup_spec
    from rocmkit.train.metrics import mfu, peak_flops_per_device

    mi300x = DeviceInfo(index=0, name="AMD Instinct MI300X", vendor="amd", arch="gfx942")
    gpu = Platform(backend="rocm", torch_version="x", devices=(mi300x,), gpu_available=True)
    spec = lookup_spec("gfx942", "AMD Instinct MI300X")
    if spec is None or spec.peak_for("bf16") is None:
        pytest.skip("the hardware-facts table has no MI300X bf16 row")
    peak = peak_flops_per_device(gpu, "bf16")
    assert peak == pytest.approx(spec.peak_for("bf16") * 1e12)
    # 1e12 FLOPs per sample x 8 samples in 0.1 s = 80 TFLOP/s achieved.
    assert mfu(1e12, 8, 0.1, peak) == pytest.approx(80e12 / peak)
    unknown = DeviceInfo(index=0, name="Some GPU", vendor="unknown", arch="gfx9999")
    other = Platform(backend="rocm", torch_version="x", devices=(unknown,), gpu_available=True)
    assert peak_flops_per_device(other, "bf16") is None
    assert mfu(1e12, 8, 0.1, None) is None
    assert peak_flops_per_device(Platform(backend="cpu", torch_version="x"), "fp32") is None


def test_an_fp32_run_is_bounded_by_the_tf32_peak_it_may_use():
    """fp32 runs multiply in TF32/XF32 unless strict_fp32 (train.device): their MFU is against
    that peak, not the CUDA-core fp32 one (an H200 showed 189 % MFU); chips without TF32/XF32
    keep the fp32 peak."""
    from rocmkit.platform import DeviceInfo, Platform
    from rocmkit.train.config import PrecisionConfig
    from rocmkit.train.metrics import peak_flops_per_device
    from rocmkit.train.precision import peak_dtype_name

    def peak(name: str, arch: str, **precision: object) -> float | None:
        device = DeviceInfo(index=0, name=name, vendor="x", arch=arch)
        gpu = Platform(backend="cuda", torch_version="x", devices=(device,), gpu_available=True)
        return peak_flops_per_device(gpu, peak_dtype_name(PrecisionConfig(**precision)))

    assert peak("NVIDIA H200", "sm_90", dtype="fp32") == pytest.approx(494.7e12)
    assert peak("NVIDIA H200", "sm_90", dtype="fp32", strict_fp32=True) == pytest.approx(67e12)
    assert peak("NVIDIA H200", "sm_90", dtype="bf16") == pytest.approx(989.4e12)
    assert peak("AMD Instinct MI300X", "gfx942", dtype="fp32") == pytest.approx(653.7e12)
    assert peak("AMD Instinct MI250X", "gfx90a", dtype="fp32") == pytest.approx(95.7e12)


def test_a_cpu_run_on_a_gpu_machine_has_no_mfu(run_dir: Path):
    """The GPU's peak says nothing about a run on the CPU (found on an H200 box)."""
    from rocmkit.platform import DeviceInfo, Platform
    from rocmkit.platform.specs import lookup_spec

    mi300x = DeviceInfo(index=0, name="AMD Instinct MI300X", vendor="amd", arch="gfx942")
    if lookup_spec("gfx942", "AMD Instinct MI300X") is None:
        pytest.skip("the hardware-facts table has no MI300X row")
    gpu_box = Platform(backend="rocm", torch_version="x", devices=(mi300x,), gpu_available=True)
    seen: list[StepMetrics] = []
    config = load_train_config(preset="gpt-tiny", overrides=tiny_overrides(run_dir))
    train(config, gpu_box, callbacks=[seen.append])
    assert seen and all(m.mfu is None for m in seen)


def test_public_api_is_pinned():
    import rocmkit.train

    assert rocmkit.train.__all__ == [
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


def test_fsdp_bf16_parameters_keep_fp32_master_weights(run_dir: Path):
    """FSDP2 without a launcher runs as a 1-rank group; bf16 compute, fp32 sharded masters."""
    result = _train(
        run_dir,
        **{
            "parallel.mode": "fsdp",
            "precision.dtype": "bf16",
            "precision.param_dtype": "bf16",
            "train.steps": 12,
            "train.lr": 1e-2,
        },
    )
    assert result.losses[-1] < result.losses[0]
    weights = checkpoint_weights(result.checkpoint)
    assert {w.dtype for w in weights.values()} == {torch.float32}


def test_gpu_out_of_memory_suggests_concrete_changes():
    from rocmkit.errors import UserError
    from rocmkit.train.failures import oom_advice

    config = load_train_config(
        preset="gpt-tiny", overrides={"train.micro_batch": "16", "train.grad_accum": "2"}
    )
    with pytest.raises(UserError) as info, oom_advice(config.train):
        raise torch.OutOfMemoryError("CUDA out of memory")
    message = str(info.value)
    assert "micro_batch 16 x grad_accum 2" in message
    assert "--micro-batch 8 --grad-accum 4 (same global batch)" in message
    assert "--train.activation_checkpointing true" in message


@pytest.mark.gpu
def test_gpu_run_reports_allocator_memory_and_mfu_when_known(run_dir: Path):
    from rocmkit.platform import detect
    from rocmkit.train.metrics import peak_flops_per_device

    platform = detect()
    config = load_train_config(
        preset="gpt-tiny",
        overrides=tiny_overrides(
            run_dir, **{"precision.dtype": "bf16", "train.steps": 5, "train.device": "cuda"}
        ),
    )
    seen: list[StepMetrics] = []
    result = train(config, platform=platform, callbacks=[seen.append])
    assert result.peak_memory_bytes and result.peak_memory_bytes < 2**30  # allocator, not RSS
    known = peak_flops_per_device(platform, "bf16") is not None
    assert (seen[-1].mfu is not None) == known
    assert result.run is not None and result.run.environment["torch_device"] == "cuda"


def test_metrics_jsonl_stays_strict_json_when_a_loss_is_not_finite(tmp_path: Path):
    import json

    from rocmkit.train.metrics import JsonlLog

    log = JsonlLog(tmp_path)
    log.write({"step": 1, "loss": float("nan"), "grad_norm": float("inf")})
    log.close()
    (line,) = (tmp_path / "metrics.jsonl").read_text().splitlines()
    record = json.loads(line, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
    assert record == {"step": 1, "loss": None, "grad_norm": "inf"}


def test_result_json_writes_mfu_as_a_percent_like_every_command(tmp_path: Path):
    """bench wrote mfu in percent and train as a fraction; a report put 41 next to 0.41."""
    from rocmkit.results import UNITS
    from rocmkit.train.metrics import StepMetrics, summarize

    step = {"loss": 2.0, "lr": 1e-3, "grad_norm": 1.0, "step_time_s": 0.1, "units_per_s": 10.0}
    history = [
        StepMetrics(step=i, units_per_s_per_device=10.0, mfu=0.41, peak_memory_bytes=None, **step)
        for i in (1, 2)
    ]
    config = {
        "preset": "gpt-tiny",
        "precision": {"dtype": "bf16"},
        "parallel": {"mode": "none"},
        "train": {"micro_batch": 1, "grad_accum": 1},
    }
    result = summarize(
        config=config,
        history=history,
        unit_name="tokens",
        num_skipped_steps=0,
        run_dir=tmp_path,
        world_size=1,
    )
    (mfu,) = [m for m in result.measurements if m.metric == "mfu"]
    assert (mfu.value, mfu.unit) == (pytest.approx(41.0), UNITS["mfu"])
