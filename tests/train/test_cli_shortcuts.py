"""The short train flags come from one table: the same flag means the same setting in `train`,
`profile train` and bench's train-precision suite."""

from __future__ import annotations

import argparse

import pytest

from rocmkit.cli.train_options import add_train_shortcuts, train_overrides
from rocmkit.train.shortcuts import SHORTCUTS, shortcut_overrides


def _parse(argv: list[str], names=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    if names is None:
        add_train_shortcuts(parser)
    else:
        add_train_shortcuts(parser, names)
    return parser.parse_args(argv)


def test_each_flag_sets_its_dotted_setting(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("tokens")
    argv = ["--precision", "bf16", "--micro-batch", "4", "--grad-accum", "2", "--steps", "7"]
    argv += ["--parallel", "ddp", "--seed", "3", "--data", str(corpus)]
    assert train_overrides(_parse(argv)) == {
        "precision.dtype": "bf16",
        "train.micro_batch": "4",
        "train.grad_accum": "2",
        "train.steps": "7",
        "data.path": str(corpus),
        "data.kind": "text",
        "parallel.mode": "ddp",
        "train.seed": "3",
    }
    images = tmp_path / "images"
    images.mkdir()
    assert shortcut_overrides({"data": str(images)})["data.kind"] == "images"
    assert train_overrides(_parse([])) == {}  # unset flags leave the config alone


def test_a_command_offers_only_the_flags_that_mean_something_to_it():
    args = _parse(["--micro-batch", "2"], names=("micro_batch", "steps"))
    assert train_overrides(args, ("micro_batch", "steps")) == {"train.micro_batch": "2"}
    with pytest.raises(SystemExit):
        _parse(["--precision", "bf16"], names=("micro_batch", "steps"))
    with pytest.raises(SystemExit):
        _parse(["--micro-batch", "two"])  # typed: argparse refuses it at once


def test_every_flag_targets_a_real_train_setting():
    from rocmkit.train import load_train_config

    values = {"precision.dtype": "bf16", "parallel.mode": "none"}
    for shortcut in SHORTCUTS:
        if shortcut.expand is not None:
            continue  # --data needs a real file; covered above
        value = values.get(shortcut.key, "2")
        config = load_train_config(preset="gpt-tiny", overrides={shortcut.key: value})
        section, key = shortcut.key.split(".")
        assert str(getattr(getattr(config, section), key)) == value


def test_bench_applies_them_to_every_model_of_the_train_precision_suite():
    from rocmkit.bench.train_precision import TrainPrecisionConfig, with_train_shortcuts

    suite = TrainPrecisionConfig(
        models=["gpt-tiny", "resnet18"],
        steps=6,
        overrides={"gpt-tiny": {"model": {"seq_len": 64}, "train": {"micro_batch": 8}}},
    )
    changed = with_train_shortcuts(suite, {"train.micro_batch": "2", "train.steps": "3"})
    assert changed.steps == 3
    assert changed.overrides["gpt-tiny"] == {"model.seq_len": "64", "train.micro_batch": "2"}
    assert changed.overrides["resnet18"] == {"train.micro_batch": "2"}
    assert with_train_shortcuts(suite, {}) is suite
    from rocmkit.errors import UserError

    with pytest.raises(UserError, match="at least 2 steps"):
        with_train_shortcuts(suite, {"train.steps": "1"})
