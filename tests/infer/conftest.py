"""Shared fixtures of the infer tests: a tiny random Qwen3 saved as a local model directory."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A 2-layer, hidden-32 Qwen3 with a 64-token vocabulary and random weights (no hub access)."""
    transformers = pytest.importorskip("transformers")
    import torch

    config = transformers.Qwen3Config(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=128,
    )  # fmt: skip
    torch.manual_seed(0)
    directory = tmp_path_factory.mktemp("tiny-qwen3")
    transformers.Qwen3ForCausalLM(config).save_pretrained(directory)
    return directory


@pytest.fixture
def cpu_platform(monkeypatch):
    """Pin `rocmkit infer local` to the CPU, so a test of CPU behaviour means the same on a GPU
    machine (the CLI calls rocmkit.platform.detect when it runs)."""
    import torch

    import rocmkit.platform
    from rocmkit.platform import Platform

    cpu = Platform(backend="cpu", torch_version=torch.__version__)
    monkeypatch.setattr(rocmkit.platform, "detect", lambda: cpu)
    return cpu


@pytest.fixture(autouse=True)
def _run_in_tmp(tmp_path, monkeypatch):
    """Run every infer test in its own directory, so a command run without --out writes its
    default `runs/infer-<mode>-<stamp>` there and never into the checkout. A wide console keeps
    each table row on one line for the tests that read the printed tables."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "400")
