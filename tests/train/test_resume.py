"""Resume and failure as a user meets them (issue 23): `--resume auto` picks the newest run with a
valid checkpoint, a finished run is left as it was, a damaged checkpoint falls back to the older
one (same losses as an uninterrupted run), and what cannot be resumed is one line, exit 2."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch
from loop_helpers import as_flags, cli_env, rocmkit_command, tiny_overrides

from rocmkit.cli.main import main
from rocmkit.train import integrity

STEPS = 6
SETTINGS = {"train.steps": STEPS, "checkpoint.every": 2, "checkpoint.keep": 2}


def _flags(**extra: object) -> list[str]:
    overrides = tiny_overrides(Path("unused"), **{**SETTINGS, **extra})
    del overrides["logging.run_dir"]
    return ["train", "--preset", "gpt-tiny", *as_flags(overrides)]


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


def _losses(run: Path) -> dict[int, float]:
    """The last logged loss of each step (a resumed run logs the steps it repeats again)."""
    return {r["step"]: r["loss"] for r in map(json.loads, (run / "metrics.jsonl").open())}


def _files(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[int, float]:
    """The losses of an uninterrupted run."""
    out = tmp_path_factory.mktemp("reference") / "run"
    assert main([*_flags(), "--out", str(out)]) == 0
    return _losses(out)


@pytest.fixture(scope="module")
def stopped(tmp_path_factory) -> Path:
    """A run stopped at step 4 of 6: checkpoints step_2 and step_4 (keep 2)."""
    out = tmp_path_factory.mktemp("stopped") / "run"
    assert main([*_flags(), "--out", str(out), "--train.stop_at_step", "4"]) == 0
    return out


def _copy(stopped: Path, tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(stopped, run)
    return run


def _shard(checkpoint: Path) -> Path:
    return max(checkpoint.glob("*.distcp"), key=lambda p: p.stat().st_size)


def _truncate(checkpoint: Path) -> None:
    shard = _shard(checkpoint)
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])


def _empty_metadata(checkpoint: Path) -> None:
    (checkpoint / ".metadata").write_bytes(b"")


def _missing_shard(checkpoint: Path) -> None:
    _shard(checkpoint).unlink()


def _flipped_bytes(checkpoint: Path) -> None:
    shard = _shard(checkpoint)
    data = bytearray(shard.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 8] = bytes(b ^ 0xFF for b in data[middle : middle + 8])
    shard.write_bytes(bytes(data))


def _missing_extra(checkpoint: Path) -> None:
    (checkpoint / "extra_rank0.pt").unlink()


DAMAGE = {
    "truncated": (_truncate, "bytes,"),
    "empty metadata": (_empty_metadata, ".metadata is 0 bytes"),
    "missing shard": (_missing_shard, "is missing"),
    "flipped bytes": (_flipped_bytes, "does not match its checksum"),
    "missing extra": (_missing_extra, "extra_rank0.pt is missing"),
}


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_damaged_checkpoint_falls_back_to_the_older_one_with_the_same_losses(
    kind, stopped, reference, tmp_path, capsys
):
    run = _copy(stopped, tmp_path)
    damage, reason = DAMAGE[kind]
    damage(run / "checkpoints" / "step_00000004")
    code, err = _main(capsys, *_flags(), "--out", str(run), "--resume", "auto")
    assert code == 0, err
    (line,) = [line for line in err.splitlines() if "is damaged" in line]
    assert "step_00000004 is damaged (" in line and reason in line, line
    assert line.endswith("; using step_00000002")
    assert _losses(run) == reference  # steps 3..6 again, exactly as in one go


def test_no_valid_checkpoint_is_one_line_and_exit_2(stopped, tmp_path, capsys):
    run = _copy(stopped, tmp_path)
    for checkpoint in (run / "checkpoints").glob("step_*"):
        _truncate(checkpoint)
    before = _files(run)
    code, err = _main(capsys, *_flags(), "--out", str(run), "--resume", "auto")
    assert code == 2
    assert "no valid checkpoint in" in err and "step_00000004:" in err
    assert len(err.strip().splitlines()) == 1
    assert _files(run) == before
    # Naming one damaged checkpoint is refused as well, in one line.
    code, err = _main(
        capsys, *_flags(), "--out", str(tmp_path / "new"),
        "--resume", str(run / "checkpoints" / "step_00000002"),
    )  # fmt: skip
    assert code == 2 and "step_00000002 is damaged" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("flag", "value", "named"),
    [
        ("--model.d_model", "64", "model.d_model 32 -> 64"),
        ("--model.n_layer", "3", "model.n_layer 2 -> 3"),
        ("--precision", "bf16", "precision.dtype 'fp32' -> 'bf16'"),
    ],
)
def test_checkpoint_of_another_shape_or_precision_is_one_line_exit_2(
    flag, value, named, stopped, tmp_path, capsys
):
    run = _copy(stopped, tmp_path)
    code, err = _main(capsys, *_flags(), "--out", str(run), "--resume", "auto", flag, value)
    assert code == 2, err
    (line,) = err.strip().splitlines()
    assert "different model or precision" in line and named in line


def test_a_checkpoint_being_written_is_never_picked(stopped, tmp_path):
    run = _copy(stopped, tmp_path)
    checkpoints = run / "checkpoints"
    # Killed while step 6 was being written: a whole-looking copy, but still in its .tmp- name.
    shutil.copytree(checkpoints / "step_00000004", checkpoints / ".tmp-step_00000006")
    choice = integrity.resolve("auto", checkpoints)
    assert choice.path == checkpoints / "step_00000004" and not choice.damaged


def test_resume_auto_picks_the_newest_run_with_a_valid_checkpoint(
    tmp_path, monkeypatch, capsys, reference
):
    monkeypatch.chdir(tmp_path)
    code, err = _main(capsys, *_flags(), "--train.stop_at_step", "4")
    assert code == 0, err
    (real,) = (tmp_path / "runs").iterdir()
    rejected = [
        [*_flags(), "--resume", "nosuchdir"],
        [*_flags(), "--data", str(tmp_path / "no-such-folder")],
    ]
    if not torch.cuda.is_available():
        rejected.append([*_flags(), "--train.device", "cuda"])
    for argv in rejected:
        code, err = _main(capsys, *argv)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert list((tmp_path / "runs").iterdir()) == [real]  # a rejected run leaves nothing
    (tmp_path / "runs" / "train-29991231-235959").mkdir()  # empty, as older versions left them
    code, err = _main(capsys, *_flags(), "--resume", "auto")
    assert code == 0, err
    assert f"--resume auto: continuing {Path('runs') / real.name} from step 4" in err
    assert _losses(real) == reference


def test_resume_auto_with_no_valid_checkpoint_anywhere_starts_fresh(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "train-20260101-000000").mkdir(parents=True)
    code, err = _main(capsys, *_flags(**{"train.steps": 2}), "--resume", "auto")
    assert code == 0, err
    notes = [line for line in err.splitlines() if "--resume auto" in line]
    assert len(notes) == 1 and "has a valid checkpoint; starting fresh in runs/train-" in notes[0]


def test_finished_run_is_left_as_it_was_unless_more_steps_are_asked(
    stopped, reference, tmp_path, capsys
):
    run = _copy(stopped, tmp_path)
    argv = [*_flags(), "--out", str(run), "--resume", "auto"]
    assert main(argv) == 0
    capsys.readouterr()
    before = _files(run)
    code, err = _main(capsys, *argv)
    assert code == 0, err
    assert "already complete (step 6 of 6)" in err
    assert _files(run) == before  # result.json byte for byte, tokens/s and final loss kept
    result = json.loads((run / "result.json").read_text())
    assert result["data"]["steps_done"] == 6
    code, err = _main(capsys, *argv, "--train.steps", "8")
    assert code == 0, err
    assert sorted(_losses(run)) == list(range(1, 9))
    assert json.loads((run / "result.json").read_text())["data"]["steps_done"] == 8


def _torchrun(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        rocmkit_command(*argv, nproc=2), env=cli_env(), cwd=cwd,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.multiproc
@pytest.mark.slow
def test_two_ranks_fall_back_from_a_damaged_checkpoint_with_the_same_losses(tmp_path):
    flags = [*_flags(), "--parallel", "ddp"]
    whole, split = tmp_path / "whole", tmp_path / "split"
    assert _torchrun(*flags, "--out", str(whole)).returncode == 0
    proc = _torchrun(*flags, "--out", str(split), "--train.stop_at_step", "4")
    assert proc.returncode == 0, proc.stderr[-3000:]
    checkpoint = split / "checkpoints" / "step_00000004"
    assert len(list(checkpoint.glob("*.distcp"))) == 2  # one shard per rank
    _truncate(checkpoint)
    proc = _torchrun(*flags, "--out", str(split), "--resume", "auto")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.count("step_00000004 is damaged") == 1  # said once, by rank 0
    assert _losses(split) == _losses(whole)


@pytest.mark.multiproc
@pytest.mark.slow
def test_sigterm_to_the_torchrun_launcher_stops_every_rank_at_one_step_with_a_checkpoint(
    tmp_path,
):
    run = tmp_path / "run"
    argv = [*_flags(**{"train.steps": 2000, "checkpoint.every": 500}), "--parallel", "ddp"]
    proc = subprocess.Popen(
        rocmkit_command(*argv, "--out", str(run), nproc=2),
        env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    log, deadline = run / "metrics.jsonl", time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and len(log.read_text().splitlines()) >= 5:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    # torchrun itself exits 1 (its SignalException); the ranks stop cleanly and agree.
    saved = json.loads((run / "result.json").read_text())
    stopped_at = saved["data"]["steps_done"]
    assert saved["outcome"] == "terminated", err[-3000:]
    assert saved["partial"] == f"stopped by SIGTERM at step {stopped_at} of 2000"
    checkpoint = run / "checkpoints" / f"step_{stopped_at:08d}"
    assert (run / "checkpoints" / "latest").read_text().strip() == checkpoint.name
    assert sorted(p.name for p in checkpoint.glob("extra_rank*.pt")) == [
        "extra_rank0.pt",
        "extra_rank1.pt",
    ]
    assert integrity.damage(checkpoint) is None


def test_the_stop_notice_says_the_step_the_estimate_and_how_to_stop_now():
    from rocmkit.train.failures import stop_notice

    text = stop_notice("SIGINT", stop_step=41, total_steps=400, remaining_s=0.25)
    assert text == (
        "SIGINT: stopping after step 41 of 400 and saving a checkpoint, est. 0.2 s; "
        "Ctrl-C again to stop now without a new checkpoint"
    )
    text = stop_notice("SIGTERM", stop_step=5, total_steps=9, remaining_s=None)
    assert text == "SIGTERM: stopping after step 5 of 9 and saving a checkpoint"
