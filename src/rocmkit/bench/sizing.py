"""Device sizing of the built-in bench suites: problem sizes that fill a GPU or suit a small CPU.

Each function returns the suite's config as a dict (the base under the user's overrides); the
suite registry in `rocmkit.bench.suites` names one per suite.
"""

from __future__ import annotations

from typing import Any, Literal

from rocmkit.bench.train_precision import TrainPrecisionConfig
from rocmkit.config import to_dict
from rocmkit.measure.timing import TimingConfig
from rocmkit.platform import Platform

Mode = Literal["quick", "full"]
# PyTorch and, for the GPT presets, JAX side by side (a note row when JAX is not installed).
TRAIN_BACKENDS = ["torch", "jax"]


def timing_for(platform: Platform, mode: Mode) -> TimingConfig:
    """Timing budgets: GPUs take many short samples, a CPU few (it is slower and shared)."""
    if platform.gpu_available:
        return TimingConfig(
            warmup=5,
            min_samples=10,
            max_samples=200,
            budget_s=0.5 if mode == "quick" else 2.0,
            flush_cache=False,
        )
    return TimingConfig(
        warmup=1, min_samples=3, max_samples=50, budget_s=0.25 if mode == "quick" else 1.0
    )


def gemm_defaults(platform: Platform, mode: Mode) -> dict[str, Any]:
    quick = mode == "quick"
    if platform.gpu_available:
        sizes = [2048, 4096, 8192] if quick else [1024, 2048, 4096, 8192, 16384]
        dtypes = ["fp32", "tf32", "fp16", "bf16", "fp8"]
    else:
        sizes = [256, 512] if quick else [256, 512, 1024]
        dtypes = ["fp32", "bf16"] if quick else ["fp32", "fp16", "bf16"]
    return {"sizes": sizes, "dtypes": dtypes, "timing": to_dict(timing_for(platform, mode))}


def bandwidth_defaults(platform: Platform, mode: Mode) -> dict[str, Any]:
    quick = mode == "quick"
    if platform.gpu_available:
        memory = platform.devices[0].total_memory_bytes if platform.devices else None
        big_mib = 1024 if memory is None or memory >= 16 * 2**30 else 256
        sizes = [16, 256, big_mib] if quick else [1, 4, 16, 64, 256, big_mib]
    else:
        sizes = [4, 16] if quick else [1, 4, 16, 64]
    return {"sizes_mib": sizes, "timing": to_dict(timing_for(platform, mode))}


def collectives_defaults(platform: Platform, mode: Mode) -> dict[str, Any]:
    top = 28 if platform.gpu_available else 20
    return {"sizes_bytes": [2**p for p in range(10, top + 1, 2 if mode == "quick" else 1)]}


def attention_defaults(platform: Platform, mode: Mode) -> dict[str, Any]:
    if platform.gpu_available:
        shape = {"batch": 4, "num_heads": 16, "seq_len": 2048, "head_dim": 128}
        dtypes = ["fp16", "bf16"]
    else:
        shape = {"batch": 1, "num_heads": 4, "seq_len": 256, "head_dim": 64}
        dtypes = ["fp32", "bf16"]
    return {**shape, "dtypes": dtypes, "timing": to_dict(timing_for(platform, mode))}


def train_precision_defaults(platform: Platform, mode: Mode) -> dict[str, Any]:
    return to_dict(_train_sizes(platform.gpu_available, mode == "quick"))


def _train_sizes(gpu: bool, quick: bool) -> TrainPrecisionConfig:
    """Models big enough to keep the device busy, small enough to finish in the mode's time."""
    if gpu and not quick:
        return TrainPrecisionConfig(
            models=["gpt2-124m", "resnet50"], steps=50, backends=TRAIN_BACKENDS
        )
    if gpu:
        # gpt-tiny widened to ~45M parameters: the preset itself is launch-bound on a GPU.
        gpt = {
            "model": {
                "n_layer": 6,
                "d_model": 512,
                "n_head": 8,
                "seq_len": 512,
                "vocab_size": 50304,
            },
            "train": {"micro_batch": 16},
        }
        return TrainPrecisionConfig(
            models=["gpt-tiny", "resnet18"],
            steps=20,
            overrides={"gpt-tiny": gpt},
            backends=TRAIN_BACKENDS,
        )
    small = {
        "gpt-tiny": {"model": {"seq_len": 64, "vocab_size": 512}, "train": {"micro_batch": 4}},
        "resnet18": {"model": {"image_size": 32, "num_classes": 10}, "train": {"micro_batch": 4}},
    }
    return TrainPrecisionConfig(
        models=list(small), steps=6 if quick else 12, overrides=small, backends=TRAIN_BACKENDS
    )
