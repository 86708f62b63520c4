"""A torch and a JAX training run of one preset compare row by row, with a ratio, and the
comparison says which framework is which and when either run was measured under load."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.cli.main import main
from rocmkit.report import compare_runs
from rocmkit.results import Measurement, RunResult

CPU_ENV = {"backend": "cpu", "gpu_available": False, "devices": []}
PARAMS = {"precision": "fp32", "parallel": "none", "world_size": 1, "micro_batch": 8}


def _train_run(
    backend: str, tokens_per_s: float, *, precision: str = "fp32", busy_cores: float = 0.0
) -> RunResult:
    """As train and jaxtrain write them: JAX rows carry the backend in their name and params."""
    suffix, extra = ("", {}) if backend == "torch" else (f" {backend}", {"backend": backend})
    params = {**PARAMS, "precision": precision, **extra}
    rows = [
        Measurement(
            suite="train",
            name=f"gpt-tiny {precision}{suffix}",
            metric=metric,
            value=value,
            unit=unit,
            params=params,
        )
        for metric, value, unit in (
            ("tokens_per_s", tokens_per_s, "tokens/s"),
            ("step_time", 1024 / tokens_per_s, "s"),
        )
    ]
    data = {"cpu": {"other_cores_before": busy_cores, "threads": 1}}
    return RunResult(kind="train", environment=CPU_ENV, config={}, measurements=rows,
                     label=backend, data=data)  # fmt: skip


def _rows(runs: list[RunResult]) -> dict[tuple[str, str], list[str]]:
    (table,) = compare_runs(runs).tables
    return {(row[0], row[1]): row[2:] for row in table.rows}


def test_torch_and_jax_rows_of_one_preset_line_up_with_a_ratio() -> None:
    rows = _rows([_train_run("torch", 1000.0), _train_run("jax", 2000.0)])
    assert len(rows) == 2  # one row per metric, not one per framework
    tokens = next(cells for (name, metric), cells in rows.items() if "tokens" in metric)
    assert tokens == ["1,000", "2,000", "0.50x"]  # torch / jax
    step = next(cells for (name, metric), cells in rows.items() if "step time" in metric)
    assert step[-1] == "2.00x"
    notes = compare_runs([_train_run("torch", 1000.0), _train_run("jax", 2000.0)]).notes
    assert any("torch / jax is torch over jax" in n for n in notes)
    assert not any("not comparable" in n or "under load" in n for n in notes)


def test_different_precisions_do_not_line_up() -> None:
    rows = _rows([_train_run("torch", 1000.0), _train_run("jax", 2000.0, precision="bf16")])
    assert len(rows) == 4 and all(cells[-1] == "n/a" for cells in rows.values())


def test_a_training_run_under_load_is_flagged() -> None:
    runs = [_train_run("torch", 1000.0), _train_run("jax", 2000.0, busy_cores=1.5)]
    notes = compare_runs(runs).notes
    assert any("measured under load" in n and "jax (train: other processes used 1.5" in n
               for n in notes)  # fmt: skip


@pytest.mark.slow
def test_real_torch_and_jax_runs_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("flax")
    for backend in ("torch", "jax"):
        argv = ["train", "--preset", "gpt-tiny", "--steps", "2", "--backend", backend,
                "--out", str(tmp_path / backend)]  # fmt: skip
        assert main(argv) == 0
    capsys.readouterr()
    assert main(["report", str(tmp_path / "torch"), str(tmp_path / "jax"), "--format", "md"]) == 0
    out = capsys.readouterr().out
    tokens = next(line for line in out.splitlines() if "tokens per s (tokens/s)" in line)
    cells = [c.strip() for c in tokens.strip("|").split("|")]
    assert cells[0] == "gpt-tiny fp32" and cells[-1].endswith("x")  # a number, not n/a
    assert "torch trained with torch, jax with jax" in out
