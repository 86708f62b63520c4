"""Console tables fit the terminal: numbers are never split, and columns that do not fit are
left out by name instead of being squeezed into broken cells."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocmkit.cli.main import main
from rocmkit.results import Measurement, RunResult

METRICS = [f"metric_{i}" for i in range(12)]


def _wide_run(tmp_path: Path) -> Path:
    rows = [
        Measurement(
            suite="gemm",
            name=f"bf16 {n}^3",
            metric=metric,
            value=182.5 + 1000.0 * i + n,
            unit="tflops",
        )
        for n in (1024, 2048)
        for i, metric in enumerate(METRICS)
    ]
    run = RunResult(kind="bench", environment={}, config={}, measurements=rows, label="wide")
    return run.save(tmp_path / "wide")


@pytest.mark.parametrize("width", [60, 100, 400])
def test_numbers_are_never_split_and_dropped_columns_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], width: int
) -> None:
    os.environ["COLUMNS"] = str(width)  # restored by the hygiene fixture
    assert main(["report", str(_wide_run(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= width for line in out.splitlines())
    assert "\u2026" not in out  # no cell or header cut to an ellipsis
    header = next(line for line in out.splitlines() if "metric 0" in line)
    shown = header.count("(tflops)")
    assert shown >= 1
    row = next(line for line in out.splitlines() if "bf16 1024^3" in line)
    cells = [c.strip() for c in row.split("\u2502")[2:-1]]  # the figures, whole
    assert cells == [f"{round(182.5 + 1000.0 * i + 1024):,}" for i in range(shown)]
    flat = " ".join(out.split())
    if shown < len(METRICS):
        dropped = ", ".join(f"metric {i} (tflops)" for i in range(shown, len(METRICS)))
        assert f"left out at this width: {dropped}" in flat
    else:
        assert "left out at this width" not in flat
