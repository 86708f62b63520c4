"""`rocmkit profile train|infer|memory` below the command line: the config each one runs, and
the result document (result.json, and what `--json` prints) each one gives.

A profile's answer is mostly not numbers (where the time went, which hints fired), so the
document carries the summary and the hints in `data`, and the headline numbers as measurements.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rocmkit.atomic import check_writable_file
from rocmkit.config import to_dict
from rocmkit.errors import UserError, warn_once
from rocmkit.options import option
from rocmkit.profile.estimator import (
    EstimateConfig,
    MemoryEstimate,
    ModelShape,
    estimate,
    normalise_sharding,
)
from rocmkit.profile.runs import (
    TRACE_FILE,
    InferProfile,
    MemoryComparison,
    profile_inference,
    profile_training,
    shape_from_model_config,
)
from rocmkit.profile.trace import ProfileSchedule
from rocmkit.results import Measurement, RunResult

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from rocmkit.platform import Platform
    from rocmkit.profile.hints import Hint
    from rocmkit.profile.runs import TrainProfile
    from rocmkit.profile.summary import TraceSummary
    from rocmkit.train import TrainConfig

SHAPE_FIELDS = ("n_layer", "d_model", "n_head", "seq_len", "vocab_size")


@dataclass(kw_only=True)
class ScheduleOptions:
    """The step schedule and listing of `profile train` and `profile infer` (their flags are
    generated from these fields by `rocmkit.options`)."""

    wait: int = option(1, "steps run before profiling (default 1)")
    warmup: int = option(1, "profiled but discarded steps (default 1)")
    active: int = option(3, "recorded steps (default 3)")
    top: int = option(10, "operators/kernels to list (default 10)")
    threads: int | None = option(
        None, "torch CPU threads on CPU (default: OMP_NUM_THREADS, else the cores free at start)"
    )

    def __post_init__(self) -> None:
        if self.top < 1:
            raise UserError(f"--top must be at least 1 (got {self.top})")
        if self.threads is not None and self.threads < 1:
            raise UserError(f"--threads must be a positive integer (got {self.threads})")

    def schedule(self) -> ProfileSchedule:
        """The profiler's step schedule (ProfileSchedule checks wait, warmup and active)."""
        return ProfileSchedule(wait=self.wait, warmup=self.warmup, active=self.active)


def make_schedule(*, wait: int, warmup: int, active: int, top: int) -> ProfileSchedule:
    """The profiler's step schedule; `top` (operators listed) is checked here too."""
    return ScheduleOptions(wait=wait, warmup=warmup, active=active, top=top).schedule()


def profile_train_config(
    *, preset: str | None, path: str | None, overrides: Mapping[str, Any]
) -> TrainConfig:
    """The training config a profile runs: the schedule, not train.steps, sets its length."""
    from rocmkit.train import load_train_config

    if not preset and not path:
        raise UserError("profile train needs --preset NAME or --config FILE")
    given = dict(overrides)
    if given.pop("train.steps", None) is not None:
        warn_once(
            "--train.steps has no effect here: the profile runs --wait + --warmup + --active steps"
        )
    return load_train_config(preset=preset, path=path, overrides=given)


def run_profile_train(
    config: TrainConfig,
    platform: Platform,
    *,
    out: Path,
    schedule: ProfileSchedule,
    monitor_memory: bool = False,
    top_k: int = 10,
    on_step: Callable[[Any], None] | None = None,
) -> tuple[TrainProfile, RunResult]:
    """Profile `config`'s steps into `out` (trace.json, memory.json); return the profile and
    its result document (not yet saved)."""
    check_writable_file(out / TRACE_FILE, what="trace file")
    if config.train.device == "cpu":  # the profile follows the config's device, as train does
        platform = dataclasses.replace(platform, gpu_available=False)
    profile = profile_training(
        config,
        out_dir=out,
        schedule=schedule,
        platform=platform,
        monitor_memory=monitor_memory,
        top_k=top_k,
        on_step=on_step,
    )
    name = config.preset or config.model.kind
    record = summary_record(
        "profile-train", name, profile.summary, profile.hints, to_dict(config), platform
    )
    record.data["trace"] = str(profile.trace_path)
    if profile.memory is not None:
        record.measurements.extend(_memory_rows(profile, name))
    return profile, record


def run_profile_infer(
    model_dir: Path,
    platform: Platform,
    *,
    out: Path,
    schedule: ProfileSchedule,
    prompt: str,
    max_new_tokens: int,
    top_k: int = 10,
) -> tuple[InferProfile, RunResult]:
    """Profile greedy generate() calls of a local Hugging Face model into `out` (trace.json);
    return the profile and its result document (not yet saved)."""
    if max_new_tokens < 1:
        raise UserError(f"--max-new-tokens must be at least 1 (got {max_new_tokens})")
    check_model_dir(model_dir)  # before the output directory is created
    check_writable_file(out / TRACE_FILE, what="trace file")
    profile = profile_inference(
        model_dir,
        out_dir=out,
        schedule=schedule,
        platform=platform,
        prompt=prompt,
        max_new_tokens=max_new_tokens,
        top_k=top_k,
    )
    config = {"model_dir": str(model_dir), "max_new_tokens": max_new_tokens}
    record = summary_record(
        "profile-infer", model_dir.name, profile.summary, profile.hints, config, platform
    )
    record.data["trace"] = str(profile.trace_path)
    return profile, record


def _memory_rows(profile: TrainProfile, name: str) -> list[Measurement]:
    from rocmkit.measure.memory import timeline_measurements

    assert profile.memory is not None
    return timeline_measurements(profile.memory, name=name)


def summary_record(
    kind: str,
    name: str,
    summary: TraceSummary,
    hints: list[Hint],
    config: dict[str, Any],
    platform: Platform,
) -> RunResult:
    """The document of a profiled run: headline numbers, and the summary and hints in `data`."""
    return RunResult(
        kind=kind,
        environment=platform.record(),
        config=config,
        measurements=summary.measurements(name=name),
        data=summary_document(summary, hints),
    )


def summary_document(summary: TraceSummary, hints: list[Hint]) -> dict[str, Any]:
    """The trace summary (shares per category, top operators) and the hints, as plain data."""
    data = dataclasses.asdict(summary)
    data["category_share"] = summary.category_share
    data["data_share"] = summary.data_share
    data["hints"] = [dataclasses.asdict(h) for h in hints]
    return data


def check_model_dir(model_dir: Path) -> None:
    """A local Hugging Face model directory, or a one-line error before anything is written."""
    if not model_dir.is_dir():
        raise UserError(f"model directory not found: {model_dir}")
    if not (model_dir / "config.json").is_file():
        raise UserError(f"{model_dir} is not a Hugging Face model directory (no config.json)")


_SHAPE_HELP = "model shape (overrides the preset)"


@dataclass(kw_only=True)
class EstimateRequest:
    """What `profile memory` is asked: a preset and/or a model shape, how it is trained, and
    whether to measure and draw it: the one config of `rocmkit profile memory` (its flags are
    generated from these fields by `rocmkit.options`). `config` is the EstimateConfig the
    estimator takes, resolved against the preset once (`estimate_config`)."""

    preset: str | None = option(None, "a GPT preset of rocmkit.train (gpt-tiny, gpt2-124m, ...)")
    n_layer: int | None = option(None, _SHAPE_HELP)
    d_model: int | None = option(None, _SHAPE_HELP)
    n_head: int | None = option(None, _SHAPE_HELP)
    seq_len: int | None = option(None, _SHAPE_HELP)
    vocab_size: int | None = option(None, _SHAPE_HELP)
    # default: the preset's, else bf16
    precision: Literal["fp32", "fp16", "bf16", "int8"] | None = option(None)
    parallel: Literal["none", "ddp", "zero1", "zero2", "zero3", "fsdp"] = option("none", "sharding")
    world_size: int = option(1, "data-parallel ranks")
    micro_batch: int | None = option(None, "samples per device (default: preset's)")
    activation_checkpointing: bool = option(False)
    master_weights: bool = option(False, "16-bit params + fp32 master copy")
    mode: Literal["train", "infer"] | None = option(None, "default: infer for int8, else train")
    measure: bool = option(False, "run one step here and compare")
    device: Literal["auto", "cpu", "gpu"] = option(
        "auto", "where --measure runs its step (auto: the GPU when there is one)"
    )
    plot: Path | None = option(None, "write the breakdown chart (PNG) here")

    @functools.cached_property
    def config(self) -> EstimateConfig:
        """The estimator's input: the preset's shape, batch and precision under these settings
        (a bad combination raises UserError)."""
        return estimate_config(self)


def estimate_config(request: EstimateRequest) -> EstimateConfig:
    """The EstimateConfig a request asks for (a preset's shape, batch and precision as defaults)."""
    train_config = _preset_config(request.preset)
    if train_config is not None:
        shape = shape_from_model_config(train_config.model)
    else:
        missing = [n for n in SHAPE_FIELDS if getattr(request, n) is None]
        if missing:
            raise UserError(
                f"give --preset NAME or the model shape (missing --{missing[0].replace('_', '-')})"
            )
        shape = ModelShape(n_layer=1, d_model=1, n_head=1, seq_len=1, vocab_size=1)
    given = {n: getattr(request, n) for n in SHAPE_FIELDS}
    shape = dataclasses.replace(shape, **{k: v for k, v in given.items() if v is not None})
    precision: Any = request.precision or (train_config.precision.dtype if train_config else "bf16")
    default_batch = train_config.train.micro_batch if train_config else 1
    mode: Any = request.mode or ("infer" if request.precision == "int8" else "train")
    return EstimateConfig(
        shape=shape,
        precision=precision,
        sharding=normalise_sharding(request.parallel),  # type: ignore[arg-type]
        world_size=request.world_size,
        micro_batch=request.micro_batch if request.micro_batch is not None else default_batch,
        activation_checkpointing=request.activation_checkpointing,
        master_weights=request.master_weights,
        mode=mode,
        chunked_loss=_chunked_loss(train_config, precision, request.master_weights),
    )


def _preset_config(preset: str | None) -> TrainConfig | None:
    if preset is None:
        return None
    from rocmkit.train import load_train_config

    return load_train_config(preset=preset, world_size=1)


def _chunked_loss(train_config: TrainConfig | None, precision: str, master_weights: bool) -> bool:
    """Whether rocmkit's training runs this configuration with the chunked head + loss."""
    from rocmkit.train import resolve_loss_impl

    setting = train_config.model.loss_impl if train_config is not None else "auto"
    compiled = bool(train_config.train.compile) if train_config is not None else False
    mixed = precision in ("bf16", "fp16") and not master_weights
    return resolve_loss_impl(setting, compiled=compiled, mixed_precision=mixed) == "chunked"


def estimate_record(
    predicted: MemoryEstimate,
    comparison: MemoryComparison | None,
    environment: dict[str, Any] | None = None,
) -> RunResult:
    """The document of a memory estimate: bytes per category as measurements (suite
    "memory-estimate"), the whole estimate and any measured comparison in `data`."""
    document = estimate_document(predicted, comparison)
    measurements = [
        Measurement(
            suite="memory-estimate",
            name=predicted.label,
            metric=f"{category}_bytes",
            value=None if value is None else float(value),
            unit="bytes",
        )
        for category, value in document["bytes"].items()
    ]
    return RunResult(
        kind="profile-memory",
        environment=environment or {},
        config=document["config"],
        measurements=measurements,
        data=document,
    )


def estimate_document(
    predicted: MemoryEstimate, comparison: MemoryComparison | None
) -> dict[str, Any]:
    """The estimate as plain data: config, label, parameters, bytes per category, notes."""
    return {
        "config": dataclasses.asdict(predicted.config),
        "label": predicted.label,
        "num_params": predicted.num_params,
        "bytes": predicted.categories()
        | {"total": predicted.total_bytes, "peak": predicted.peak_bytes},
        "notes": list(predicted.notes),
        "measured": None if comparison is None else comparison.to_dict(),
    }


def chart_estimates(config: EstimateConfig, predicted: MemoryEstimate) -> list[MemoryEstimate]:
    """The estimates the memory chart compares (sharding x world size), the asked one included."""
    from rocmkit.profile.estimator import chart_configs

    estimates = [estimate(c) for c in chart_configs(config, world_size=max(config.world_size, 8))]
    if predicted.label not in {e.label for e in estimates}:
        estimates.append(predicted)
    return estimates


def measure_device(platform: Platform, choice: str) -> str:
    """Where `--measure` runs its step: cpu, the GPU (refused when there is none), or auto."""
    if choice == "cpu":
        return "cpu"
    if choice == "gpu" and not platform.gpu_available:
        raise UserError("--device gpu: torch sees no usable GPU here; use cpu or auto")
    return str(platform.torch_device)
