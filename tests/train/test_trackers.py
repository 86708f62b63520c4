"""Metric trackers: TensorBoard event files from a real CPU run; W&B and MLflow calls via fakes."""

from __future__ import annotations

import importlib.machinery
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from rocmkit.errors import UserError
from rocmkit.train import load_train_config, train
from rocmkit.train.metrics import StepMetrics
from rocmkit.train.trackers import open_trackers

TINY = {
    "train.steps": "4",
    "train.device": "cpu",
    "model.n_layer": "1",
    "model.seq_len": "16",
    "model.vocab_size": "64",
    "checkpoint.save_final": "false",
}


def _metrics(step: int, loss: float) -> StepMetrics:
    return StepMetrics(
        step=step,
        loss=loss,
        lr=1e-3,
        grad_norm=0.5,
        step_time_s=0.1,
        units_per_s=160.0,
        units_per_s_per_device=160.0,
        mfu=0.25,
        peak_memory_bytes=None,
        unit_name="tokens",
    )


def test_tensorboard_gets_the_losses_of_a_cpu_run(run_dir: Path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    overrides = {**TINY, "logging.run_dir": str(run_dir), "logging.tensorboard": "true"}
    overrides["logging.log_every"] = "2"  # every step still reaches the trackers at sync points
    result = train(load_train_config(preset="gpt-tiny", overrides=overrides))
    events = EventAccumulator(str(run_dir / "tensorboard"))
    events.Reload()
    losses = events.Scalars("train/loss")
    assert [e.step for e in losses] == [1, 2, 3, 4]
    assert [e.value for e in losses] == pytest.approx(result.losses, rel=1e-6)
    tags = set(events.Tags()["scalars"])
    assert {"train/lr", "train/grad_norm", "train/step_time_s", "train/skipped"} <= tags
    assert "train/throughput_tokens_per_s" in tags


def test_the_run_says_its_tensorboard_logdir(tmp_path: Path, capsys):
    pytest.importorskip("tensorboard")
    from rocmkit.cli.main import main

    out = tmp_path / ("a-long-folder-name-" * 4) / "run"  # wider than the terminal
    flags = [token for key, value in TINY.items() for token in (f"--{key}", value)]
    argv = ["train", "--preset", "gpt-tiny", *flags, "--logging.tensorboard", "true"]
    assert main([*argv, "--out", str(out)]) == 0
    lines = capsys.readouterr().err.splitlines()
    # one line, as it can be pasted into a shell
    assert f"TensorBoard: tensorboard --logdir {out / 'tensorboard'}" in lines
    assert (out / "tensorboard").is_dir()


def test_without_tensorboard_no_event_files_are_written(run_dir: Path):
    train(load_train_config(preset="gpt-tiny", overrides={**TINY, "logging.run_dir": str(run_dir)}))
    assert (run_dir / "metrics.jsonl").exists() and not (run_dir / "tensorboard").exists()


def _fake_module(name: str, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    monkeypatch.setitem(sys.modules, name, module)
    return module


def test_wandb_logs_offline_into_the_run_dir(monkeypatch, tmp_path: Path):
    calls: list[tuple[str, Any]] = []

    class Run:
        def log(self, scalars: dict[str, float], step: int) -> None:
            calls.append(("log", (step, scalars)))

        def finish(self) -> None:
            calls.append(("finish", None))

    def init(**kwargs: Any) -> Run:
        calls.append(("init", kwargs))
        return Run()

    _fake_module("wandb", monkeypatch).init = init  # type: ignore[attr-defined]
    monkeypatch.delenv("WANDB_MODE", raising=False)
    trackers = open_trackers({"wandb": True}, tmp_path, is_main=True, config={"a": 1})
    trackers(_metrics(3, 2.5))
    trackers.close()
    (kind, init_args), (_, (step, scalars)), (last, _) = calls
    assert kind == "init" and init_args["mode"] == "offline"
    assert init_args["dir"] == str(tmp_path)
    assert step == 3 and scalars["train/loss"] == 2.5 and scalars["train/mfu_pct"] == 25.0
    assert last == "finish"


def test_mlflow_logs_to_a_file_store_under_the_run_dir(monkeypatch, tmp_path: Path):
    calls: dict[str, Any] = {}
    mlflow = _fake_module("mlflow", monkeypatch)
    mlflow.set_tracking_uri = lambda uri: calls.setdefault("uri", uri)  # type: ignore[attr-defined]
    mlflow.set_experiment = lambda name: calls.setdefault("experiment", name)  # type: ignore[attr-defined]
    mlflow.start_run = lambda: calls.setdefault("started", True)  # type: ignore[attr-defined]
    mlflow.log_params = lambda params: calls.setdefault("params", params)  # type: ignore[attr-defined]
    mlflow.log_metrics = lambda scalars, step: calls.setdefault("metrics", []).append(  # type: ignore[attr-defined]
        (step, scalars)
    )
    mlflow.end_run = lambda: calls.setdefault("ended", True)  # type: ignore[attr-defined]
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    trackers = open_trackers({"mlflow": True}, tmp_path, is_main=True, config={"train": {"lr": 1}})
    trackers(_metrics(1, 4.0))
    trackers(_metrics(2, 3.0))
    trackers.close()
    assert calls["uri"] == (tmp_path / "mlruns").resolve().as_uri()
    assert calls["params"] == {"train.lr": "1"} and calls["ended"]
    assert [(s, m["train/loss"]) for s, m in calls["metrics"]] == [(1, 4.0), (2, 3.0)]


def test_only_the_main_process_logs(monkeypatch, tmp_path: Path):
    wandb = _fake_module("wandb", monkeypatch)
    wandb.init = lambda **kwargs: pytest.fail("rank 1 must not open a tracker")  # type: ignore[attr-defined]
    trackers = open_trackers({"wandb": True}, tmp_path, is_main=False, config={})
    trackers(_metrics(1, 1.0))
    trackers.close()


@pytest.mark.parametrize("name", ["tensorboard", "wandb", "mlflow"])
def test_a_missing_tracker_library_is_one_line_naming_the_install(monkeypatch, name: str):
    monkeypatch.setitem(sys.modules, name, None)  # as on a machine without it
    with pytest.raises(UserError, match=rf"pip install 'rocmkit\[{name}\]'") as error:
        load_train_config(preset="gpt-tiny", overrides={f"logging.{name}": "true"})
    assert "\n" not in str(error.value)
