"""Suites by name, sized for the device found, and `run_bench(config, platform) -> RunResult`.

Each suite registers a function `(BenchConfig, Platform, PowerSampler | None) -> [Measurement]`.
Sizes scale with the device: a 2-core CPU gets tiny problems, a GPU gets sizes that fill it.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from rocmkit.bench.attention import AttentionConfig, run_attention
from rocmkit.bench.bandwidth import BandwidthConfig, run_bandwidth
from rocmkit.bench.collectives import TORCHRUN_HINT, CollectivesConfig, run_collectives
from rocmkit.bench.gemm import GemmConfig, run_gemm
from rocmkit.bench.ticks import num_figures
from rocmkit.bench.train_precision import (
    TrainPrecisionConfig,
    TrainUnavailable,
    run_train_precision,
)
from rocmkit.config import from_dict, to_dict
from rocmkit.errors import UserError
from rocmkit.measure.noise import prepare_cpu
from rocmkit.measure.power import PowerSampler, average_watts, platform_power_reader
from rocmkit.measure.ticks import listening
from rocmkit.measure.timing import TimingConfig
from rocmkit.platform import Platform
from rocmkit.results import Measurement, RunResult

Mode = Literal["quick", "full"]
Device = Literal["auto", "cpu", "gpu"]
DEFAULT_SUITES = ("gemm", "bandwidth", "train-precision")
# Environment variables that change what a benchmark measures; recorded with every run.
ENV_PREFIXES = (
    "HIP_",
    "ROCR_",
    "HSA_",
    "CUDA_",
    "NCCL_",
    "RCCL_",
    "HIPBLASLT_",
    "PYTORCH_",
    "TORCH_",
    "OMP_",
    "MIOPEN_",
)


@dataclass(kw_only=True)
class BenchConfig:
    """What to run. Suite configs left as None are sized for the device by `sized_for`."""

    suites: list[str] = field(default_factory=lambda: list(DEFAULT_SUITES))
    mode: Mode = "quick"
    label: str | None = None
    power: bool = True
    device: Device = "auto"  # cpu: measure the CPU even when a GPU is there
    threads: int | None = None  # torch CPU threads; None: as many as there are free cores
    gemm: GemmConfig | None = None
    bandwidth: BandwidthConfig | None = None
    collectives: CollectivesConfig | None = None
    attention: AttentionConfig | None = None
    train_precision: TrainPrecisionConfig | None = None

    def __post_init__(self) -> None:
        for name in self.suites:
            get_suite(name)
        if self.mode not in ("quick", "full"):
            raise UserError(f"bench mode must be quick or full (got {self.mode!r})")
        if self.device not in ("auto", "cpu", "gpu"):
            raise UserError(f"bench device must be auto, cpu or gpu (got {self.device!r})")
        if self.threads is not None and self.threads < 1:
            raise UserError(f"bench threads must be at least 1 (got {self.threads})")


SUITE_CONFIGS: dict[str, type] = {
    "gemm": GemmConfig,
    "bandwidth": BandwidthConfig,
    "collectives": CollectivesConfig,
    "attention": AttentionConfig,
    "train_precision": TrainPrecisionConfig,
}

SuiteFn = Callable[[BenchConfig, Platform, "PowerSampler | None"], list[Measurement]]


@dataclass(frozen=True, kw_only=True)
class Suite:
    name: str
    description: str
    run: SuiteFn
    needs_torchrun: bool = False


SUITES: dict[str, Suite] = {}


def register_suite(suite: Suite) -> Suite:
    SUITES[suite.name] = suite
    return suite


def get_suite(name: str) -> Suite:
    if name not in SUITES:
        raise UserError(f"unknown bench suite {name!r}; choose from {', '.join(sorted(SUITES))}")
    return SUITES[name]


def timing_for(platform: Platform, mode: Mode) -> TimingConfig:
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


def device_defaults(platform: Platform, mode: Mode) -> dict[str, Any]:
    """Suite configs (as dicts) sized for this device and mode: the base under user overrides."""
    gpu, quick = platform.gpu_available, mode == "quick"
    timing = to_dict(timing_for(platform, mode))
    memory = platform.devices[0].total_memory_bytes if gpu and platform.devices else None
    big_mib = 1024 if memory is None or memory >= 16 * 2**30 else 256
    if gpu:
        gemm = {
            "sizes": [2048, 4096, 8192] if quick else [1024, 2048, 4096, 8192, 16384],
            "dtypes": ["fp32", "tf32", "fp16", "bf16", "fp8"],
        }
        bandwidth = [16, 256, big_mib] if quick else [1, 4, 16, 64, 256, big_mib]
        attention = {
            "batch": 4,
            "num_heads": 16,
            "seq_len": 2048,
            "head_dim": 128,
            "dtypes": ["fp16", "bf16"],
        }
    else:
        gemm = {
            "sizes": [256, 512] if quick else [256, 512, 1024],
            "dtypes": ["fp32", "bf16"] if quick else ["fp32", "fp16", "bf16"],
        }
        bandwidth = [4, 16] if quick else [1, 4, 16, 64]
        attention = {
            "batch": 1,
            "num_heads": 4,
            "seq_len": 256,
            "head_dim": 64,
            "dtypes": ["fp32", "bf16"],
        }
    top = 28 if gpu else 20
    return {
        "gemm": {**gemm, "timing": timing},
        "bandwidth": {"sizes_mib": bandwidth, "timing": dict(timing)},
        "collectives": {"sizes_bytes": [2**p for p in range(10, top + 1, 2 if quick else 1)]},
        "attention": {**attention, "timing": dict(timing)},
        "train_precision": to_dict(_train_sizes(gpu, quick)),
    }


def sized_for(config: BenchConfig, platform: Platform) -> BenchConfig:
    """Fill every suite config left as None with `device_defaults`."""
    defaults = device_defaults(platform, config.mode)
    filled = {
        name: getattr(config, name)
        or from_dict(SUITE_CONFIGS[name], defaults[name], prefix=f"{name}.")
        for name in SUITE_CONFIGS
    }
    return dataclasses.replace(config, **filled)


# PyTorch and, for the GPT presets, JAX side by side (a note row when JAX is not installed).
BACKENDS = ["torch", "jax"]


def _train_sizes(gpu: bool, quick: bool) -> TrainPrecisionConfig:
    """Models big enough to keep the device busy, small enough to finish in the mode's time."""
    if gpu and not quick:
        return TrainPrecisionConfig(models=["gpt2-124m", "resnet50"], steps=50, backends=BACKENDS)
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
            backends=BACKENDS,
        )
    small = {
        "gpt-tiny": {"model": {"seq_len": 64, "vocab_size": 512}, "train": {"micro_batch": 4}},
        "resnet18": {"model": {"image_size": 32, "num_classes": 10}, "train": {"micro_batch": 4}},
    }
    return TrainPrecisionConfig(
        models=list(small), steps=6 if quick else 12, overrides=small, backends=BACKENDS
    )


def _gemm(
    config: BenchConfig, platform: Platform, sampler: PowerSampler | None
) -> list[Measurement]:
    assert config.gemm is not None
    return run_gemm(config.gemm, platform)


def _bandwidth(
    config: BenchConfig, platform: Platform, sampler: PowerSampler | None
) -> list[Measurement]:
    assert config.bandwidth is not None
    return run_bandwidth(config.bandwidth, platform)


def _collectives(
    config: BenchConfig, platform: Platform, sampler: PowerSampler | None
) -> list[Measurement]:
    assert config.collectives is not None
    return run_collectives(config.collectives, platform)


def _attention(
    config: BenchConfig, platform: Platform, sampler: PowerSampler | None
) -> list[Measurement]:
    assert config.attention is not None
    return run_attention(config.attention, platform)


def _train_precision(
    config: BenchConfig, platform: Platform, sampler: PowerSampler | None
) -> list[Measurement]:
    assert config.train_precision is not None
    return run_train_precision(config.train_precision, platform, sampler)


register_suite(
    Suite(name="gemm", description="matmul TFLOPS per size and dtype, % of peak", run=_gemm)
)
register_suite(
    Suite(name="bandwidth", description="device copy/triad and host<->device GB/s", run=_bandwidth)
)
register_suite(
    Suite(
        name="collectives",
        description="all_reduce & co. algbw/busbw (under torchrun)",
        run=_collectives,
        needs_torchrun=True,
    )
)
register_suite(
    Suite(name="attention", description="SDPA fwd/bwd per backend and dtype", run=_attention)
)
register_suite(
    Suite(
        name="train-precision",
        description="same model at fp32/fp16/bf16 via rocmkit.train",
        run=_train_precision,
    )
)


def on_device(platform: Platform, device: Device) -> Platform:
    """The platform a run with `device` sees: `cpu` hides the GPU from the suites."""
    if device == "cpu":
        return dataclasses.replace(platform, gpu_available=False)
    if device == "gpu" and not platform.gpu_available:
        raise UserError("device gpu asked for, but torch sees no usable GPU here; use cpu or auto")
    return platform


def environment_record(platform: Platform) -> dict[str, Any]:
    """platform.record() plus the environment variables and thread count that change results."""
    import torch

    record = platform.record()
    record.setdefault(
        "env_vars", {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)}
    )
    record["torch_num_threads"] = torch.get_num_threads()
    return record


def run_bench(
    config: BenchConfig,
    platform: Platform,
    *,
    power_reader: Callable[[], float | None] | None = None,
    on_suite: Callable[[str, int], None] | None = None,
    on_note: Callable[[str], None] | None = None,
    on_figure: Callable[[], None] | None = None,
) -> RunResult:
    """Run the configured suites on `platform` and return one RunResult.

    `on_suite(name, num_figures)` is called as each suite starts and `on_figure()` as each of its
    figures (or training runs) is done: enough for a progress bar with an ETA per suite.

    Ctrl-C (KeyboardInterrupt) stops at once: the suites that finished are returned, and the
    result says `partial` and which suite was interrupted.
    """
    import torch

    _check_launch(config)
    platform = on_device(platform, config.device)
    config = sized_for(config, platform)
    reader, reader_name = (
        (power_reader, "injected")
        if power_reader
        else platform_power_reader(platform, enabled=config.power)
    )
    measurements: list[Measurement] = []
    load: dict[str, Any] = {}
    interrupted = None
    saved_threads = torch.get_num_threads()
    try:
        for name in config.suites:
            interrupted = name
            load[name] = prepare_cpu(
                config.threads, on_cpu=not platform.gpu_available, on_note=on_note
            )
            if on_suite is not None:
                on_suite(name, num_figures(name, config, platform))
            with listening(on_figure):
                measurements.extend(_run_suite(get_suite(name), config, platform, reader))
            interrupted = None
    except KeyboardInterrupt:
        if on_note is not None:
            on_note(f"interrupted during {interrupted}: keeping the suites that finished")
    finally:
        environment = environment_record(platform)
        torch.set_num_threads(saved_threads)
    if reader is None:
        measurements.append(_no_sensor(reader_name))
    result = RunResult(
        kind="bench",
        environment=environment,
        config=to_dict(config),
        measurements=measurements,
        label=config.label,
    )
    result.environment["power_reader"] = reader_name if reader else None
    result.environment["load"] = load
    if interrupted is not None:
        result.partial = f"interrupted (Ctrl-C) during the {interrupted} suite"
    return result


def _no_sensor(reader_name: str) -> Measurement:
    return Measurement(
        suite="power",
        name="sensor",
        metric="avg_power",
        value=None,
        unit="W",
        extra={"skipped": reader_name},
    )


def _check_launch(config: BenchConfig) -> None:
    """Fail before any suite runs when one needs torchrun and this process was not started by it."""
    import torch.distributed as dist

    launched = "WORLD_SIZE" in os.environ and "MASTER_ADDR" in os.environ
    for name in config.suites:
        if get_suite(name).needs_torchrun and not launched and not dist.is_initialized():
            raise UserError(f"the {name} suite runs under torchrun: {TORCHRUN_HINT}")


def _run_suite(
    suite: Suite, config: BenchConfig, platform: Platform, reader: Callable[[], float | None] | None
) -> list[Measurement]:
    sampler = PowerSampler(reader).start() if reader else None
    start = sampler.now() if sampler else time.monotonic()
    try:
        rows = suite.run(config, platform, sampler)
    except TrainUnavailable as exc:
        rows = [
            Measurement(
                suite=suite.name,
                name="(suite)",
                metric="throughput",
                value=None,
                unit="",
                extra={"skipped": str(exc)},
            )
        ]
    finally:
        if sampler is not None:
            sampler.stop()
    if sampler is None:
        return rows
    end = sampler.now()
    samples = sampler.samples()
    energy = sampler.energy_j(start, end)
    watts = average_watts(samples, start, end)
    common: dict[str, Any] = {
        "suite": "power",
        "name": suite.name,
        "params": {"suite": suite.name},
        "extra": {"num_samples": len(samples), "duration_s": end - start},
    }
    return [
        *rows,
        Measurement(metric="avg_power", value=watts, unit="W", **common),
        Measurement(metric="energy", value=energy, unit="J", **common),
    ]
