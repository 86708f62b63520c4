"""A random tiny causal LM saved as a local Hugging Face model directory, so `rocmkit infer local`
can be tried offline (`--tiny`): a 2-layer, hidden-32 Qwen3 with a 64-token vocabulary. Its
figures say nothing about real models; it exists to try the command and its output."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from rocmkit.errors import require_extra
from rocmkit.runs import RUNS_ROOT

TINY_DIR = RUNS_ROOT / "tiny-model"


def tiny_model(directory: Path = TINY_DIR, *, seed: int = 0) -> Path:
    """The tiny model's directory, built (atomically: a whole directory or none) when absent."""
    if (directory / "config.json").is_file():
        return directory
    transformers = require_extra("transformers", "llm")
    import torch

    config = transformers.Qwen3Config(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=512,
    )
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".tiny-model.", dir=directory.parent))
    try:
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            transformers.Qwen3ForCausalLM(config).save_pretrained(staging)
        staging.rename(directory)
    except FileExistsError:
        pass  # another process built it first
    except OSError:
        if not (directory / "config.json").is_file():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return directory
