"""`rocmkit profile train|infer|memory` through the one driver: what each prints is the report view
of its saved document (what `rocmkit report RUN` prints), and `--json` is that document."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from rocmkit.cli.main import main

TRAIN = ["profile", "train", "--preset", "gpt-tiny", "--active", "1", "--micro-batch", "2"]
TRAIN += ["--train.device", "cpu"]


def _view_lines(run: Path) -> list[str]:
    """The console view of the saved run, as `rocmkit report RUN` renders one run."""
    from rich.console import Console

    from rocmkit.report.views import render_view
    from rocmkit.results import load_result

    buffer = io.StringIO()
    render_view(load_result(run), Console(file=buffer, width=120))
    return buffer.getvalue().splitlines()


def _printed_and_saved(capsys, argv: list[str], out: Path) -> tuple[list[str], str]:
    assert main([*argv, "--out", str(out)]) == 0
    captured = capsys.readouterr()
    return captured.out.splitlines(), captured.err


def test_profile_train_prints_the_view_of_its_saved_document(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "120")
    out = tmp_path / "run"
    printed, err = _printed_and_saved(capsys, [*TRAIN, "--monitor-memory"], out)
    assert printed == _view_lines(out)
    assert printed[0].startswith("profile train gpt-tiny: host timeline")
    assert f"trace: {out / 'trace.json'} (open in https://ui.perfetto.dev)" in printed
    assert any(line.startswith("memory peak ") for line in printed)
    assert err.splitlines()[-1] == f"wrote {out / 'result.json'}"


def test_profile_train_json_is_exactly_the_saved_document(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*TRAIN, "--out", str(out), "--json", "--threads", "1"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((out / "result.json").read_text())
    assert printed["data"]["name"] == "gpt-tiny" and printed["kind"] == "profile-train"
    # Threads are chosen as bench chooses them, and recorded with the wait policy.
    cpu = printed["data"]["cpu"]
    assert (cpu["threads"], cpu["threads_reason"]) == (1, "--threads")
    assert "omp_wait_policy" in cpu


def test_profile_memory_prints_the_view_and_json_is_the_saved_document(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("COLUMNS", "120")
    argv = ["profile", "memory", "--preset", "gpt-tiny", "--measure", "--device", "cpu"]
    out = tmp_path / "estimate"
    printed, _ = _printed_and_saved(capsys, argv, out)
    assert printed == _view_lines(out)
    assert printed[0].startswith("fp32: 0.1M parameters, micro-batch")
    assert any("estimate vs measured on cpu" in line for line in printed)
    assert main([*argv, "--out", str(tmp_path / "again"), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document == json.loads((tmp_path / "again" / "result.json").read_text())
    assert document["kind"] == "profile-memory" and document["data"]["measured"] is not None


def test_profile_memory_from_python_returns_the_estimate_quietly(capsys):
    """The command's one config is the request: the library call takes it as the flags make it,
    and a bad combination is a UserError there too."""
    from rocmkit.errors import UserError
    from rocmkit.profile.command import run
    from rocmkit.profile.commands import EstimateRequest

    result = run(EstimateRequest(preset="gpt2-124m"))
    assert result.kind == "profile-memory" and result.data["label"] == "bf16"
    assert capsys.readouterr() == ("", "")
    with pytest.raises(UserError, match="world size above 1"):
        run(EstimateRequest(preset="gpt2-124m", world_size=2))


def test_profile_infer_prints_the_view_of_its_saved_document(tmp_path, monkeypatch, capsys):
    transformers = pytest.importorskip("transformers")
    monkeypatch.setenv("COLUMNS", "120")
    config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=64)
    model_dir = tmp_path / "tiny-gpt2"
    transformers.GPT2LMHeadModel(config).save_pretrained(model_dir)
    argv = ["profile", "infer", str(model_dir), "--wait", "0", "--warmup", "1", "--active", "1"]
    argv += ["--max-new-tokens", "2"]
    out = tmp_path / "out"
    printed, _ = _printed_and_saved(capsys, argv, out)
    assert printed == _view_lines(out)
    assert printed[0].startswith("profile infer tiny-gpt2:")


@pytest.mark.parametrize(
    "argv",
    [
        ["profile", "train", "--preset", "gpt-tiny", "--wait", "x"],
        ["profile", "train", "--preset", "gpt-tiny", "--threads", "0"],
        ["profile", "train", "--preset", "gpt-tiny", "--top", "0"],
        ["profile", "train", "--preset", "gpt-tiny", "--active", "0"],
        ["profile", "memory", "--preset", "gpt-tiny", "--world-size", "2", "--out", "runs/m"],
        ["profile", "memory", "--preset", "gpt-tiny", "--parallel", "nope"],
        ["profile", "infer"],
    ],
)
def test_a_bad_flag_exits_2_and_makes_no_run_directory(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("rocmkit: error:")
    assert not (tmp_path / "runs").exists()
