"""A tiny random Qwen3 config shared by the train tests (built offline, no hub access)."""

from __future__ import annotations

from typing import Any


def tiny_qwen3_config(**overrides: Any) -> Any:
    """Qwen3, 2 layers, hidden 32, vocabulary 128, 64 positions; untied head unless overridden."""
    import transformers

    settings: dict[str, Any] = {
        "vocab_size": 128,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "max_position_embeddings": 64,
        "tie_word_embeddings": False,
        **overrides,
    }
    return transformers.Qwen3Config(**settings)
