"""Noise flags: a figure measured while other processes took the CPU is re-measured, then flagged
in result.json and in every report format, and `rocmkit report` shows no bare ratio for it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocmkit.measure import timing
from rocmkit.measure.noise import Noise, threads_for
from rocmkit.measure.timing import TimingConfig, measure

SRC = Path(__file__).resolve().parents[2] / "src"


def _noise(**overrides: float) -> Noise:
    facts = dict(
        median=1.0, iqr=0.05, cv=0.05, num_samples=20, other_cores=0.1, own_cores=1.0,
        threads=1, cpus=2,
    )  # fmt: skip
    facts.update(overrides)
    return Noise(**facts)  # type: ignore[arg-type]


def test_steady_figures_on_a_quiet_machine_are_not_flagged():
    assert _noise().reasons(on_cpu=True) == []
    # a few preempted samples give a huge CV but leave the median alone
    assert _noise(cv=1.9, iqr=0.03).reasons(on_cpu=True) == []


def test_wide_spread_and_starved_threads_are_flagged():
    (spread,) = _noise(iqr=0.6, cv=0.4).reasons(on_cpu=True)
    assert "middle half of 20 samples spans 60%" in spread
    (few,) = _noise(num_samples=3, iqr=0.0, cv=0.5).reasons(on_cpu=True)
    assert "CV over 3" in few
    load = dict(threads=2, other_cores=1.0, own_cores=1.1)
    (starved,) = _noise(num_samples=6, **load).reasons(on_cpu=True)
    assert "other processes used 1.0 of 2 cores" in starved
    # the same load is harmless when the run still got the CPU it asked for, or ran on a GPU,
    # or when many tight samples show the median survived it
    assert (
        _noise(num_samples=6, threads=2, other_cores=1.0, own_cores=1.9).reasons(on_cpu=True) == []
    )
    assert _noise(num_samples=6, **load).reasons(on_cpu=False) == []
    assert _noise(num_samples=50, **load).reasons(on_cpu=True) == []
    assert _noise(num_samples=50, iqr=0.2, **load).reasons(on_cpu=True) == [starved]


def test_threads_follow_the_free_cores():
    assert threads_for(2.0, 2) == 2 and threads_for(0.9, 2) == 1 and threads_for(0.1, 2) == 1
    assert threads_for(7.6, 4) == 4


def test_an_unsteady_figure_is_measured_once_more(monkeypatch):
    monkeypatch.setattr(timing, "other_cores", lambda start, end: 0.0)
    monkeypatch.setattr(timing, "own_cores", lambda start, end: 1.0)
    attempts = iter([[0.001, 0.012] * 3, [0.004] * 6])  # scattered, then steady (seconds)
    monkeypatch.setattr(timing, "_time_callable", lambda fn, config, device: (next(attempts), None))
    config = TimingConfig(warmup=0, min_samples=6, max_samples=6, budget_s=0.001)
    stats = measure(lambda: None, config, "cpu")
    assert stats.first_noise and "middle half of 6 samples" in stats.first_noise[0]
    assert stats.median == 0.004 and stats.noise == ()
    assert "once, because middle half" in stats.noise_extra()["remeasured"]


def _rocmkit(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop("OMP_NUM_THREADS", None)
    return subprocess.run(
        [sys.executable, "-m", "rocmkit", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def busy_cpu():
    """Processes spinning on every core, twice over and one more, as other users of a shared
    machine would: enough that the load wins even against other jobs the test machine runs."""
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(2 * (os.cpu_count() or 2) + 1)
    ]
    time.sleep(0.5)
    yield
    for spinner in spinners:
        spinner.kill()
        spinner.wait()


@pytest.mark.slow
def test_a_measurement_under_load_is_flagged_everywhere(busy_cpu, tmp_path):
    threads = str(os.cpu_count() or 2)  # ask for every core while the spinners hold them
    argv = ["bench", "--suite", "gemm", "--device", "cpu", "--threads", threads, "--no-power"]
    argv += ["--gemm.sizes", "256", "--gemm.dtypes", "fp32", "--out", str(tmp_path / "run")]
    argv += ["--gemm.timing.max_samples", "5"]  # few samples: the load alone decides
    done = _rocmkit(*argv, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "run" / "result.json").read_text())
    (gflops,) = [m for m in data["measurements"] if m["metric"] == "gflops"]
    assert "other processes used" in gflops["extra"]["noisy"]
    assert "once, because" in gflops["extra"]["remeasured"]
    assert gflops["stats"]["other_cores"] >= 0.5
    assert data["environment"]["load"]["gemm"]["threads"] == int(threads)
    assert "(noisy)" in done.stdout and "do not trust this figure" in done.stdout
    assert "(noisy)" in (tmp_path / "run" / "report.md").read_text()
    assert "(noisy)" in (tmp_path / "run" / "report.html").read_text()
    _report_refuses_a_bare_ratio(tmp_path)


def _report_refuses_a_bare_ratio(tmp_path: Path) -> None:
    shutil.copytree(tmp_path / "run", tmp_path / "again")
    again = tmp_path / "again" / "result.json"
    data = json.loads(again.read_text())
    data["label"] = "again"
    for m in data["measurements"]:
        m["extra"].pop("noisy", None)
    again.write_text(json.dumps(data))
    done = _rocmkit("report", "run", "again", "--format", "md", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("| fp32 256"))
    assert row.rstrip(" |").endswith("noisy") and "x |" not in row
    assert "flagged noisy" in done.stdout
