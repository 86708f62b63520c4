"""TrainConfig: presets, files, overrides, and the combinations refused at start."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.errors import RocmkitWarning, UserError
from rocmkit.train import TrainConfig, available_presets, load_train_config
from rocmkit.train.config import check_world_size

PRESETS = ["gpt-tiny", "gpt2-124m", "gpt2-350m", "hf-causal-lm", "resnet18", "resnet50"]


def test_every_promised_preset_ships_and_loads():
    assert available_presets() == PRESETS
    for name in PRESETS:
        overrides = {"model.path": "/tmp"} if name == "hf-causal-lm" else {}
        config = load_train_config(preset=name, overrides=overrides)
        assert config.preset == name
    gpt2 = load_train_config(preset="gpt2-124m")
    assert (gpt2.model.n_layer, gpt2.model.d_model, gpt2.model.seq_len) == (12, 768, 1024)


def test_file_then_overrides_take_precedence(tmp_path: Path):
    file = tmp_path / "run.toml"
    file.write_text("[train]\nlr = 1e-3\nsteps = 7\n[precision]\ndtype = 'bf16'\n")
    config = load_train_config(preset="gpt-tiny", path=file, overrides={"train.lr": "3e-4"})
    assert config.train.lr == 3e-4  # override beats file
    assert config.train.steps == 7  # file beats preset
    assert config.precision.dtype == "bf16"
    assert config.model.vocab_size == 256  # preset kept where nothing overrides it


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"train.micro_batch": "-1"}, "train.micro_batch must be a positive integer"),
        ({"train.grad_accum": "0"}, "train.grad_accum must be a positive integer"),
        ({"train.steps": "x"}, "train.steps must be an integer"),
        ({"precision.dtype": "fp8"}, "precision.dtype must be one of"),
        ({"precision.dtype": "fp16", "precision.param_dtype": "bf16"}, "conflicts"),
        ({"parallel.mode": "zero"}, "parallel.mode must be one of"),
        ({"train.typo": "1"}, "unknown setting 'train.typo'"),
        ({"data.kind": "text", "data.path": "/no/such/corpus.txt"}, "data file not found"),
        ({"model.kind": "hf"}, "needs model.path"),
    ],
)
def test_invalid_settings_fail_at_start_saying_why(overrides, message):
    with pytest.raises(UserError, match=message):
        load_train_config(preset="gpt-tiny", overrides=overrides)


def test_invalid_toml_and_unknown_preset(tmp_path: Path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[train\nlr = 1\n")
    with pytest.raises(UserError, match="invalid TOML"):
        load_train_config(path=bad)
    with pytest.raises(UserError, match="unknown preset 'gpt-huge'; available: gpt-tiny"):
        load_train_config(preset="gpt-huge")


def test_global_batch_must_divide_over_ranks():
    config = load_train_config(
        preset="gpt-tiny", overrides={"train.global_batch": "32", "train.micro_batch": "4"}
    )
    assert config.train.grad_accum == 8
    check_world_size(config, 2)
    assert config.train.grad_accum == 4
    with pytest.raises(UserError, match="not divisible by micro_batch 4 x world size 3"):
        check_world_size(config, 3)
    with pytest.raises(UserError, match="world size 3"):
        load_train_config(
            preset="gpt-tiny",
            overrides={"train.global_batch": "32", "train.micro_batch": "4"},
            world_size=3,
        )


def test_options_without_effect_warn_once():
    with pytest.warns(RocmkitWarning, match="loss scaler settings have no effect"):
        load_train_config(
            preset="gpt-tiny",
            overrides={"precision.dtype": "bf16", "precision.loss_scale_init": "1024"},
        )
    with pytest.warns(RocmkitWarning, match="param_dtype has no effect without parallel.mode fsdp"):
        load_train_config(overrides={"precision.dtype": "bf16", "precision.param_dtype": "bf16"})


def test_defaults_build_without_any_file():
    config = TrainConfig()
    assert config.precision.dtype == "fp32"
    assert config.checkpoint_dir == Path("runs/train/checkpoints")


def test_setups_that_cannot_work_are_refused(monkeypatch, tmp_path: Path):
    import shutil

    import torch.distributed

    from rocmkit.train import train

    monkeypatch.setattr(torch.distributed, "is_available", lambda: False)
    with pytest.raises(UserError, match=r"parallel\.mode fsdp needs torch\.distributed"):
        load_train_config(preset="gpt-tiny", overrides={"parallel.mode": "fsdp"})
    monkeypatch.undo()
    monkeypatch.setattr(shutil, "which", lambda name: None)
    config = load_train_config(
        preset="gpt-tiny",
        overrides={
            "train.compile": "true",
            "train.device": "cpu",  # the CPU's compiler is what this case is about
            "logging.run_dir": str(tmp_path / "run"),
        },
    )
    with pytest.raises(UserError, match=r"train\.compile on CPU needs a C\+\+ compiler"):
        train(config)
    config = load_train_config(preset="gpt-tiny", overrides={"train.device": "cuda"})
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="torch sees no GPU"):
            train(config)


def test_configs_are_read_and_checked_without_importing_torch():
    """A typo in a config is answered at once: torch (seconds to import) is not loaded for it."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from rocmkit.errors import UserError\n"
        "from rocmkit.train import load_train_config\n"
        "load_train_config(preset='gpt2-124m', overrides={'train.lr': '1e-4'})\n"
        "try:\n"
        "    load_train_config(preset='gpt-tiny', overrides={'train.steps': '-1'})\n"
        "except UserError:\n"
        "    pass\n"
        "print('torch' in sys.modules)\n"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
