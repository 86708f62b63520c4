"""Load result files for a report, checking every measurement so a bad file fails in one line."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from rocmkit.errors import UserError
from rocmkit.results import RESULT_FILENAME, RunResult, load_result


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


def expand_run_paths(paths: Iterable[str | Path]) -> tuple[list[Path], list[str]]:
    """Run directories and result.json files, with a parent folder (`runs/`) replaced by the run
    directories below it, sorted by name; also one note per folder expanded."""
    found: list[Path] = []
    notes: list[str] = []
    for given in map(Path, paths):
        if not given.is_dir() or (given / RESULT_FILENAME).is_file():
            found.append(given)
            continue
        runs = sorted(p.parent for p in given.rglob(RESULT_FILENAME))
        if not runs:
            raise UserError(
                f"{given} holds no {RESULT_FILENAME} (give a run directory or a folder of runs)"
            )
        notes.append(f"{given}: found {len(runs)} run(s)")
        found += runs
    return found, notes


def run_name(path: Path) -> str:
    """What a run is called when it has no label: its directory (a result.json's parent)."""
    directory = path.parent if path.suffix == ".json" else path
    return directory.resolve().name or str(path)


def load_runs(paths: Iterable[str | Path]) -> list[RunResult]:
    """result.json files, run directories or folders of runs -> validated RunResults, in the order
    given; a run without a label is labelled by its directory name."""
    runs = []
    for path in expand_run_paths(paths)[0]:
        run = check_run(load_result(path), str(path))
        if not run.label:
            run.label = run_name(path)
        runs.append(run)
    if not runs:
        raise UserError("give at least one run directory or result.json")
    return runs
