"""TrainConfig: every setting of a training run, from a preset TOML, a --config file and overrides.

Sections: model and data (defined beside the models and data code), train, precision, parallel,
checkpoint, logging. Invalid combinations fail at construction with a UserError that says what to
change; checks that depend on the launch (world size) run in `check_world_size`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from rocmkit.config import flatten_dotted, load_config, load_toml, merge_dotted
from rocmkit.errors import UserError, warn_once
from rocmkit.train.data_config import DataConfig
from rocmkit.train.models import ModelConfig
from rocmkit.train.trackers import check_installed

PRESET_PACKAGE = "rocmkit.train.presets"


@dataclass(kw_only=True)
class TrainSection:
    """The [train] section: batch shape, optimizer, schedule and memory savers."""

    steps: int = field(default=100, metadata={"help": "optimizer steps to run"})
    stop_at_step: int | None = field(
        default=None,
        metadata={
            "help": "end this run after this step (schedule still follows steps); resume later"
        },
    )
    micro_batch: int = field(default=8, metadata={"help": "samples per device per forward"})
    grad_accum: int = field(default=1, metadata={"help": "micro-batches accumulated per step"})
    global_batch: int | None = field(
        default=None,
        metadata={"help": "samples per optimizer step over all ranks; sets grad_accum"},
    )
    lr: float = field(default=3e-4, metadata={"help": "peak learning rate"})
    min_lr_ratio: float = field(default=0.1, metadata={"help": "final lr as a fraction of lr"})
    warmup: int = field(default=10, metadata={"help": "linear warmup steps"})
    weight_decay: float = field(default=0.1, metadata={"help": "AdamW decay (matrices only)"})
    beta1: float = field(default=0.9, metadata={"help": "AdamW beta1"})
    beta2: float = field(default=0.95, metadata={"help": "AdamW beta2"})
    grad_clip: float = field(default=1.0, metadata={"help": "max global grad norm; 0 = off"})
    seed: int = field(default=0, metadata={"help": "seed of the initial weights and dropout"})
    compile: bool = field(default=False, metadata={"help": "torch.compile the model"})
    activation_checkpointing: bool = field(
        default=False, metadata={"help": "recompute each block's activations in backward"}
    )
    optimizer_impl: Literal["auto", "fused", "foreach", "loop"] = field(
        default="auto", metadata={"help": "AdamW kernel: auto = fused on GPU, foreach on CPU"}
    )
    device: Literal["auto", "cpu", "cuda"] = field(
        default="auto", metadata={"help": "auto: the GPU when torch sees one (cuda on ROCm too)"}
    )

    def __post_init__(self) -> None:
        for name in ("steps", "micro_batch", "grad_accum"):
            if getattr(self, name) <= 0:
                raise UserError(
                    f"train.{name} must be a positive integer (got {getattr(self, name)})"
                )
        if self.stop_at_step is not None and self.stop_at_step <= 0:
            raise UserError(f"train.stop_at_step must be positive (got {self.stop_at_step})")
        if self.global_batch is not None and self.global_batch <= 0:
            raise UserError(f"train.global_batch must be positive (got {self.global_batch})")
        if self.lr <= 0:
            raise UserError(f"train.lr must be positive (got {self.lr})")
        if self.warmup < 0 or self.grad_clip < 0 or self.weight_decay < 0:
            raise UserError("train.warmup, train.grad_clip and train.weight_decay must be >= 0")
        if not 0 <= self.min_lr_ratio <= 1:
            raise UserError(f"train.min_lr_ratio must be in [0, 1] (got {self.min_lr_ratio})")


@dataclass(frozen=True, kw_only=True)
class PrecisionSpec:
    """A registered precision policy (the values of precision.dtype).

    `policy` is a `PrecisionPolicy` subclass, or a factory `(PrecisionConfig, device_type)`
    returning one, or a "module:name" reference to either, imported when a run starts (so that
    configs are checked without importing torch). `peak_dtype` names the hardware-facts column
    whose peak bounds this format's matmuls (MFU); `loss_scaling` says whether the
    precision.loss_scale_* settings mean anything for it.
    """

    name: str
    policy: Callable[..., Any] | str
    peak_dtype: str
    loss_scaling: bool = False
    description: str = ""


_PRECISIONS: dict[str, PrecisionSpec] = {}


def register_precision(
    name: str,
    policy: Callable[..., Any] | str,
    *,
    peak_dtype: str,
    loss_scaling: bool = False,
    description: str = "",
) -> PrecisionSpec:
    """Register (or replace) precision policy `name`; precision.dtype accepts it from then on."""
    spec = PrecisionSpec(
        name=name,
        policy=policy,
        peak_dtype=peak_dtype,
        loss_scaling=loss_scaling,
        description=description,
    )
    _PRECISIONS[name] = spec
    return spec


def precision_names() -> list[str]:
    """The registered precision policies."""
    return sorted(_PRECISIONS)


def precision_spec(name: str) -> PrecisionSpec:
    """The registration of precision `name`; UserError naming the known ones when there is none."""
    spec = _PRECISIONS.get(name)
    if spec is None:
        raise UserError(
            f"precision.dtype must be one of {', '.join(precision_names())} (got {name!r}); "
            "a new one is added with rocmkit.train.config.register_precision"
        )
    return spec


_POLICIES = "rocmkit.train.precision"
register_precision(
    "fp32", f"{_POLICIES}:PrecisionPolicy", peak_dtype="fp32", description="no autocast"
)
register_precision(
    "bf16", f"{_POLICIES}:AutocastPolicy", peak_dtype="bf16", description="bf16 autocast"
)
register_precision(
    "fp16",
    f"{_POLICIES}:Fp16Policy",
    peak_dtype="fp16",
    loss_scaling=True,
    description="fp16 autocast with dynamic loss scaling",
)


@dataclass(kw_only=True)
class PrecisionConfig:
    """The [precision] section: autocast dtype, FSDP parameter dtype, fp16 loss scaling."""

    dtype: str = field(
        default="fp32", metadata={"help": "compute dtype: fp32 | fp16 | bf16 | registered"}
    )
    param_dtype: Literal["fp32", "bf16"] | None = field(
        default=None, metadata={"help": "FSDP2 parameter dtype; master weights stay fp32"}
    )
    loss_scale_init: float | None = field(
        default=None, metadata={"help": "fp16 initial loss scale (default 65536)"}
    )
    loss_scale_growth_interval: int | None = field(
        default=None, metadata={"help": "fp16: steps without overflow before the scale doubles"}
    )
    max_consecutive_skips: int = field(
        default=20, metadata={"help": "fp16: stop after this many overflowing steps in a row"}
    )
    strict_fp32: bool = field(
        default=False,
        metadata={"help": "GPU: full-precision fp32 matmuls (default: TF32/XF32 tensor cores)"},
    )

    def __post_init__(self) -> None:
        spec = precision_spec(self.dtype)
        if self.dtype == "fp16" and self.param_dtype == "bf16":
            raise UserError(
                "precision.param_dtype bf16 conflicts with precision.dtype fp16: "
                "use dtype bf16, or drop param_dtype"
            )
        scaler_set = self.loss_scale_init is not None or self.loss_scale_growth_interval is not None
        if scaler_set and not spec.loss_scaling:
            warn_once(
                f"loss scaler settings have no effect with precision.dtype {self.dtype} "
                "(it does not use loss scaling)",
                key="precision.loss_scale",
            )
        if self.loss_scale_init is not None and self.loss_scale_init <= 0:
            raise UserError("precision.loss_scale_init must be positive")
        if self.max_consecutive_skips <= 0:
            raise UserError("precision.max_consecutive_skips must be positive")


@dataclass(kw_only=True)
class ParallelConfig:
    """The [parallel] section. Processes come from torchrun (RANK/WORLD_SIZE/LOCAL_RANK)."""

    mode: Literal["none", "ddp", "fsdp"] = field(
        default="none", metadata={"help": "none | ddp | fsdp (FSDP2 fully_shard per block)"}
    )
    backend: Literal["auto", "nccl", "gloo"] = field(
        default="auto", metadata={"help": "auto: nccl (RCCL on ROCm) on GPU, gloo on CPU"}
    )

    def __post_init__(self) -> None:
        if self.mode != "none":
            import torch.distributed

            if not torch.distributed.is_available():
                raise UserError(
                    f"parallel.mode {self.mode} needs torch.distributed, which this torch build lacks"
                )


@dataclass(kw_only=True)
class CheckpointConfig:
    """The [checkpoint] section: where, how often, how many to keep, and what to resume."""

    dir: str | None = field(default=None, metadata={"help": "default: RUN_DIR/checkpoints"})
    every: int = field(default=0, metadata={"help": "save every N steps; 0 = only at the end"})
    keep: int = field(default=2, metadata={"help": "keep the last K checkpoints"})
    save_final: bool = field(default=True, metadata={"help": "save when training ends"})
    resume: str | None = field(
        default=None, metadata={"help": "auto (latest in dir, if any) or a checkpoint path"}
    )

    def __post_init__(self) -> None:
        if self.every < 0:
            raise UserError(f"checkpoint.every must be >= 0 (got {self.every})")
        if self.keep <= 0:
            raise UserError(f"checkpoint.keep must be at least 1 (got {self.keep})")


@dataclass(kw_only=True)
class LoggingConfig:
    """The [logging] section: run directory (metrics.jsonl, result.json), log cadence, trackers."""

    run_dir: str = field(default="runs/train", metadata={"help": "where logs and results go"})
    log_every: int = field(
        default=10,
        metadata={
            "help": "every N steps: read the loss from the device, check it, write a metrics line"
        },
    )

    tensorboard: bool = field(
        default=False, metadata={"help": "write metrics to RUN_DIR/tensorboard (TensorBoard)"}
    )
    wandb: bool = field(
        default=False, metadata={"help": "log metrics to Weights & Biases (offline by default)"}
    )
    mlflow: bool = field(
        default=False, metadata={"help": "log metrics to MLflow (file store RUN_DIR/mlruns)"}
    )

    def __post_init__(self) -> None:
        if self.log_every <= 0:
            raise UserError(f"logging.log_every must be positive (got {self.log_every})")
        check_installed(self.trackers())

    def trackers(self) -> dict[str, bool]:
        """Which metric trackers are switched on, by name."""
        return {"tensorboard": self.tensorboard, "wandb": self.wandb, "mlflow": self.mlflow}


@dataclass(kw_only=True)
class TrainConfig:
    """A whole training run."""

    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainSection = field(default_factory=TrainSection)
    precision: PrecisionConfig = field(default_factory=PrecisionConfig)
    parallel: ParallelConfig = field(default_factory=ParallelConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    preset: str | None = field(default=None, metadata={"help": "the preset this started from"})

    def __post_init__(self) -> None:
        if self.precision.param_dtype == "bf16" and self.parallel.mode != "fsdp":
            warn_once(
                "precision.param_dtype has no effect without parallel.mode fsdp "
                "(autocast already computes in precision.dtype)",
                key="precision.param_dtype",
            )
        if self.data.path is not None and not Path(self.data.path).exists():
            raise UserError(f"data file not found: {self.data.path}")
        if self.data.kind != "synthetic" and self.data.path is None:
            raise UserError(f"data.kind {self.data.kind} needs a path: --data FILE")

    @property
    def checkpoint_dir(self) -> Path:
        return Path(self.checkpoint.dir or Path(self.logging.run_dir) / "checkpoints")


def available_presets() -> list[str]:
    """Names of the presets shipped with rocmkit."""
    files = resources.files(PRESET_PACKAGE).iterdir()
    return sorted(f.name.removesuffix(".toml") for f in files if f.name.endswith(".toml"))


def preset_data(name: str) -> dict[str, Any]:
    """The settings of preset `name` as a nested dict."""
    if name not in available_presets():
        raise UserError(f"unknown preset '{name}'; available: {', '.join(available_presets())}")
    with resources.as_file(resources.files(PRESET_PACKAGE).joinpath(f"{name}.toml")) as path:
        return load_toml(path)


def load_train_config(
    *,
    preset: str | None = None,
    path: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    world_size: int | None = None,
    file_data: Mapping[str, Any] | None = None,
) -> TrainConfig:
    """preset TOML <- --config file <- dotted overrides; validated, then checked for `world_size`.

    `world_size` defaults to the WORLD_SIZE a launcher such as torchrun sets (1 when absent);
    `file_data` is the --config file's contents when the caller has read it already (the file is
    read once: `rocmkit train` also looks at its `logging.run_dir`).
    """
    base: dict[str, Any] = preset_data(preset) if preset else {}
    if file_data is None and path is not None:
        file_data = load_toml(path)
    if file_data is not None:
        base = merge_dotted(base, flatten_dotted(file_data))
    if preset:
        base["preset"] = preset
    config = load_config(TrainConfig, base=base, overrides=overrides)
    check_world_size(config, world_size if world_size is not None else env_world_size())
    return config


def env_world_size() -> int:
    """WORLD_SIZE from the launcher's environment (1 when not launched by torchrun)."""
    raw = os.environ.get("WORLD_SIZE", "1")
    try:
        return max(1, int(raw))
    except ValueError:
        raise UserError(f"WORLD_SIZE must be an integer (got {raw!r})") from None


def check_world_size(config: TrainConfig, world_size: int) -> None:
    """Resolve train.global_batch into grad_accum for `world_size` ranks, or say why it cannot."""
    train = config.train
    if train.global_batch is None:
        return
    per_step = train.micro_batch * world_size
    if train.global_batch % per_step:
        raise UserError(
            f"train.global_batch {train.global_batch} is not divisible by micro_batch "
            f"{train.micro_batch} x world size {world_size} = {per_step}; "
            "change one of them so it divides"
        )
    train.grad_accum = train.global_batch // per_step
