"""Causal LMs from a local Hugging Face directory (tiny random Qwen3 / Llama configs)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hf_helpers import tiny_qwen3_config

from rocmkit.errors import UserError
from rocmkit.train.models import ModelConfig, build_model, resolved_vocab_size

transformers = pytest.importorskip("transformers")

SEQ_LEN = 16
VOCAB = 128


def _qwen3_config():
    return tiny_qwen3_config(vocab_size=VOCAB)


def _llama_config():
    return transformers.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )


def _batch() -> dict[str, torch.Tensor]:
    tokens = torch.randint(0, VOCAB, (2, SEQ_LEN + 1), generator=torch.Generator().manual_seed(0))
    return {"input_ids": tokens[:, :-1], "labels": tokens[:, 1:]}


@pytest.mark.parametrize("make_config", [_qwen3_config, _llama_config])
def test_random_model_from_a_saved_config_trains(tmp_path: Path, make_config):
    make_config().save_pretrained(tmp_path)
    built = build_model(ModelConfig(kind="hf", path=str(tmp_path), seq_len=SEQ_LEN))
    assert built.task == "lm" and built.units_per_sample == SEQ_LEN
    assert len(built.blocks) == 2 and built.block_list is not None
    logits = built.module(_batch()["input_ids"])
    assert logits.shape == (2, SEQ_LEN, VOCAB) and logits.dtype == torch.float32
    loss = built.loss(_batch())
    loss.backward()
    assert torch.isfinite(loss)
    # Random init: the loss is near that of a uniform guess.
    assert loss.item() == pytest.approx(torch.log(torch.tensor(float(VOCAB))).item(), rel=0.1)
    assert resolved_vocab_size(ModelConfig(kind="hf", path=str(tmp_path))) == VOCAB


def test_flops_per_sample_match_the_matmul_count(tmp_path: Path):
    _qwen3_config().save_pretrained(tmp_path)
    built = build_model(ModelConfig(kind="hf", path=str(tmp_path), seq_len=SEQ_LEN))
    d, ff, kv, heads, head_dim, layers = 32, 64, 2 * 8, 4, 8, 2
    matmul_params = layers * (d * d + 2 * d * kv + d * d + 3 * d * ff) + d * VOCAB
    attention = 12 * layers * heads * head_dim * SEQ_LEN
    expected = (6 * matmul_params + attention) * SEQ_LEN
    assert built.flops_per_sample == pytest.approx(expected, rel=0.01)


def test_saved_weights_are_loaded_unless_from_scratch(tmp_path: Path):
    torch.manual_seed(1)
    saved = transformers.AutoModelForCausalLM.from_config(_qwen3_config())
    saved.save_pretrained(tmp_path)
    reference = saved.state_dict()["model.embed_tokens.weight"]
    loaded = build_model(ModelConfig(kind="hf", path=str(tmp_path), seq_len=SEQ_LEN))
    fresh = build_model(
        ModelConfig(kind="hf", path=str(tmp_path), seq_len=SEQ_LEN, from_scratch=True)
    )
    torch.testing.assert_close(loaded.module.model.model.embed_tokens.weight, reference)
    assert not torch.allclose(fresh.module.model.model.embed_tokens.weight, reference)


def test_decoder_layers_can_be_wrapped_for_activation_checkpointing(tmp_path: Path):
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

    _qwen3_config().save_pretrained(tmp_path)
    built = build_model(ModelConfig(kind="hf", path=str(tmp_path), seq_len=SEQ_LEN))
    expected = built.loss(_batch())
    for index, layer in enumerate(list(built.blocks)):
        built.set_block(index, checkpoint_wrapper(layer))
    assert type(built.module.model.model.layers[0]).__name__ == "CheckpointWrapper"
    loss = built.loss(_batch())
    loss.backward()
    torch.testing.assert_close(loss, expected)


def test_directory_without_config_is_a_user_error(tmp_path: Path):
    with pytest.raises(UserError, match=r"config\.json"):
        build_model(ModelConfig(kind="hf", path=str(tmp_path / "nowhere")))


def test_context_longer_than_the_model_supports_is_a_user_error(tmp_path: Path):
    _llama_config().save_pretrained(tmp_path)
    with pytest.raises(UserError, match="64 positions"):
        build_model(ModelConfig(kind="hf", path=str(tmp_path), seq_len=65))
