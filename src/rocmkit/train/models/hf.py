"""Any causal LM from a LOCAL Hugging Face directory (the `llm` extra); nothing is downloaded.

The directory needs a config.json. Its weights (*.safetensors or pytorch_model*.bin) are loaded
when present, unless model.from_scratch asks for a random initialisation from the config.
Parameters are kept in fp32: the training loop decides the compute and parameter precisions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from rocmkit.errors import UserError, require_extra
from rocmkit.train.models import BuiltModel, ModelConfig, count_params
from rocmkit.train.models.flops import measure_training_flops

__all__ = ["CausalLMLogits", "build_hf", "hf_vocab_size"]

_WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin")


class CausalLMLogits(nn.Module):
    """Adapts a transformers causal LM to the plain call the loop expects: input_ids -> logits."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        # Labels are not passed to transformers: the data source already shifted them, and
        # transformers would shift a second time. The loss is taken here so that a compiled
        # model compiles it too (the logits' fp32 upcast is then fused, not materialised).
        logits = self.model(input_ids=input_ids, use_cache=False).logits
        if labels is None:
            return logits  # type: ignore[no-any-return]
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)


def _model_dir(config: ModelConfig) -> Path:
    directory = Path(str(config.path)).expanduser()
    if not (directory / "config.json").is_file():
        raise UserError(
            f"model.path {directory} is not a Hugging Face model directory (no config.json in it)"
        )
    return directory


def hf_vocab_size(config: ModelConfig) -> int:
    """vocab_size from the directory's config.json (read as JSON, transformers not needed)."""
    path = _model_dir(config) / "config.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"cannot read {path}: {exc}") from None
    size = data.get("vocab_size") or data.get("text_config", {}).get("vocab_size")
    if not isinstance(size, int):
        raise UserError(f"{path} has no integer vocab_size")
    return size


def _dtype_kwargs() -> dict[str, Any]:
    # transformers 4.56 renamed torch_dtype to dtype; the old name logs a deprecation.
    transformers = require_extra("transformers", "llm")
    major, minor = (int(part) for part in transformers.__version__.split(".")[:2])
    name = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
    return {name: torch.float32}


def _load_config(directory: Path) -> Any:
    transformers = require_extra("transformers", "llm")
    try:
        return transformers.AutoConfig.from_pretrained(directory, local_files_only=True)
    except (OSError, ValueError, KeyError) as exc:
        raise UserError(f"cannot load the model config in {directory}: {exc}") from None


def _load_model(directory: Path, hf_config: Any, from_scratch: bool) -> nn.Module:
    transformers = require_extra("transformers", "llm")
    auto = transformers.AutoModelForCausalLM
    has_weights = any(any(directory.glob(pattern)) for pattern in _WEIGHT_PATTERNS)
    try:
        if has_weights and not from_scratch:
            model = auto.from_pretrained(directory, local_files_only=True, **_dtype_kwargs())
        else:
            model = auto.from_config(hf_config, **_dtype_kwargs())
    except (OSError, ValueError, KeyError) as exc:
        raise UserError(f"cannot build a causal LM from {directory}: {exc}") from None
    return model  # type: ignore[no-any-return]


def _decoder_layers(model: nn.Module, num_layers: int | None) -> nn.ModuleList:
    """The ModuleList of repeated decoder layers (model.layers, transformer.h, ...), found by shape."""
    candidates = [
        module
        for module in model.modules()
        if isinstance(module, nn.ModuleList)
        and len(module) > 0
        and len({type(child) for child in module}) == 1
        and (num_layers is None or len(module) == num_layers)
    ]
    if not candidates:
        raise UserError(f"cannot find the decoder layers of {type(model).__name__}")
    return max(candidates, key=count_params)


def build_hf(config: ModelConfig) -> BuiltModel:
    """The causal LM in config.path (weights or random init) with its decoder layers as blocks."""
    directory = _model_dir(config)
    hf_config = _load_config(directory)
    max_positions = getattr(hf_config, "max_position_embeddings", None)
    if isinstance(max_positions, int) and config.seq_len > max_positions:
        raise UserError(
            f"model.seq_len = {config.seq_len} exceeds this model's {max_positions} positions"
        )
    model = _load_model(directory, hf_config, config.from_scratch)
    module = CausalLMLogits(model)
    layers = _decoder_layers(model, getattr(hf_config, "num_hidden_layers", None))
    flops = _measure_flops(hf_config, config.seq_len)
    return BuiltModel(
        module=module,
        blocks=list(layers),
        block_list=layers,
        block_slots=[(layers, str(i)) for i in range(len(layers))],
        task="lm",
        num_params=count_params(module),
        flops_per_sample=flops,
        units_per_sample=config.seq_len,
        unit_name="tokens",
    )


def _measure_flops(hf_config: Any, seq_len: int) -> float | None:
    transformers = require_extra("transformers", "llm")

    def make_module() -> nn.Module:
        # Eager attention: its matmuls are visible to the FLOP counter, while the fused CPU SDPA
        # kernel is not; the arithmetic is the same as the SDPA kernels'.
        model = transformers.AutoModelForCausalLM.from_config(
            hf_config, attn_implementation="eager", **_dtype_kwargs()
        )
        return CausalLMLogits(model)

    try:
        return measure_training_flops(
            make_module,
            lambda: torch.zeros(1, seq_len, dtype=torch.long),
            lambda model, input_ids: model(input_ids),
        )
    except (RuntimeError, NotImplementedError, TypeError, ValueError):
        # Some architectures do data-dependent work in forward that fake tensors cannot run;
        # MFU is then reported as n/a rather than guessed.
        return None
