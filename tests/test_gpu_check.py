"""scripts/gpu-check: refuses a machine without a GPU, and summarises every step it ran."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from rocmkit.platform.backend import gpu_available

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "gpu-check"


def _run(*args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    import sys

    full_env = {**os.environ, "PYTHON": sys.executable, "GPU_CHECK_WORKERS": "1", **env}
    return subprocess.run(
        ["bash", str(SCRIPT), *args], env=full_env, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.slow
def test_without_a_gpu_it_refuses_in_one_line(tmp_path: Path):
    if gpu_available():
        pytest.skip("this machine has a GPU: gpu-check runs instead of refusing")
    done = _run(GPU_CHECK_OUT=str(tmp_path / "out"))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--allow-cpu" in done.stderr
    assert not (tmp_path / "out").exists()  # nothing written before it refused


@pytest.mark.slow
def test_every_step_runs_past_a_failure_and_lands_in_the_summary(tmp_path: Path):
    tests = tmp_path / "test_sample.py"
    tests.write_text("def test_passes():\n    pass\n\n\ndef test_fails():\n    assert False\n")
    out = tmp_path / "out"
    done = _run(
        "--allow-cpu",
        GPU_CHECK_OUT=str(out),
        GPU_CHECK_PYTEST_ARGS=str(tests),
        GPU_CHECK_BENCH_ARGS="--suite gemm --gemm.sizes 32 --gemm.dtypes fp32 --no-power",
        GPU_CHECK_BURN_IN="2s",
        # A short eager run: the full CPU benchmark compiles two models three times (minutes).
        GPU_CHECK_TRAIN_ARGS="--models gpt --no-compile --steps 5 --warmup 5 --log-every 5 --repeats 3 --no-result",
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]  # the failing test
    (summary,) = out.glob("gpu-check-*.md")
    rows = {
        line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:-1]]
        for line in summary.read_text().splitlines()
        if line.startswith("| ") and not line.startswith("| step")
    }
    assert list(rows) == ["pytest", "doctor", "bench", "burn-in", "train-vs-reference"]
    assert rows["pytest"][0].startswith("FAIL") and rows["pytest"][2].startswith(
        "1 passed, 1 failed"
    )
    assert rows["doctor"][0] in ("pass", "FAIL (exit 1)")
    counts = json.loads((out / "doctor.json").read_text())["data"]["counts"]
    assert counts["ok"] > 0  # the figures are the doctor's, not zeros read from the wrong place
    assert rows["doctor"][2].startswith(
        f"{counts['fail']} fail, {counts['warn']} warn, {counts['ok']} ok"
    )
    assert (
        rows["bench"][0] == "pass"
        and "GEMM TFLOPS" in rows["bench"][2]
        and "fp32" in rows["bench"][2]
    )
    # on the shared CPU a 2 s burn-in may see neighbours' load as decay: pass or flagged, never silent
    assert rows["burn-in"][0] in ("pass", "FAIL (exit 1)")
    device = "cuda:0" if gpu_available() else "cpu"  # --allow-cpu still uses a GPU that is there
    assert rows["burn-in"][2].startswith(
        (f"no flag; sustained: {device} gemm", f"FLAGGED {device}")
    )
    train_log = out / "train_vs_reference.log"
    assert rows["train-vs-reference"][0] in ("pass", "skipped"), (
        train_log.read_text()[-3000:] if train_log.is_file() else "no train_vs_reference.log"
    )
    assert summary.read_text() in done.stdout  # the same table is printed
    assert (out / "bench" / "result.json").is_file() and (out / "doctor.json").is_file()
