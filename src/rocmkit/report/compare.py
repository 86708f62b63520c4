"""Two or more runs side by side: one column per run, and the first run's ratio to each other run.

Rows are (measurement name/params, metric) so any suite compares the same way. A ratio column reads
"<first run> / <other run>" (`rocmkit report mi300x/ h100/` -> "MI300X / H100 = 1.31x"): for rates
(TFLOPS, GB/s, tokens/s) above 1 means the first run is faster, for times and energies above 1
means it is slower. Differences in suites, sizes or dtypes are reported as notes. Suites with a
layout with columns (report.layouts: the inference suites) lay their rows out their own way.
Training rows are matched without their backend, so a torch run and a JAX run of one preset and
precision share a row and get a ratio ("torch / jax").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from rocmkit.errors import UserError
from rocmkit.measure.noise import CONTENTION_CORES
from rocmkit.report.layouts import layout_for, suite_title
from rocmkit.report.tables import (
    NOISY_MARK,
    Table,
    format_cell,
    is_noisy,
    measured_header,
    metric_header,
    noise_notes,
    ordered_metrics,
    ratio_cell,
    row_key,
    run_label,
    suites_in,
)
from rocmkit.results import Measurement, RunResult


@dataclass(kw_only=True)
class Comparison:
    labels: list[str]
    tables: list[Table]
    notes: list[str] = field(default_factory=list)  # comparability warnings


def unique_labels(runs: Sequence[RunResult]) -> list[str]:
    labels: list[str] = []
    for run in runs:
        label = run_label(run)
        candidate, n = label, 2
        while candidate in labels:
            candidate, n = f"{label} #{n}", n + 1
        labels.append(candidate)
    return labels


def compare_runs(runs: Sequence[RunResult]) -> Comparison:
    """Side-by-side tables of every suite any run has, with runs[0]'s ratio to each other run."""
    if len(runs) < 2:
        raise UserError("a comparison needs at least two runs")
    labels = unique_labels(runs)
    all_measurements = [m for run in runs for m in run.measurements]
    tables = []
    for suite in suites_in(all_measurements):
        layout = layout_for(suite)
        if layout is not None and layout.has_columns:
            tables.append(layout.comparison(runs, labels, suite))
        else:
            tables.append(_suite_table(suite, runs, labels))
    return Comparison(labels=labels, tables=tables, notes=comparability_notes(runs, labels))


def _index(run: RunResult, suite: str) -> dict[tuple[str, str, str], Measurement]:
    return {(comparison_key(m), m.metric, m.unit): m for m in run.measurements if m.suite == suite}


def comparison_key(m: Measurement) -> str:
    """The row a figure lines up on across runs: row_key, less a training run's backend (train
    names a JAX row "<preset> <precision> jax" with params backend=jax; torch's row has neither)."""
    backend = m.params.get("backend")
    if m.suite != "train" or not isinstance(backend, str):
        return row_key(m)
    params = {k: v for k, v in m.params.items() if k != "backend"}
    return f"{m.name.removesuffix(' ' + backend)}|{json.dumps(params, sort_keys=True, default=str)}"


def _train_backend(run: RunResult) -> str | None:
    """The training framework of a train run (torch when its rows name none), else None."""
    rows = [m for m in run.measurements if m.suite == "train"]
    if not rows:
        return None
    backend = rows[0].params.get("backend")
    return backend if isinstance(backend, str) else "torch"


def _suite_table(suite: str, runs: Sequence[RunResult], labels: list[str]) -> Table:
    indexes = [_index(run, suite) for run in runs]
    metrics = ordered_metrics(suite, [m for run in runs for m in run.measurements])
    keys: dict[str, str] = {}
    for index in indexes:
        for (key, _, _), m in index.items():
            keys.setdefault(key, m.name)
    ratio_headers = [f"{labels[0]} / {label}" for label in labels[1:]]
    rows = []
    for key, name in keys.items():
        for metric, unit in metrics:
            found = [index.get((key, metric, unit)) for index in indexes]
            if all(m is None for m in found):
                continue
            cells = [
                "-" if m is None else format_cell(m) + (NOISY_MARK if is_noisy(m) else "")
                for m in found
            ]
            ratios = [ratio_cell(found, i) for i in range(1, len(found))]
            rows.append([name, measured_header(metric, unit, runs), *cells, *ratios])
    notes = [
        note
        for run, label in zip(runs, labels, strict=True)
        for note in noise_notes([m for m in run.measurements if m.suite == suite], label)
    ]
    return Table(
        suite=suite,
        title=suite_title(suite),
        columns=["name", "metric", *labels, *ratio_headers],
        rows=rows,
        notes=notes,
    )


def comparability_notes(runs: Sequence[RunResult], labels: list[str]) -> list[str]:
    """Say plainly what differs between runs, so a ratio is never read without its caveat."""
    notes = []
    base = runs[0]
    base_suites = set(suites_in(base.measurements))
    for run, label in zip(runs[1:], labels[1:], strict=True):
        frameworks = (_train_backend(base), _train_backend(run))
        mixed = None not in frameworks and frameworks[0] != frameworks[1]
        suites = set(suites_in(run.measurements))
        if suites != base_suites:
            only_base = ", ".join(sorted(base_suites - suites)) or "none"
            only_run = ", ".join(sorted(suites - base_suites)) or "none"
            notes.append(
                f"not comparable: different suites (only in {labels[0]}: {only_base}; only in {label}: {only_run})"
            )
        for suite in sorted(base_suites & suites):
            a = {comparison_key(m) for m in base.measurements if m.suite == suite}
            b = {comparison_key(m) for m in run.measurements if m.suite == suite}
            units_a = {(m.metric, m.unit) for m in base.measurements if m.suite == suite}
            units_b = {(m.metric, m.unit) for m in run.measurements if m.suite == suite}
            if units_a != units_b:
                only = sorted(metric_header(metric, unit) for metric, unit in units_a ^ units_b)
                notes.append(
                    f"{suite}: measured by one framework only: {', '.join(only)}"
                    if mixed and suite == "train"
                    else f"not comparable: {suite} has different metrics/units in {labels[0]} "
                    f"and {label}: {', '.join(only)}"
                )
            if a != b:
                notes.append(
                    f"not comparable: {suite} ran different sizes/dtypes in {labels[0]} and {label} "
                    f"({len(a - b)} rows only in {labels[0]}, {len(b - a)} only in {label}); ratios cover shared rows"
                )
        if mixed:
            notes.append(
                f"{labels[0]} trained with {frameworks[0]}, {label} with {frameworks[1]}: rows of "
                f"one preset and precision line up, so {labels[0]} / {label} is {frameworks[0]} "
                f"over {frameworks[1]} (tokens/s above 1: {frameworks[0]} faster; step time above "
                f"1: {frameworks[0]} slower)"
            )
        if any(is_noisy(m) for m in base.measurements + run.measurements):
            notes.append(
                f"some figures of {labels[0]} or {label} are flagged noisy: their ratios read "
                "'noisy' instead of a number; re-run them on a quieter machine"
            )
        loaded = [
            f"{name} ({why})" for name, r in ((labels[0], base), (label, run)) for why in _load(r)
        ]
        if loaded:
            notes.append(
                f"measured under load, so {labels[0]} / {label} may compare the machines' "
                f"neighbours, not the machines: {'; '.join(loaded)}"
            )
        if base.config.get("mode") != run.config.get("mode"):
            notes.append(
                f"runs used different modes: {base.config.get('mode')} vs {run.config.get('mode')}"
            )
    return notes


def _load(run: RunResult) -> list[str]:
    """Suites that started while other processes kept cores busy (bench's environment "load"
    record, train's data "cpu" record: measure.noise.prepare_cpu), said once per run."""
    load = run.environment.get("load")
    cpu = run.data.get("cpu") if isinstance(run.data, dict) else None
    if not isinstance(load, dict) and isinstance(cpu, dict):
        load = {run.kind: cpu}  # a training run: one record, before its first step
    if not isinstance(load, dict):
        return []
    busy = []
    for suite, facts in load.items():
        other = facts.get("other_cores_before") if isinstance(facts, dict) else None
        if isinstance(other, int | float) and other >= CONTENTION_CORES:
            busy.append(f"{suite}: other processes used {other:g} cores")
    return [", ".join(busy)] if busy else []
