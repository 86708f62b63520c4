"""`rocmkit train` through the one driver: what it prints is the run's report view, `--json` is the
saved document, the exit code says how the run ended, and the same command runs from Python."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from loop_helpers import as_flags, tiny_overrides

from rocmkit.cli.main import main


def _argv(out: Path, **extra: object) -> list[str]:
    overrides = tiny_overrides(out, **{"train.steps": 2, **extra})
    del overrides["logging.run_dir"]
    return ["train", "--preset", "gpt-tiny", *as_flags(overrides), "--out", str(out)]


def _view_lines(run: Path) -> list[str]:
    """What the console view of the saved run prints (what `rocmkit report RUN` prints)."""
    from rich.console import Console

    from rocmkit.report.views import render_view
    from rocmkit.results import load_result

    buffer = io.StringIO()
    render_view(load_result(run), Console(file=buffer, width=250))
    return buffer.getvalue().splitlines()


def test_train_prints_the_cells_report_prints_for_the_same_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "250")  # wide enough for every column (narrower drops some)
    out = tmp_path / "run"
    assert main(_argv(out, **{"logging.log_every": 1})) == 0
    captured = capsys.readouterr()
    printed = [line for line in captured.out.splitlines() if not line.startswith("step ")]
    assert printed == _view_lines(out)
    assert main(["report", str(out)]) == 0
    report = capsys.readouterr().out.splitlines()
    assert report and printed[: len(report)] == report  # every table cell, byte for byte
    assert f"run dir: {out}" in printed
    assert f"checkpoint: {out / 'checkpoints' / 'step_00000002'}" in printed
    # Byte counts read as people read them, in both (this was "741,167,104" in the report).
    (peak_row,) = [line for line in report if line.startswith("│ gpt-tiny fp32")]
    assert re.search(
        r"\d (KiB|MiB|GiB) │", peak_row
    )  # the process RSS: MiB alone, GiB in a busy run


def test_json_is_the_saved_document(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*_argv(out), "--json"]) == 0
    captured = capsys.readouterr()
    saved = json.loads((out / "result.json").read_text())
    assert json.loads(captured.out) == saved
    assert saved["outcome"] == "ok" and saved["partial"] is None
    data = dict(saved["data"])
    assert data.pop("curve")["step"] == [1, 2]  # the report's training curves
    assert data.pop("cpu")["threads"] == 1  # OMP_NUM_THREADS=1 in the tests
    assert data == {
        "backend": "torch",
        "steps": 2,
        "steps_done": 2,
        "checkpoint": str(out / "checkpoints" / "step_00000002"),
        "run_dir": str(out),
        "stop_signal": None,
    }


def test_a_non_finite_loss_exits_3_and_saves_no_result(tmp_path, capsys):
    out = tmp_path / "run"
    nan = {"train.lr": 1e30, "train.warmup": 0, "train.grad_clip": 0, "train.steps": 4}
    code = main(_argv(out, **nan))
    err = capsys.readouterr().err
    assert code == 3, err
    assert "rocmkit: error: loss is nan at step" in err
    assert not (out / "result.json").exists()


def test_a_bad_flag_exits_2_before_any_directory_is_made(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*_argv(out), "--precision", "fp7"]) == 2
    assert not out.exists()


def test_export_saves_nothing_without_out_and_prints_what_it_wrote(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(_argv(run)) == 0
    capsys.readouterr()
    target = tmp_path / "weights.pt"
    assert main(["train", "export", str(run / "checkpoints"), str(target)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {target}"
    assert target.stat().st_size > 1000
    saved_to = tmp_path / "export-run"
    argv = ["train", "export", str(run / "checkpoints"), str(target), "--out", str(saved_to)]
    assert main([*argv, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((saved_to / "result.json").read_text())
    assert (printed["kind"], printed["data"]["written"]) == ("train-export", str(target))


def test_from_python_the_command_returns_the_result_quietly(tmp_path, capsys):
    from rocmkit.driver import Context
    from rocmkit.train import load_train_config
    from rocmkit.train.command import run

    run_dir = tmp_path / "run"
    overrides = tiny_overrides(run_dir, **{"train.steps": 2})
    result = run(load_train_config(preset="gpt-tiny", overrides=overrides), Context())
    assert result.kind == "train" and result.outcome == "ok"
    assert result.data["steps_done"] == 2 and result.data["run_dir"] == str(run_dir)
    assert capsys.readouterr() == ("", "")  # a library call prints nothing
    assert (run_dir / "metrics.jsonl").is_file() and not (run_dir / "result.json").exists()


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_a_run_stopped_by_a_signal_maps_to_130_or_143(signal_name):
    from rocmkit.driver import exit_code
    from rocmkit.report.view_train import stop_note
    from rocmkit.results import RunResult
    from rocmkit.train.command import STOP_OUTCOMES

    result = RunResult(kind="train", environment={}, config={}, outcome=STOP_OUTCOMES[signal_name])
    assert exit_code(result) == {"SIGINT": 130, "SIGTERM": 143}[signal_name]
    result.data = {"stop_signal": signal_name, "steps_done": 7, "checkpoint": "c", "run_dir": "r"}
    assert stop_note(result) == (
        f"stopped by {signal_name} at step 7; checkpoint saved in c; continue with the same "
        "command, --out r and --resume auto"
    )
