"""Messages a newcomer meets in the first hour say what is wrong (issue 30)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.cli.main import main


def _error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    return err


def test_a_config_directory_is_named_as_a_directory(tmp_path: Path, capsys) -> None:
    err = _error(["train", "--config", str(tmp_path)], capsys)
    assert "is a directory: give a TOML file" in err and "not found" not in err


def test_a_missing_model_directory_is_named_as_missing(tmp_path: Path, capsys) -> None:
    err = _error(["infer", "local", str(tmp_path / "nosuch")], capsys)
    assert f"no such model directory: {tmp_path / 'nosuch'}" in err
    assert "config.json" not in err


def test_a_zero_batch_size_names_the_flag(tmp_path: Path, capsys) -> None:
    (tmp_path / "config.json").write_text("{}")
    err = _error(["infer", "local", str(tmp_path), "--batch-sizes", "0"], capsys)
    assert "--batch-sizes takes positive integers" in err and "(got 0)" in err


def test_a_plot_under_a_system_folder_says_it_cannot_be_created(capsys) -> None:
    err = _error(["profile", "memory", "--preset", "gpt-tiny", "--plot", "/proc/x/mem.png"], capsys)
    assert "it cannot be created there" in err


def test_the_no_power_help_says_what_the_flag_does(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["infer", "local", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--no-power do not sample GPU power" in help_text
    assert "--no-stream" not in help_text  # a serve option only


def test_infer_local_tiny_runs_offline_without_a_model(tmp_path: Path, monkeypatch, capsys) -> None:
    """`rocmkit infer local --tiny`: a newcomer can try the command with nothing downloaded."""
    pytest.importorskip("transformers")
    monkeypatch.chdir(tmp_path)
    argv = ["infer", "local", "--tiny", "--precision", "fp32", "--prompt-lens", "8"]
    argv += ["--output-lens", "4", "--iters", "1", "--warmup", "0", "--no-power"]
    assert main([*argv, "--out", "runs/first"]) == 0
    assert (tmp_path / "runs" / "tiny-model" / "config.json").is_file()
    out = capsys.readouterr().out
    assert "tiny-model" in out and "TTFT" in out
    assert main([*argv, "--out", "runs/second"]) == 0  # the saved model is reused
    assert main(["infer", "local", str(tmp_path), "--tiny"]) == 2
    assert "drop MODEL_DIR" in capsys.readouterr().err
