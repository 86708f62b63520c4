"""`rocmkit train` on the command line: a real run, overrides, export, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from loop_helpers import as_flags, run_cli, tiny_overrides

from rocmkit.cli.main import main


@pytest.mark.slow
def test_train_preset_runs_with_shortcuts_and_dotted_overrides(run_dir: Path, tmp_path: Path):
    overrides = tiny_overrides(run_dir, **{"train.lr": "2e-3"})
    del overrides["train.steps"], overrides["train.micro_batch"]  # set by the short flags below
    flags = as_flags(overrides)
    proc = run_cli(
        "train", "--preset", "gpt-tiny", "--steps", "3", "--precision", "bf16",
        "--micro-batch", "2", "--grad-accum", "2", *flags,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "step 3/3" in proc.stdout  # plain lines when not on a terminal
    result = json.loads((run_dir / "result.json").read_text())
    train_section = result["config"]["train"]
    assert (train_section["steps"], train_section["micro_batch"], train_section["grad_accum"]) == (
        3,
        2,
        2,
    )
    assert train_section["lr"] == 2e-3
    assert result["config"]["precision"]["dtype"] == "bf16"
    out = tmp_path / "model.safetensors"
    proc = run_cli("train", "export", str(run_dir / "checkpoints"), str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 1000


def _one_line_error(capsys, argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    return err


def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path: Path, monkeypatch):
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text("[train]\nsteps = = 3\n")
    cases = [
        (["train", "--preset", "gpt-tiny", "--data", str(tmp_path / "missing.txt")], "not found"),
        (["train", "--preset", "gpt-9000"], "unknown preset"),
        (["train", "--config", str(bad_toml)], "invalid TOML"),
        (["train", "--preset", "gpt-tiny", "--micro-batch", "-4"], "must be a positive integer"),
        (["train", "--preset", "gpt-tiny", "--train.lr"], "has no value"),
        (["train", "export", str(tmp_path / "nothing"), str(tmp_path / "x.pt")], "not found"),
        # No preset and no config: say how to start instead of training a default model.
        (["train"], "needs --preset NAME or --config FILE (presets: gpt-tiny"),
        (["train", "--steps", "3"], "try: rocmkit train --preset gpt-tiny"),
    ]
    for argv, message in cases:
        assert message in _one_line_error(capsys, argv)
    monkeypatch.setenv("WORLD_SIZE", "3")
    argv = ["train", "--preset", "gpt-tiny", "--train.global_batch", "16", "--micro-batch", "4"]
    assert "not divisible" in _one_line_error(capsys, argv)


def test_bad_choice_is_one_line(capsys):
    assert "invalid choice" in _one_line_error(capsys, ["train", "--parallel", "nope"])
    # --precision is checked against the precision registry, which names what it knows.
    error = _one_line_error(capsys, ["train", "--preset", "gpt-tiny", "--precision", "nope"])
    assert "nope" in error and "bf16" in error


def test_data_flag_trains_on_a_text_file(run_dir: Path, tmp_path: Path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the quick brown fox jumps over the lazy dog. " * 200)
    overrides = tiny_overrides(run_dir, **{"train.steps": 2})
    code = main(["train", "--preset", "gpt-tiny", "--data", str(corpus), *as_flags(overrides)])
    assert code == 0, capsys.readouterr().err
    config = json.loads((run_dir / "result.json").read_text())["config"]
    assert (config["data"]["kind"], config["data"]["path"]) == ("text", str(corpus))


def test_monitor_memory_writes_a_timeline_and_a_memory_measurement(run_dir: Path, capsys):
    overrides = tiny_overrides(run_dir, **{"train.steps": "3", "checkpoint.save_final": "false"})
    argv = ["train", "--preset", "gpt-tiny", "--monitor-memory", *as_flags(overrides)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "peak memory, process RSS (MiB)" in out  # the memory table of the run's report
    timeline = json.loads((run_dir / "memory.json").read_text())
    assert timeline["device"] == "cpu" and len(timeline["samples"]) >= 2
    result = json.loads((run_dir / "result.json").read_text())
    memory = [m for m in result["measurements"] if m["suite"] == "memory"]
    assert [m["metric"] for m in memory] == ["peak_rss"]
    assert memory[0]["extra"]["peak_bytes"] == timeline["peak_allocated_bytes"]
    assert memory[0]["value"] == pytest.approx(timeline["peak_allocated_bytes"] / 2**20)
    # The training loop's own measurements are still there.
    assert any(m["suite"] == "train" and m["metric"] == "step_time" for m in result["measurements"])


def test_without_monitor_memory_no_timeline_is_written(run_dir: Path, capsys):
    overrides = tiny_overrides(run_dir, **{"train.steps": "2", "checkpoint.save_final": "false"})
    assert main(["train", "--preset", "gpt-tiny", *as_flags(overrides)]) == 0
    assert not (run_dir / "memory.json").exists()
    result = json.loads((run_dir / "result.json").read_text())
    assert all(m["suite"] != "memory" for m in result["measurements"])


def test_a_run_says_what_starts_and_estimates_its_length_after_the_first_step(
    run_dir: Path, capsys
):
    overrides = tiny_overrides(run_dir, **{"train.steps": 4, "logging.log_every": 2})
    del overrides["logging.run_dir"]  # the run directory's one name is --out (no note then)
    code = main(["train", "--preset", "gpt-tiny", *as_flags(overrides), "--out", str(run_dir)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    lines = captured.err.splitlines()
    assert lines[0].startswith("rocmkit train: gpt-tiny fp32 on cpu, 4 steps, loss read every 2")
    # (a line about other processes' load may come between, on a busy machine)
    (estimate,) = [line for line in lines if line.startswith("first step ")]
    assert "3 more steps at that pace: at most" in estimate
    printed = [line.split()[1] for line in captured.out.splitlines() if line.startswith("step ")]
    assert printed == ["2/4", "4/4"]  # one line per log step, not one per step


def test_a_run_too_big_for_the_machine_is_warned_about_before_it_starts():
    from rocmkit.profile.fit import memory_warning

    line = memory_warning(20 * 2**30, 8 * 2**30, on_gpu=False)
    assert line is not None and "needs about 20.0 GiB" in line and "8.0 GiB free RAM" in line
    assert "--micro-batch" in line and "activation_checkpointing" in line
    assert memory_warning(2 * 2**30, 8 * 2**30, on_gpu=True) is None
    assert memory_warning(2 * 2**30, None, on_gpu=True) is None  # unknown: no guess
