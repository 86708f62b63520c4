"""`rocmkit train`'s output rule as a user meets it: `--out DIR` (default `runs/train-<UTC stamp>`,
never shared by two runs), `--run-dir` as a deprecated alias, `--resume auto` with and without
`--out`, and `--json` printing the same document that result.json holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from loop_helpers import as_flags, tiny_overrides

from rocmkit.cli.main import main


def _flags(**extra: object) -> list[str]:
    """gpt-tiny, tiny and pinned to the CPU, with no run directory of its own."""
    overrides = tiny_overrides(Path("unused"), **{"train.steps": 2, **extra})
    del overrides["logging.run_dir"]
    return ["train", "--preset", "gpt-tiny", *as_flags(overrides)]


def _train(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out, captured.err


def _logged_steps(run: Path) -> list[int]:
    return [json.loads(line)["step"] for line in (run / "metrics.jsonl").open()]


def test_without_out_each_run_gets_its_own_stamped_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    # Both runs start "in the same second": the second still gets a directory of its own.
    monkeypatch.setattr("rocmkit.runs.utc_stamp", lambda now=None: "20261123-120000")
    argv = _flags(**{"checkpoint.save_final": "false"})
    _train(capsys, *argv)
    _train(capsys, *argv)
    runs = sorted((tmp_path / "runs").iterdir())
    # The second run did not resume or overwrite the first.
    assert [r.name for r in runs] == ["train-20261123-120000", "train-20261123-120000-2"]
    for run in runs:
        result = json.loads((run / "result.json").read_text())
        assert result["config"]["logging"]["run_dir"] == str(Path("runs") / run.name)
        assert _logged_steps(run) == [1, 2]


def test_out_names_the_run_directory(tmp_path, capsys):
    out = tmp_path / "my-run"
    _train(capsys, *_flags(), "--out", str(out))
    result = json.loads((out / "result.json").read_text())
    assert result["config"]["logging"]["run_dir"] == str(out)
    assert (out / "checkpoints").is_dir()


def test_run_dir_still_works_and_says_it_is_deprecated(tmp_path, capsys):
    out = tmp_path / "old-style"
    _, err = _train(capsys, *_flags(), "--run-dir", str(out))
    assert (out / "result.json").is_file()
    notes = [line for line in err.splitlines() if "--run-dir is deprecated" in line]
    assert notes == ["rocmkit train: --run-dir is deprecated and will be removed; use --out DIR"]
    code = main([*_flags(), "--run-dir", str(out), "--out", str(tmp_path / "other")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "give only --out DIR" in err and "\n" not in err


def test_resume_auto_with_out_continues_that_run(tmp_path, capsys):
    out = tmp_path / "run"
    argv = [*_flags(**{"train.steps": 4}), "--out", str(out)]
    _train(capsys, *argv, "--train.stop_at_step", "2")
    _train(capsys, *argv, "--resume", "auto")
    assert _logged_steps(out) == [1, 2, 3, 4]  # the second run began at step 3


def test_resume_auto_without_out_continues_the_newest_train_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = _flags(**{"train.steps": 4})
    _, err = _train(capsys, *argv, "--resume", "auto", "--train.stop_at_step", "2")
    assert "--resume auto: no run in runs/train-* has a valid checkpoint; starting fresh" in err
    (first,) = (tmp_path / "runs").iterdir()
    _, err = _train(capsys, *argv, "--resume", "auto")
    assert f"--resume auto: continuing {Path('runs') / first.name} from step 2" in err
    assert [p.name for p in (tmp_path / "runs").iterdir()] == [first.name]
    assert _logged_steps(first) == [1, 2, 3, 4]


def test_json_prints_the_saved_result_document_and_keeps_progress_off_stdout(tmp_path, capsys):
    out = tmp_path / "run"
    stdout, err = _train(capsys, *_flags(), "--out", str(out), "--json", "--monitor-memory")
    printed = json.loads(stdout)
    saved = json.loads((out / "result.json").read_text())
    assert printed == saved
    assert printed["kind"] == "train" and "step 2/2" in err
    # The monitored peak is in the document once, beside the loop's own measurements.
    assert [m["metric"] for m in saved["measurements"] if m["suite"] == "memory"] == ["peak_rss"]
    assert any(m["metric"] == "step_time" for m in saved["measurements"])


def test_out_works_with_a_config_file_and_a_dotted_run_dir_still_sets_the_directory(
    tmp_path, capsys
):
    config = tmp_path / "run.toml"
    config.write_text(f'[logging]\nrun_dir = "{tmp_path / "from-file"}"\n')
    _train(capsys, *_flags(), "--config", str(config))
    assert (tmp_path / "from-file" / "result.json").is_file()
    _train(capsys, *_flags(), "--config", str(config), "--out", str(tmp_path / "flag"))
    assert (tmp_path / "flag" / "result.json").is_file()
    dotted = tmp_path / "dotted"
    _train(capsys, *_flags(), "--logging.run_dir", str(dotted))
    assert (dotted / "result.json").is_file()


def test_cpu_threads_are_chosen_like_bench_and_recorded(tmp_path, monkeypatch, capsys):
    import torch

    before = torch.get_num_threads()
    try:
        _train(capsys, *_flags(), "--out", str(tmp_path / "a"), "--threads", "1")
        cpu = json.loads((tmp_path / "a" / "result.json").read_text())["data"]["cpu"]
        assert (cpu["threads"], cpu["threads_reason"]) == (1, "--threads")
        assert "omp_wait_policy" in cpu and "other_cores_before" in cpu
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        _train(capsys, *_flags(), "--out", str(tmp_path / "b"))
        cpu = json.loads((tmp_path / "b" / "result.json").read_text())["data"]["cpu"]
        assert cpu["threads_reason"].endswith("cores free") and cpu["threads"] >= 1
    finally:
        torch.set_num_threads(before)
    code = main([*_flags(), "--threads", "0"])
    assert code == 2 and "--threads must be a positive integer" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.multiproc
def test_under_torchrun_all_ranks_write_one_default_directory(tmp_path):
    import subprocess

    from loop_helpers import cli_env, rocmkit_command

    # Rank 0 creates its stamped directory first; without agreement rank 1 would pick "-2".
    argv = rocmkit_command(*_flags(), "--parallel", "ddp", nproc=2)
    proc = subprocess.run(
        argv, env=cli_env(), cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = (tmp_path / "runs").iterdir()
    assert (run / "result.json").is_file()
    assert (run / "checkpoints" / "latest").is_file()  # both ranks' shards in the one directory
