"""Checkpoints: exact resume, atomic publication, keep-last-K, export to one file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from hf_helpers import tiny_qwen3_config
from loop_helpers import checkpoint_weights, tiny_overrides

from rocmkit.errors import UserError
from rocmkit.train import export_checkpoint, load_train_config, train


def _config(run_dir: Path, **overrides):
    return load_train_config(preset="gpt-tiny", overrides=tiny_overrides(run_dir, **overrides))


def _logged_losses(run_dir: Path) -> dict[int, float]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return {r["step"]: r["loss"] for r in map(json.loads, lines)}


def _assert_same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), f"{key} differs by {(a[key] - b[key]).abs().max()}"


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_resume_is_exact(tmp_path: Path, dtype: str):
    """20 steps in one go == 10 steps, stop, resume to 20: same weights and same losses."""
    steps = 20 if dtype == "fp32" else 6
    extra = {"train.steps": steps, "precision.dtype": dtype, "model.dropout": 0.1}
    whole = train(_config(tmp_path / "whole", **extra))
    half = steps // 2
    first = train(_config(tmp_path / "split", **extra, **{"train.stop_at_step": half}))
    assert first.steps_done == half
    second = train(_config(tmp_path / "split", **extra, **{"checkpoint.resume": "auto"}))
    assert second.steps_done == steps
    assert len(second.losses) == steps - half
    assert _logged_losses(tmp_path / "split") == _logged_losses(tmp_path / "whole")
    assert second.losses == whole.losses[half:]
    _assert_same_weights(
        checkpoint_weights(whole.checkpoint), checkpoint_weights(second.checkpoint)
    )


def test_keeps_last_k_and_publishes_only_complete(run_dir: Path):
    train(_config(run_dir, **{"train.steps": 6, "checkpoint.every": 2, "checkpoint.keep": 2}))
    checkpoints = run_dir / "checkpoints"
    assert sorted(p.name for p in checkpoints.iterdir()) == [
        "latest",
        "step_00000004",
        "step_00000006",
    ]
    assert (checkpoints / "latest").read_text().strip() == "step_00000006"


def test_half_written_checkpoint_is_ignored_and_cleaned(run_dir: Path):
    train(_config(run_dir, **{"train.steps": 4, "train.stop_at_step": 2}))
    partial = run_dir / "checkpoints" / ".tmp-step_00000003"
    partial.mkdir()
    (partial / "__0_0.distcp").write_bytes(b"torn")
    resumed = train(_config(run_dir, **{"train.steps": 4, "checkpoint.resume": "auto"}))
    assert resumed.losses and len(resumed.losses) == 2  # continued from step 2
    assert not partial.exists()


def test_resume_errors_say_what_is_wrong(run_dir: Path, tmp_path: Path):
    with pytest.raises(UserError, match="checkpoint not found"):
        train(_config(run_dir, **{"checkpoint.resume": str(tmp_path / "nope")}))
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no complete checkpoint"):
        train(_config(run_dir, **{"checkpoint.resume": str(tmp_path / "empty")}))
    fresh = train(_config(run_dir, **{"train.steps": 2, "checkpoint.resume": "auto"}))
    assert fresh.steps_done == 2  # auto with nothing saved yet starts from scratch


@pytest.mark.parametrize("suffix", [".pt", ".safetensors"])
def test_export_single_file(run_dir: Path, tmp_path: Path, suffix: str):
    result = train(_config(run_dir, **{"train.steps": 2}))
    out = export_checkpoint(run_dir / "checkpoints", tmp_path / f"model{suffix}")
    if suffix == ".pt":
        weights = torch.load(out, weights_only=True)
    else:
        from safetensors.torch import load_file

        weights = load_file(out)
    from rocmkit.train.models import build_model

    torch.manual_seed(0)
    model = build_model(result_model_config(run_dir)).module
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    model.load_state_dict(weights)  # strict: every key present, every shape right
    assert any(not torch.equal(initial[k], v) for k, v in weights.items())  # trained weights
    assert result.checkpoint is not None
    with pytest.raises(UserError, match=r"\.safetensors or \.pt"):
        export_checkpoint(run_dir / "checkpoints", tmp_path / "model.bin")


def result_model_config(run_dir: Path):
    from rocmkit.config import from_dict
    from rocmkit.train.models import ModelConfig

    meta = json.loads((run_dir / "checkpoints" / "step_00000002" / "meta.json").read_text())
    return from_dict(ModelConfig, meta["config"]["model"])


def test_hf_preset_trains_resumes_and_exports(tmp_path: Path):
    """The hf-causal-lm preset (activation checkpointing on) on a tiny random Qwen3 directory."""
    pytest.importorskip("transformers")
    model_dir = tmp_path / "qwen3-tiny"
    tiny_qwen3_config().save_pretrained(model_dir)
    run_dir = tmp_path / "run"
    overrides = {
        "model.path": str(model_dir),
        "model.seq_len": "16",
        "train.micro_batch": "4",
        "train.grad_accum": "1",
        "train.steps": "4",
        "train.lr": "1e-3",
        "precision.dtype": "bf16",
        "logging.run_dir": str(run_dir),
    }
    config = load_train_config(
        preset="hf-causal-lm", overrides={**overrides, "train.stop_at_step": "2"}
    )
    assert config.train.activation_checkpointing
    assert train(config).steps_done == 2
    resume = {**overrides, "checkpoint.resume": "auto"}
    resumed = train(load_train_config(preset="hf-causal-lm", overrides=resume))
    assert (resumed.steps_done, len(resumed.losses)) == (4, 2)
    out = export_checkpoint(run_dir / "checkpoints", tmp_path / "qwen3.safetensors")
    from safetensors.torch import load_file

    weights = load_file(out)
    assert any("layers.1" in key for key in weights)  # no checkpoint-wrapper names leaked
    assert not any("_checkpoint_wrapped_module" in key for key in weights)
