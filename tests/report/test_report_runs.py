"""Runs are named by their label or directory, a folder of runs expands to its runs, and a
comparison says when either run was measured under load; counts and memory read as what they are."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.cli.main import main
from rocmkit.report import compare_runs
from rocmkit.report.load import load_runs
from rocmkit.report.tables import run_table
from rocmkit.results import Measurement, RunResult

CPU_ENV = {"backend": "cpu", "gpu_available": False, "devices": []}


def _cpu_run(gflops: float, *, load: float = 0.0, label: str | None = None) -> RunResult:
    env = dict(CPU_ENV, load={"gemm": {"other_cores_before": load, "threads": 2}})
    rows = [
        Measurement(
            suite="gemm",
            name="fp32 512x512x512",
            metric="gflops",
            value=gflops,
            unit="GFLOPS",
            params={"dtype": "fp32"},
        )
    ]
    return RunResult(kind="bench", environment=env, config={}, measurements=rows, label=label)


def _save(root: Path, name: str, run: RunResult) -> Path:
    run.save(root / name)
    return root / name


def test_runs_are_labelled_by_directory_not_cpu_and_cpu_2(tmp_path: Path) -> None:
    a = _save(tmp_path, "bench-20261125-101010", _cpu_run(20.0))
    b = _save(tmp_path, "bench-20261125-111111", _cpu_run(10.0))
    c = _save(tmp_path, "x", _cpu_run(10.0, label="quiet box"))
    runs = load_runs([a, b / "result.json", c])
    assert compare_runs(runs).labels == [
        "bench-20261125-101010",
        "bench-20261125-111111",
        "quiet box",
    ]


def test_a_folder_of_runs_expands_to_its_runs_sorted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    _save(runs, "bench-2", _cpu_run(10.0))
    _save(runs, "bench-1", _cpu_run(20.0))
    assert main(["report", str(runs)]) == 0
    out, err = capsys.readouterr()
    assert "found 2 run(s)" in err
    assert "bench-1 / bench-2" in out and "2.00x" in out


def test_a_folder_without_runs_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds no result.json" in err


def test_a_comparison_under_load_says_so() -> None:
    quiet, busy = _cpu_run(20.0, label="quiet"), _cpu_run(10.0, load=1.6, label="busy")
    notes = compare_runs([quiet, busy]).notes
    assert any(
        "measured under load" in n and "busy (gemm: other processes used 1.6" in n for n in notes
    )
    assert not any("under load" in n for n in compare_runs([quiet, quiet]).notes)


def test_counts_print_as_integers_and_cpu_train_memory_is_rss() -> None:
    rows = [
        Measurement(
            suite="train", name="gpt-tiny", metric="skipped_steps", value=0.0, unit="steps"
        ),
        Measurement(
            suite="train", name="gpt-tiny", metric="peak_memory", value=2.0**30, unit="bytes"
        ),
    ]
    table = run_table(
        RunResult(kind="train", environment=CPU_ENV, config={}, measurements=rows), "train"
    )
    assert table.rows[0][1:] == ["0", "1.00 GiB"]  # bytes carry their binary unit per cell
    assert "peak memory, process RSS" in table.columns
    assert not any("tensors" in c for c in table.columns)


def test_an_install_hint_in_a_note_keeps_its_extra_on_the_console() -> None:
    import io

    from rich.console import Console

    from rocmkit.report import build_document
    from rocmkit.report.render_console import render_console

    hint = "jax is not installed: pip install 'rocmkit[jax]'"
    row = Measurement(
        suite="train-precision",
        name="gpt-tiny bf16 [jax]",
        metric="throughput",
        value=None,
        unit="tokens/s",
        extra={"skipped": hint},
    )
    torch_row = Measurement(
        suite="train-precision",
        name="gpt-tiny bf16",
        metric="throughput",
        value=5.0,
        unit="tokens/s",
    )
    rows = [torch_row, row]
    run = RunResult(kind="bench", environment=CPU_ENV, config={}, measurements=rows, label="a[b]")
    console = Console(file=io.StringIO(), width=200)
    render_console(build_document([run]), console)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert hint in text and "gpt-tiny bf16 [jax]" in text and "a[b]" in text
