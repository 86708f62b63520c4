"""The results format every command writes: result.json with schema version, environment and data.

A `RunResult` holds a list of `Measurement`s: one number each, with its unit, the parameters that
produced it and, when it was timed, its statistics; commands whose answer is not a number (doctor's
findings, hipify's report) put their document in `data`. Reports and comparisons read only this format.

Each metric has one unit in every command's result (`UNITS`). Version 1 files (rocmkit 0.1, where
train wrote `mfu` as a fraction and bench as a percent) are read and upgraded on load.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocmkit.atomic import atomic_write_json
from rocmkit.errors import UserError

SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)
RESULT_FILENAME = "result.json"
# The unit of a metric wherever it appears; a writer that uses another unit fails a test.
UNITS: dict[str, str] = {"mfu": "%", "pct_of_peak": "%"}


@dataclass(kw_only=True)
class Measurement:
    """One measured number: e.g. suite="gemm", name="bf16 4096^3", metric="tflops"."""

    suite: str
    name: str
    metric: str
    value: float | None
    unit: str
    params: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True)
class RunResult:
    """A whole run: what ran (config), where (environment), and what it measured."""

    kind: str
    environment: dict[str, Any]
    config: dict[str, Any]
    measurements: list[Measurement] = field(default_factory=list)
    label: str | None = None
    partial: str | None = None  # why the run stopped early (e.g. Ctrl-C); None when it finished
    # How the run ended: ok, failed (a run failure, a wrong figure, findings at/above the gate),
    # nonfinite (training stopped on a NaN/inf loss), interrupted (Ctrl-C), terminated (SIGTERM).
    # rocmkit.driver.EXIT_CODES maps it to the process exit code.
    outcome: str = "ok"
    data: dict[str, Any] = field(default_factory=dict)  # a non-numeric answer (findings, reports)
    created_at: str = field(
        default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    )
    rocmkit_version: str = field(default_factory=lambda: _version())
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        document: dict[str, Any] = jsonable(dataclasses.asdict(self))
        return document

    def save(self, path: str | Path) -> Path:
        """Write atomically; a directory path gets `result.json` inside it."""
        target = Path(path)
        if target.suffix != ".json":
            target = target / RESULT_FILENAME
        atomic_write_json(target, self.to_dict())
        return target

    def select(self, suite: str | None = None, metric: str | None = None) -> list[Measurement]:
        return [
            m
            for m in self.measurements
            if (suite is None or m.suite == suite) and (metric is None or m.metric == metric)
        ]


def _version() -> str:
    from rocmkit import __version__

    return __version__


def jsonable(value: Any) -> Any:
    """The one JSON sanitiser: dataclasses and tuples become plain containers, NaN null and
    infinities the strings "inf"/"-inf" (neither is JSON; an unbounded request rate is a setting
    worth keeping, and `rocmkit.config` reads "inf" back), and any other value JSON cannot hold
    (a Path, a date, a torch dtype) its `str()`, so no writer or printer fails on it."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if value is None or isinstance(value, str | int | float):  # bool is an int
        return value
    return str(value)


def load_result(path: str | Path) -> RunResult:
    """Read and validate a result.json (or a run directory holding one)."""
    file = Path(path)
    if file.is_dir():
        file = file / RESULT_FILENAME
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"no result file at {file}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{file} is not a valid result file (corrupt JSON: {exc})") from None
    except OSError as exc:
        raise UserError(f"cannot read {file}: {exc.strerror}") from None
    return result_from_dict(data, source=str(file))


def result_from_dict(data: Any, *, source: str = "result") -> RunResult:
    """Validate a decoded result document and build a RunResult."""
    if not isinstance(data, dict) or "schema_version" not in data:
        raise UserError(f"{source} is not a rocmkit result (no schema_version)")
    version = data["schema_version"]
    if version not in READABLE_VERSIONS:
        raise UserError(
            f"{source} has schema version {version}; this rocmkit reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))} (upgrade rocmkit to read it)"
        )
    try:
        measurements = [_upgrade(Measurement(**m), version) for m in data.get("measurements", [])]
        return RunResult(
            kind=str(data["kind"]),
            environment=dict(data["environment"]),
            config=dict(data["config"]),
            measurements=measurements,
            label=data.get("label"),
            partial=data.get("partial"),
            outcome=str(data.get("outcome") or ("interrupted" if data.get("partial") else "ok")),
            data=dict(data.get("data") or {}),
            created_at=str(data["created_at"]),
            rocmkit_version=str(data["rocmkit_version"]),
            schema_version=SCHEMA_VERSION,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(f"{source} is not a valid rocmkit result ({exc})") from None


def _upgrade(measurement: Measurement, version: int) -> Measurement:
    """Bring a measurement of an older schema to today's units (v1 train: mfu as a fraction)."""
    if version < 2 and measurement.metric == "mfu" and measurement.unit == "fraction":
        if measurement.value is not None:
            measurement.value *= 100.0
        measurement.unit = "%"
    return measurement
