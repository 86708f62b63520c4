"""The [data] section of a train config (no torch import: configs are checked before torch loads)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from rocmkit.errors import UserError, warn_once

__all__ = ["DataConfig"]


@dataclass(kw_only=True)
class DataConfig:
    """The [data] section of a train config."""

    kind: Literal["synthetic", "text", "images"] = field(
        default="synthetic", metadata={"help": "synthetic | text (a file) | images (a folder)"}
    )
    path: str | None = field(
        default=None, metadata={"help": "text file, or image folder with one subfolder per class"}
    )
    tokenizer: str | None = field(
        default=None, metadata={"help": "text: 'bytes' (default) or a local HF tokenizer directory"}
    )
    cache_dir: str | None = field(
        default=None, metadata={"help": "text: where the tokenized file goes (default: beside it)"}
    )
    seed: int = field(default=0, metadata={"help": "seed of synthetic data and epoch shuffling"})

    def __post_init__(self) -> None:
        if self.kind not in ("synthetic", "text", "images"):
            raise UserError(f"data.kind must be synthetic, text or images (got {self.kind!r})")
        if self.kind != "synthetic" and not self.path:
            raise UserError(f"data.kind = '{self.kind}' needs data.path")
        if self.seed < 0:
            raise UserError(f"data.seed must be zero or positive (got {self.seed})")
        if self.kind == "synthetic" and self.path:
            warn_once("data.path has no effect with data.kind = 'synthetic'")
        if self.kind != "text" and (self.tokenizer or self.cache_dir):
            warn_once("data.tokenizer and data.cache_dir only apply to data.kind = 'text'")
