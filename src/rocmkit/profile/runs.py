"""Profile real work: a few rocmkit.train steps, a few generate() calls, one measured step.

These tie the pure pieces (trace summary, estimator, hints) to rocmkit.train and transformers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmkit import runs
from rocmkit.errors import UserError, require_extra
from rocmkit.measure.memory import CategoryPeaks, MemoryTimeline
from rocmkit.profile.estimator import EstimateConfig, MemoryEstimate, ModelShape, estimate
from rocmkit.profile.hints import Hint, HintInputs, hints
from rocmkit.profile.summary import TraceSummary
from rocmkit.profile.trace import ProfileSchedule, StepProfiler

if TYPE_CHECKING:
    from rocmkit.platform.backend import Platform
    from rocmkit.train import TrainConfig, TrainResult

TRACE_FILE = "trace.json"


@dataclass(kw_only=True)
class TrainProfile:
    """A profiled training run: what dominated it, memory, and what to change."""

    summary: TraceSummary
    train_result: TrainResult
    trace_path: Path
    hints: list[Hint] = field(default_factory=list)
    estimate: MemoryEstimate | None = None
    memory: MemoryTimeline | None = None


def shape_from_model_config(model: Any) -> ModelShape:
    """The estimator's shape of a rocmkit.train ModelConfig (GPT models only)."""
    if getattr(model, "kind", "gpt") != "gpt":
        raise UserError(
            f"the memory estimator models GPT presets only (model.kind is {model.kind})"
        )
    return ModelShape(
        n_layer=model.n_layer,
        d_model=model.d_model,
        n_head=model.n_head,
        seq_len=model.seq_len,
        vocab_size=model.vocab_size,
        bias=model.bias,
        tie_weights=model.tie_weights,
        dropout=model.dropout,
    )


def estimate_for_train_config(config: TrainConfig, *, world_size: int = 1) -> MemoryEstimate | None:
    """The estimator's view of a training config (None for non-GPT models)."""
    from rocmkit.train import resolve_loss_impl

    # The estimator models GPTs in the built-in formats; registered kinds/precisions get none.
    if config.model.kind != "gpt" or config.precision.dtype not in ("fp32", "fp16", "bf16"):
        return None
    sharding = {"none": "none", "ddp": "ddp", "fsdp": "zero3"}[config.parallel.mode]
    return estimate(
        EstimateConfig(
            shape=shape_from_model_config(config.model),
            precision=config.precision.dtype,  # type: ignore[arg-type]  # checked above
            sharding=sharding,  # type: ignore[arg-type]
            world_size=world_size,
            micro_batch=config.train.micro_batch,
            activation_checkpointing=config.train.activation_checkpointing,
            chunked_loss=resolve_loss_impl(
                config.model.loss_impl,
                compiled=config.train.compile,
                mixed_precision=config.precision.dtype in ("bf16", "fp16"),
            )
            == "chunked",
        )
    )


def profile_training(
    config: TrainConfig,
    *,
    out_dir: Path,
    schedule: ProfileSchedule,
    platform: Platform,
    monitor_memory: bool = False,
    top_k: int = 10,
    on_step: Callable[[Any], None] | None = None,
) -> TrainProfile:
    """Run the schedule's steps of `config` under torch.profiler (StepMetrics callback steps it).

    `on_step(metrics)` is called after every step too (the CLI's progress bar)."""
    from rocmkit.train import train

    config.train.steps = schedule.num_steps
    config.checkpoint.save_final = False
    config.checkpoint.every = 0
    config.logging.run_dir = str(out_dir / "train")  # the loop's own metrics.jsonl
    # The profiler's schedule advances on each step's callback, and callbacks come at sync points:
    # one per step here (a single small device read per step, visible in the trace).
    config.logging.log_every = 1
    device = platform.torch_device
    trace_path = out_dir / TRACE_FILE
    # memory.json (and on a GPU the allocator snapshot) go to out_dir when monitoring.
    with (
        StepProfiler(trace_path, schedule, device=device) as prof,
        runs.memory_monitoring(monitor_memory, out_dir, device=device) as monitor,
    ):
        callbacks = [prof.on_step, *([on_step] if on_step is not None else [])]
        result = train(config, platform=platform, callbacks=callbacks)
    summary = prof.summary(top_k=top_k)
    memory = monitor.timeline if monitor is not None else None
    predicted = estimate_for_train_config(config)
    found = hints(_hint_inputs(config, result, summary, platform, predicted, memory))
    return TrainProfile(
        summary=summary,
        train_result=result,
        trace_path=trace_path,
        hints=found,
        estimate=predicted,
        memory=memory,
    )


def _hint_inputs(
    config: TrainConfig,
    result: TrainResult,
    summary: TraceSummary,
    platform: Platform,
    predicted: MemoryEstimate | None,
    memory: MemoryTimeline | None,
) -> HintInputs:
    device_bytes = None
    if platform.gpu_available and platform.devices:
        device_bytes = platform.devices[0].total_memory_bytes
    peak = result.peak_memory_bytes or (memory.peak_allocated_bytes if memory else None)
    data_s = summary.data_time_us * summary.num_steps / 1e6 if summary.data_time_us else None
    return HintInputs(
        trace=summary,
        precision=config.precision.dtype,
        num_steps=result.steps_done,
        num_skipped_steps=result.num_skipped_steps,
        peak_memory_bytes=peak if device_bytes else None,
        device_memory_bytes=device_bytes,
        activation_checkpointing=config.train.activation_checkpointing,
        parallel=config.parallel.mode,
        mfu=result.mfu,
        micro_batch=config.train.micro_batch,
        tokens_per_sample=config.model.seq_len if config.model.kind != "resnet" else 1,
        data_time_s=data_s,
        step_time_s=summary.step_time_us * summary.num_steps / 1e6 if data_s else None,
        estimate=predicted,
    )


@dataclass(kw_only=True)
class InferProfile:
    summary: TraceSummary
    trace_path: Path
    new_tokens_per_call: int
    hints: list[Hint] = field(default_factory=list)


def profile_inference(
    model_dir: Path,
    *,
    out_dir: Path,
    schedule: ProfileSchedule,
    platform: Platform,
    prompt: str = "The quick brown fox",
    max_new_tokens: int = 16,
    top_k: int = 10,
) -> InferProfile:
    """A few greedy generate() calls of a local Hugging Face causal LM under the profiler."""
    model, inputs = _load_local_lm(model_dir, prompt, platform.torch_device)
    import torch

    trace_path = out_dir / TRACE_FILE
    with (
        torch.inference_mode(),
        StepProfiler(trace_path, schedule, device=platform.torch_device) as prof,
    ):
        for _ in range(schedule.num_steps):
            model.generate(
                **inputs,
                max_new_tokens=max_new_tokens,
                min_new_tokens=max_new_tokens,
                do_sample=False,
            )
            if platform.torch_device == "cuda":
                torch.cuda.synchronize()
            prof.step()
    summary = prof.summary(top_k=top_k)
    return InferProfile(
        summary=summary,
        trace_path=trace_path,
        new_tokens_per_call=max_new_tokens,
        hints=hints(HintInputs(trace=summary)),
    )


def _load_local_lm(model_dir: Path, prompt: str, device: str) -> tuple[Any, dict[str, Any]]:
    transformers = require_extra("transformers", "llm")
    if not (model_dir / "config.json").is_file():
        raise UserError(f"{model_dir} is not a Hugging Face model directory (no config.json)")
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise UserError(
            f"cannot load the model in {model_dir}: {str(exc).splitlines()[0]}"
        ) from None
    model = model.to(device).eval()
    input_ids = _prompt_ids(transformers, model_dir, prompt)
    if input_ids is None or input_ids.numel() == 0:
        import torch

        # No usable tokenizer beside the weights: fixed token ids run the same kernels.
        generator = torch.Generator().manual_seed(0)
        input_ids = torch.randint(0, model.config.vocab_size, (1, 8), generator=generator)
    input_ids = input_ids.to(device)
    return model, {"input_ids": input_ids, "attention_mask": input_ids.new_ones(input_ids.shape)}


def _prompt_ids(transformers: Any, model_dir: Path, prompt: str) -> Any:
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        return tokenizer(prompt, return_tensors="pt")["input_ids"]
    except (OSError, ValueError, TypeError, KeyError):
        return None


@dataclass(kw_only=True)
class MemoryComparison:
    """Estimated vs measured bytes per category (rows: estimated, measured, relative error)."""

    device: str
    source: str
    rows: dict[str, dict[str, Any]]
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "source": self.source, "rows": self.rows, "note": self.note}


def compare_with_measurement(
    config: EstimateConfig, *, preset: str | None = None, device: str = "cpu"
) -> MemoryComparison:
    """Run one step of the same GPT/precision/batch here (one process) and compare with `config`."""
    from dataclasses import replace

    from rocmkit.train import load_train_config

    if config.mode == "infer":
        raise UserError("--measure measures training steps: drop --mode infer / int8")
    if config.master_weights:
        raise UserError(
            "--measure runs rocmkit.train, which keeps fp32 parameters: drop --master-weights"
        )
    shape = config.shape
    overrides = {f"model.{k}": getattr(shape, k) for k in _SHAPE_FIELDS} | {
        "model.kind": "gpt",
        "precision.dtype": config.precision,
        "train.micro_batch": config.micro_batch,
        "train.activation_checkpointing": config.activation_checkpointing,
        "data.kind": "synthetic",
    }
    measured_config = load_train_config(
        preset=preset, overrides={k: str(v) for k, v in overrides.items()}, world_size=1
    )
    single = estimate(replace(config, sharding="none", world_size=1))
    from rocmkit.train import step_memory

    peaks = step_memory(measured_config, device=device)
    note = (
        "one process, unsharded (the estimate above is per rank)"
        if config.sharding != "none"
        else ""
    )
    return MemoryComparison(
        device=device, source="torch MemTracker", rows=_comparison_rows(single, peaks), note=note
    )


_SHAPE_FIELDS = (
    "n_layer",
    "d_model",
    "n_head",
    "seq_len",
    "vocab_size",
    "bias",
    "tie_weights",
    "dropout",
)


def _comparison_rows(single: MemoryEstimate, peaks: CategoryPeaks) -> dict[str, dict[str, Any]]:
    # Persistent state is compared after the step; gradients and activations at their maxima.
    measured = {
        "parameters": peaks.after_step_bytes.get("parameters", 0),
        "gradients": peaks.peak_bytes.get("gradients", 0),
        "optimizer": peaks.after_step_bytes.get("optimizer", 0),
        "activations": peaks.peak_bytes.get("activations", 0),
    }
    measured["sum of categories"] = sum(measured.values())
    measured["peak in time"] = peaks.total_peak_bytes
    predicted: dict[str, int] = dict(single.categories())
    predicted["sum of categories"] = single.total_bytes
    predicted["peak in time"] = single.peak_bytes or single.total_bytes
    return {
        name: {
            "estimated": predicted[name],
            "measured": value,
            "error": _relative_error(predicted[name], value),
        }
        for name, value in measured.items()
    }


def _relative_error(predicted: int, measured: int) -> float | None:
    return None if not measured else (predicted - measured) / measured
