"""`rocmkit bench` as a user runs it: output location checked first, Ctrl-C keeps finished suites,
the console and `--json` show the saved run, and the library call is the command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocmkit.cli.main import main

SRC = Path(__file__).resolve().parents[2] / "src"
TINY_GEMM = ["--gemm.dtypes", "fp32", "--gemm.timing.max_samples", "3", "--gemm.sizes", "32"]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1"}


def test_an_unwritable_out_fails_in_one_line_before_any_suite(tmp_path):
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "rocmkit", "bench", "--out", "/proc/forbidden"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=60,
    )
    elapsed = time.monotonic() - start
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(
        "rocmkit: error: cannot write the --out directory /proc/forbidden"
    )
    assert done.stderr.count("\n") == 1 and "running" not in done.stderr
    assert elapsed < 5  # no suite ran (the default bench takes a minute here)


@pytest.mark.slow
@pytest.mark.parametrize("background", [False, True], ids=["terminal", "background"])
def test_ctrl_c_keeps_the_finished_suites_and_marks_the_run_partial(tmp_path, background):
    """Also when started in the background of a non-interactive shell, which starts a process
    with SIGINT ignored: `kill -INT` must still stop it (it ran on for minutes before)."""
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "rocmkit", "bench", "--device", "cpu", "--no-power"]
    argv += ["--suite", "gemm,train-precision", "--out", str(out), *TINY_GEMM]
    argv += ["--train_precision.models", "gpt-tiny", "--train_precision.steps", "500"]

    def umask() -> None:  # the user's umask (and the background shell's SIGINT), in the child
        os.umask(0o027)
        if background:
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=tmp_path,
        preexec_fn=umask,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if "train-precision" in line:  # gemm finished, the long suite started
            break
    time.sleep(2)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    data = json.loads((out / "result.json").read_text())
    assert data["partial"] == "interrupted (Ctrl-C) during the train-precision suite"
    suites = {m["suite"] for m in data["measurements"]}
    assert "gemm" in suites and "train-precision" not in suites
    assert "partial run: interrupted" in (out / "report.md").read_text()
    assert data["outcome"] == "interrupted"
    assert "partial run: interrupted" in stdout and f"what finished is saved in {out}" in stderr
    assert (out / "result.json").stat().st_mode & 0o777 == 0o640


def _run_on_a_terminal(argv: list[str], cwd: Path) -> tuple[int, str]:
    """Run with stdout and stderr on a pseudo-terminal, as in an interactive shell."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, stdout=follower, stderr=follower, env=_env(), cwd=cwd)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return proc.wait(timeout=120), b"".join(chunks).decode(errors="replace")


@pytest.mark.slow
def test_progress_bar_on_a_terminal_plain_lines_in_logs_nothing_under_json(tmp_path):
    argv = [sys.executable, "-m", "rocmkit", "bench", "--device", "cpu", "--no-power"]
    argv += ["--suite", "gemm", *TINY_GEMM, "--gemm.sizes", "32,48"]
    code, screen = _run_on_a_terminal([*argv, "--out", str(tmp_path / "tty")], tmp_path)
    assert code == 0 and "gemm (1/1)" in screen and "ETA" in screen and "2/2" in screen
    logged = subprocess.run(
        [*argv, "--out", str(tmp_path / "log")],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=120,
    )
    assert "running gemm (1/1)..." in logged.stderr and "ETA" not in logged.stderr
    quiet = subprocess.run(
        [*argv, "--out", str(tmp_path / "json"), "--json"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=120,
    )
    assert quiet.returncode == 0 and quiet.stderr.startswith("wrote ")  # no progress, one note
    assert quiet.stderr.count("\n") == 1
    assert json.loads(quiet.stdout)["kind"] == "bench"


@pytest.mark.slow
def test_default_out_and_the_short_train_flags_of_the_train_precision_suite(tmp_path):
    argv = [sys.executable, "-m", "rocmkit", "bench", "--device", "cpu", "--no-power"]
    argv += ["--suite", "train-precision", "--train_precision.models", "gpt-tiny"]
    argv += ["--train_precision.dtypes", "fp32", "--train_precision.backends", "torch"]
    argv += ["--steps", "2", "--micro-batch", "2", "--json"]
    done = subprocess.run(
        argv, capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=180
    )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    (run,) = (tmp_path / "runs").iterdir()
    assert run.name.startswith("bench-20")
    assert json.loads((run / "result.json").read_text()) == printed
    suite = printed["config"]["train_precision"]
    assert suite["steps"] == 2
    assert suite["overrides"]["gpt-tiny"]["train.micro_batch"] == "2"
    rows = [m for m in printed["measurements"] if m["suite"] == "train-precision"]
    assert rows and all(m["params"]["steps"] == 2 for m in rows)


@pytest.fixture
def wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # one width for the command and the report


def _tiny(out: Path, *tail: str) -> list[str]:
    return ["bench", "--device", "cpu", "--no-power", "--suite", "gemm", *TINY_GEMM,
            "--out", str(out), *tail]  # fmt: skip


def test_json_prints_exactly_the_saved_document(tmp_path, capsys):
    assert main(_tiny(tmp_path / "run", "--json")) == 0
    printed = capsys.readouterr()
    assert json.loads(printed.out) == json.loads((tmp_path / "run" / "result.json").read_text())
    assert printed.err.startswith("wrote ") and printed.err.count("\n") == 1  # no progress


def test_the_console_shows_what_rocmkit_report_shows(tmp_path, capsys, wide):
    run = tmp_path / "run"
    assert main(_tiny(run, "--monitor-memory")) == 0
    bench = capsys.readouterr()
    assert main(["report", str(run)]) == 0
    report = capsys.readouterr()
    assert "GEMM throughput" in bench.out and "│ bench run │" in bench.out
    assert bench.out == report.out
    assert f"wrote {run / 'result.json'}, {run / 'report.html'}" in bench.err


def test_exit_codes_follow_the_outcome(tmp_path, capsys, monkeypatch):
    """0 ok, 1 a wrong figure (saved), 2 a user error (no run directory); 130 for Ctrl-C is
    test_ctrl_c_keeps_the_finished_suites_and_marks_the_run_partial."""
    from rocmkit import driver
    from rocmkit.bench import SUITES, Suite, register_suite
    from rocmkit.bench.command import BenchRequest, run
    from rocmkit.config import parse_overrides
    from rocmkit.results import Measurement, load_result

    tiny = parse_overrides(TINY_GEMM)
    result = run(BenchRequest(device="cpu", power=False, suites=("gemm",), overrides=tiny))
    assert capsys.readouterr() == ("", "")  # a library call is quiet
    assert result.kind == "bench" and result.outcome == "ok" and driver.exit_code(result) == 0
    assert main(_tiny(tmp_path / "bad", "--gemm.sizes", "0")) == 2
    assert not (tmp_path / "bad").exists()
    # a figure whose check failed (a collective's wrong sum) fails the run, and is saved
    monkeypatch.setattr("rocmkit.bench.suites.SUITES", dict(SUITES))
    wrong = Measurement(suite="sum", name="all_reduce 1 KiB", metric="busbw", value=1.0,
                        unit="GB/s", extra={"correct": False})  # fmt: skip
    register_suite(Suite(name="sum", description="test", run=lambda c, p, s: [wrong]))
    argv = ["bench", "--device", "cpu", "--no-power", "--suite", "sum"]
    assert main([*argv, "--out", str(tmp_path / "wrong")]) == 1
    assert load_result(tmp_path / "wrong").outcome == "failed"


def test_the_config_is_sized_for_the_device_once_and_bad_settings_fail_before_it(
    tmp_path, monkeypatch
):
    """`build` checks the settings with no device sizes; `run` sizes the config once. A bad
    setting (unknown key, suite or section, a word for a number, a bad value) fails in `build`:
    exit 2, no run directory, nothing sized for a device."""
    from rocmkit.bench import command

    calls: list[str] = []
    real = command.device_defaults

    def counted(platform, mode):
        calls.append(platform.backend)
        return real(platform, mode)

    monkeypatch.setattr(command, "device_defaults", counted)
    for bad in (
        ["--gemm.sizez", "32"],
        ["--gemm.sizes", "x"],
        ["--gemm.dtypes", "fp64"],
        ["--suite_configs.nosuch.size", "3"],
        ["--suite", "nosuch"],
    ):
        assert main(_tiny(tmp_path / "bad", *bad)) == 2, bad
        assert not (tmp_path / "bad").exists() and calls == [], bad
    assert main(_tiny(tmp_path / "ok", "--label", "once")) == 0
    assert len(calls) == 1  # sized once, for the device the run found
    saved = json.loads((tmp_path / "ok" / "result.json").read_text())
    assert saved["config"]["gemm"]["sizes"] == [32]  # the user's size over the device's
