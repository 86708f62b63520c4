"""A tiny stand-in for rocmkit.train.models / rocmkit.train.data, used only while those modules
(owned by the trainmodels branch) have not been merged. It follows TRAIN_CONTRACT.md."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
from torch import nn
from torch.nn import functional as F


@dataclass(kw_only=True)
class ModelConfig:
    kind: Literal["gpt", "resnet", "hf"] = "gpt"
    vocab_size: int = 50304
    seq_len: int = 256
    n_layer: int = 4
    n_head: int = 4
    d_model: int = 128
    dropout: float = 0.0
    bias: bool = False
    tie_weights: bool = True
    arch: str = "resnet18"
    num_classes: int = 1000
    image_size: int = 224
    path: str | None = None
    from_scratch: bool = False


class _Block(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.proj = nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.proj(F.gelu(self.fc(self.norm(x))))


class _LM(nn.Module):
    def __init__(self, c: ModelConfig) -> None:
        super().__init__()
        self.emb = nn.Embedding(c.vocab_size, c.d_model)
        self.pos = nn.Parameter(torch.randn(c.seq_len, c.d_model) * 0.02)
        self.blocks = nn.ModuleList(_Block(c.d_model) for _ in range(c.n_layer))
        self.norm = nn.LayerNorm(c.d_model)
        self.head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.emb(ids) + self.pos[: ids.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


class _ConvBlock(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + F.relu(self.bn(self.conv(x)))


class _Vision(nn.Module):
    def __init__(self, c: ModelConfig) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.blocks = nn.ModuleList(_ConvBlock(8) for _ in range(2))
        self.fc = nn.Linear(8, c.num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.fc(x.mean(dim=(2, 3)))


@dataclass(kw_only=True)
class BuiltModel:
    module: nn.Module
    blocks: list[nn.Module]
    task: Literal["lm", "image"]
    num_params: int
    flops_per_sample: float | None
    units_per_sample: int
    unit_name: str
    block_list: nn.ModuleList | None = None

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        if self.task == "lm":
            logits = self.module(batch["input_ids"])
            return F.cross_entropy(logits.flatten(0, 1).float(), batch["labels"].flatten())
        return F.cross_entropy(self.module(batch["images"]).float(), batch["labels"])


def build_model(config: ModelConfig) -> BuiltModel:
    if config.kind == "gpt":
        m: nn.Module = _LM(config)
        n = sum(p.numel() for p in m.parameters())
        t = config.seq_len
        return BuiltModel(
            module=m,
            blocks=list(m.blocks),
            block_list=m.blocks,
            task="lm",
            num_params=n,
            flops_per_sample=6.0 * n * t,
            units_per_sample=t,
            unit_name="tokens",
        )
    m = _Vision(config)
    n = sum(p.numel() for p in m.parameters())
    return BuiltModel(
        module=m,
        blocks=list(m.blocks),
        block_list=m.blocks,
        task="image",
        num_params=n,
        flops_per_sample=None,
        units_per_sample=1,
        unit_name="images",
    )


@dataclass(kw_only=True)
class DataConfig:
    kind: Literal["synthetic", "text", "images"] = "synthetic"
    path: str | None = None
    tokenizer: str | None = None
    cache_dir: str | None = None
    seed: int = 0


class DataSource:
    def __init__(self, config: DataConfig, model: ModelConfig) -> None:
        self.config = config
        self.model = model
        if config.kind == "text":
            assert config.path is not None
            raw = Path(config.path).read_bytes()
            self.tokens = torch.tensor(list(raw), dtype=torch.int64)

    def _sample(self, index: int) -> dict[str, torch.Tensor]:
        g = torch.Generator().manual_seed(self.config.seed * 1_000_003 + index)
        m = self.model
        if m.kind == "gpt":
            if self.config.kind == "text":
                n = len(self.tokens) - m.seq_len - 1
                start = int(torch.randint(0, n, (1,), generator=g))
                chunk = self.tokens[start : start + m.seq_len + 1]
            else:
                # learnable synthetic sequence: an arithmetic progression mod vocab
                first = int(torch.randint(0, m.vocab_size, (1,), generator=g))
                chunk = (first + torch.arange(m.seq_len + 1) * 3) % m.vocab_size
            return {"input_ids": chunk[:-1], "labels": chunk[1:]}
        label = int(torch.randint(0, m.num_classes, (1,), generator=g))
        image = torch.randn(3, m.image_size, m.image_size, generator=g) * 0.5 + label * 0.3
        return {"images": image, "labels": torch.tensor(label)}

    def get_batch(
        self,
        *,
        step: int,
        micro_step: int,
        micro_batch_size: int,
        grad_accum: int,
        rank: int,
        world_size: int,
    ) -> dict[str, Any]:
        base = ((step * grad_accum + micro_step) * world_size + rank) * micro_batch_size
        samples = [self._sample(base + i) for i in range(micro_batch_size)]
        return {k: torch.stack([s[k] for s in samples]) for k in samples[0]}


def build_data(config: DataConfig, model: ModelConfig) -> DataSource:
    return DataSource(config, model)


def install() -> bool:
    """Register the stand-ins when the real modules are absent; True when installed."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("rocmkit")
    assert spec is not None and spec.submodule_search_locations
    train_dir = Path(next(iter(spec.submodule_search_locations))) / "train"
    if (train_dir / "models").is_dir() or (train_dir / "models.py").is_file():
        return False
    models = types.ModuleType("rocmkit.train.models")
    data = types.ModuleType("rocmkit.train.data")
    for name in ("ModelConfig", "BuiltModel", "build_model"):
        setattr(models, name, globals()[name])
    for name in ("DataConfig", "DataSource", "build_data"):
        setattr(data, name, globals()[name])
    sys.modules["rocmkit.train.models"] = models
    sys.modules["rocmkit.train.data"] = data
    return True
