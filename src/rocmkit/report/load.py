"""Load result files for a report, checking every measurement so a bad file fails in one line."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from rocmkit.errors import UserError
from rocmkit.results import RunResult, load_result


def check_run(run: RunResult, source: str) -> RunResult:
    """Raise UserError naming the file when a measurement has the wrong shape."""
    for i, m in enumerate(run.measurements):
        where = f"{source}: measurement {i} ({m.suite}/{m.name})"
        if (
            not isinstance(m.suite, str)
            or not isinstance(m.name, str)
            or not isinstance(m.metric, str)
        ):
            raise UserError(f"{where} has a non-text suite, name or metric")
        if m.value is not None and (
            isinstance(m.value, bool) or not isinstance(m.value, int | float)
        ):
            raise UserError(f"{where} has a non-numeric value {m.value!r}")
        if (
            not isinstance(m.params, dict)
            or not isinstance(m.stats, dict)
            or not isinstance(m.extra, dict)
        ):
            raise UserError(f"{where} has params/stats/extra that are not objects")
    return run


def load_runs(paths: Iterable[str | Path]) -> list[RunResult]:
    """result.json files or run directories -> validated RunResults, in the order given."""
    runs = []
    for path in paths:
        runs.append(check_run(load_result(path), str(path)))
    if not runs:
        raise UserError("give at least one run directory or result.json")
    return runs
