"""Models for `rocmkit train`: a GPT decoder, torchvision ResNets and local Hugging Face causal LMs.

`build_model(ModelConfig)` looks the kind up in the model registry and returns a `BuiltModel`: the
module, its repeated blocks (for per-block activation checkpointing and FSDP2 `fully_shard`), the
parameter count and the training FLOPs per sample used for MFU.

The registry is open: `register_model("mlp", build_mlp, task="image")` adds a kind that config
loading accepts (`model.kind = "mlp"`), and `model.module = "pkg.mod"` imports a module that
registers one before the kind is checked, so a TOML file alone can name a model defined elsewhere.
The built-ins register here the same way, by "module:function" so that torchvision and
transformers are imported only when their kind is asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from rocmkit.errors import UserError

if TYPE_CHECKING:
    import torch

__all__ = [
    "BuiltModel",
    "ModelConfig",
    "ModelSpec",
    "Task",
    "build_model",
    "model_kinds",
    "model_spec",
    "register_model",
    "resolve_reference",
    "resolved_vocab_size",
]

# What a model eats and how its loss is made: "lm" batches are {"input_ids", "labels"} and the
# module returns the loss from forward(input_ids, labels=labels); "image" batches are
# {"images" [B, 3, H, W], "labels" [B]} and the module returns logits for a cross-entropy.
Task = Literal["lm", "image"]


@dataclass(kw_only=True)
class ModelConfig:
    """The [model] section of a train config."""

    kind: str = field(
        default="gpt",
        metadata={"help": "gpt | resnet (torchvision) | hf (local Hugging Face dir) | registered"},
    )
    module: str | None = field(
        default=None,
        metadata={"help": "Python module imported first; it may register_model() a new kind"},
    )
    options: dict[str, Any] = field(
        default_factory=dict,
        metadata={"help": "settings a registered model kind reads (model.options.KEY)"},
    )
    vocab_size: int = field(default=50304, metadata={"help": "GPT vocabulary size"})
    seq_len: int = field(default=256, metadata={"help": "context length in tokens (gpt and hf)"})
    n_layer: int = field(default=4, metadata={"help": "GPT transformer blocks"})
    n_head: int = field(default=4, metadata={"help": "GPT attention heads"})
    d_model: int = field(default=128, metadata={"help": "GPT hidden size"})
    dropout: float = field(default=0.0, metadata={"help": "GPT dropout probability"})
    bias: bool = field(default=False, metadata={"help": "GPT: biases in Linear and LayerNorm"})
    tie_weights: bool = field(
        default=True, metadata={"help": "GPT: share embedding and output head"}
    )
    arch: str = field(default="resnet18", metadata={"help": "resnet10|resnet18|resnet50|..."})
    num_classes: int = field(default=1000, metadata={"help": "ResNet output classes"})
    image_size: int = field(default=224, metadata={"help": "ResNet input height and width"})
    path: str | None = field(default=None, metadata={"help": "hf: local model directory"})
    from_scratch: bool = field(
        default=False,
        metadata={"help": "hf: random weights from config.json even if weights exist"},
    )
    loss_impl: Literal["auto", "plain", "chunked"] = field(
        default="auto",
        metadata={
            "help": "GPT head + loss: plain, chunked (logits never whole), auto (chunked in "
            "eager bf16/fp16, else plain)"
        },
    )
    channels_last: Literal["auto"] | bool = field(
        default="auto",
        metadata={"help": "ResNet: NHWC memory format (auto: on GPU, where it is faster)"},
    )

    def __post_init__(self) -> None:
        if self.module:
            _import_registering_module(self.module)
        if self.kind not in _REGISTRY:
            raise UserError(
                f"model.kind must be one of {', '.join(model_kinds())} (got {self.kind!r}); "
                "a new kind is added with rocmkit.train.models.register_model"
            )
        for name in ("vocab_size", "seq_len", "n_layer", "n_head", "d_model", "num_classes"):
            if getattr(self, name) < 1:
                raise UserError(
                    f"model.{name} must be a positive integer (got {getattr(self, name)})"
                )
        if self.image_size < 8:
            raise UserError(f"model.image_size must be at least 8 pixels (got {self.image_size})")
        if self.d_model % self.n_head:
            raise UserError(
                f"model.d_model ({self.d_model}) must be divisible by model.n_head ({self.n_head})"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise UserError(f"model.dropout must be in [0, 1) (got {self.dropout})")
        if self.loss_impl not in ("auto", "plain", "chunked"):
            raise UserError(
                f"model.loss_impl must be auto, plain or chunked (got {self.loss_impl!r})"
            )
        if self.channels_last not in ("auto", True, False):
            raise UserError(
                f"model.channels_last must be auto, true or false (got {self.channels_last!r})"
            )
        if self.kind == "hf" and not self.path:
            raise UserError(
                "model.kind = 'hf' needs model.path, a local Hugging Face model directory"
            )


@dataclass(kw_only=True)
class BuiltModel:
    """A model ready for the training loop; `loss(batch)` always calls `self.module`."""

    module: torch.nn.Module
    blocks: list[torch.nn.Module]
    task: Task
    num_params: int
    flops_per_sample: float | None
    units_per_sample: int
    unit_name: str
    block_list: torch.nn.ModuleList | None = None
    # Convolution nets run NHWC on GPUs (cuDNN/MIOpen tensor-core kernels want it).
    supports_channels_last: bool = False
    # Where each block lives (parent module, attribute name), so set_block can swap it in place.
    block_slots: list[tuple[torch.nn.Module, str]] = field(default_factory=list, repr=False)

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Forward pass and mean cross-entropy; LM labels are already shifted by the data source.

        Language models take the labels and return the loss from their own forward, so the head
        and the loss are inside the compiled region when the model is compiled.
        """
        import torch.nn.functional as F

        if self.task == "lm":
            return self.module(batch["input_ids"], labels=batch["labels"])  # type: ignore[no-any-return]
        logits = self.module(batch["images"])
        # [B, classes] is small: the fp32 upcast costs nothing here (autocast would do it too).
        return F.cross_entropy(logits.float(), batch["labels"])

    def set_block(self, index: int, module: torch.nn.Module) -> None:
        """Replace block `index` in its parent (e.g. by a checkpoint wrapper around it)."""
        parent, name = self.block_slots[index]
        setattr(parent, name, module)
        self.blocks[index] = module


ModelBuilder = Callable[[ModelConfig], BuiltModel]


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """A registered model kind.

    `builder(ModelConfig) -> BuiltModel` builds it randomly initialised (deterministic under
    torch.manual_seed); it may be a "module:function" reference imported on first use. `task`
    says which batches the data source makes and how the loop takes the loss (see `Task`).
    `vocab_size` (lm only) gives the model's real vocabulary when it is not model.vocab_size.
    """

    kind: str
    builder: ModelBuilder | str
    task: Task
    description: str = ""
    vocab_size: Callable[[ModelConfig], int] | str | None = None


_REGISTRY: dict[str, ModelSpec] = {}


def register_model(
    kind: str,
    builder: ModelBuilder | str,
    *,
    task: Task,
    description: str = "",
    vocab_size: Callable[[ModelConfig], int] | str | None = None,
) -> ModelSpec:
    """Register (or replace) model kind `kind`; config loading accepts it from then on."""
    if task not in ("lm", "image"):
        raise UserError(f"register_model({kind!r}): task must be lm or image (got {task!r})")
    spec = ModelSpec(
        kind=kind, builder=builder, task=task, description=description, vocab_size=vocab_size
    )
    _REGISTRY[kind] = spec
    return spec


register_model(
    "gpt", "rocmkit.train.models.gpt:build_gpt", task="lm", description="GPT decoder (nanoGPT)"
)
register_model(
    "resnet",
    "rocmkit.train.models.resnet:build_resnet",
    task="image",
    description="torchvision ResNet",
)
register_model(
    "hf",
    "rocmkit.train.models.hf:build_hf",
    task="lm",
    description="local Hugging Face causal LM",
    vocab_size="rocmkit.train.models.hf:hf_vocab_size",
)


def model_kinds() -> list[str]:
    """The registered model kinds."""
    return sorted(_REGISTRY)


def model_spec(kind: str) -> ModelSpec:
    """The registration of `kind`; UserError naming the known kinds when there is none."""
    spec = _REGISTRY.get(kind)
    if spec is None:
        raise UserError(f"unknown model kind {kind!r}; known: {', '.join(model_kinds())}")
    return spec


def build_model(config: ModelConfig) -> BuiltModel:
    """Build the model `config.kind` names, randomly initialised (deterministic under manual_seed)."""
    spec = model_spec(config.kind)
    builder: ModelBuilder = resolve_reference(spec.builder)
    built = builder(config)
    if built.task != spec.task:
        raise UserError(
            f"model kind {config.kind!r} registered task {spec.task!r} but built a "
            f"{built.task!r} model; register it with task={built.task!r}"
        )
    return built


def resolved_vocab_size(config: ModelConfig) -> int:
    """The vocabulary the model really has (an hf model's comes from its config.json)."""
    spec = model_spec(config.kind)
    if spec.vocab_size is None:
        return config.vocab_size
    vocab_size: Callable[[ModelConfig], int] = resolve_reference(spec.vocab_size)
    return vocab_size(config)


def resolve_reference(entry: Any) -> Any:
    """A callable, or the object a "module:name" reference names (imported now): how the
    model and precision registries name built-ins without importing them early."""
    if not isinstance(entry, str):
        return entry
    module_name, name = entry.split(":")
    return getattr(importlib.import_module(module_name), name)


def _import_registering_module(name: str) -> None:
    try:
        importlib.import_module(name)
    except ImportError as exc:
        raise UserError(
            f"model.module {name!r} cannot be imported ({exc}); put it on PYTHONPATH"
        ) from None


def count_params(module: torch.nn.Module) -> int:
    """Parameters counted once each (a tied embedding/head pair counts once)."""
    return sum(p.numel() for p in module.parameters())
