"""Turn measurements of ANY suite into tables: rows = measurement name/params, columns = metrics.

A suite with a layout (report.layouts: registered, or declared by its bench suite) gets its title
and the metrics it shows first; any other suite renders the same generic way under its name.
Pure: no printing, no drawing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from rocmkit.results import Measurement, RunResult


@dataclass(kw_only=True)
class Table:
    """A rendered-agnostic table: header cells, rows of cells (str), and notes under it."""

    suite: str
    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)


def format_value(value: float | None) -> str:
    """Numbers for people: n/a for missing, thousands separators, 3 significant digits when small."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 100:
        return f"{value:.1f}"
    if magnitude >= 1 or magnitude == 0:
        return f"{value:.2f}"
    return f"{value:.3g}"


def ratio(value: float | None, baseline: float | None) -> float | None:
    if value is None or baseline is None or baseline == 0:
        return None
    return value / baseline


def format_ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


NOISY_MARK = " (noisy)"


def is_noisy(m: Measurement | None) -> bool:
    """A figure bench flagged as unsteady (bench.noise): shown with a mark, never ratioed bare."""
    return m is not None and bool(m.extra.get("noisy"))


def noise_notes(measurements: Iterable[Measurement], label: str = "") -> list[str]:
    """Say which figures are noisy and which were re-measured, and why, once per row."""
    where = f" in {label}" if label else ""
    noisy: dict[str, str] = {}
    remeasured: dict[str, str] = {}
    for m in measurements:
        if m.extra.get("noisy"):
            noisy.setdefault(m.name, str(m.extra["noisy"]))
        elif m.extra.get("remeasured"):
            remeasured.setdefault(m.name, str(m.extra["remeasured"]))
    notes = [
        f"noisy{where} (re-measured, still unsteady; do not trust this figure): {name}: {why}"
        for name, why in noisy.items()
    ]
    if remeasured:
        names = ", ".join(remeasured)
        notes.append(f"re-measured{where}, steady the second time: {names}")
    return notes


def ratio_cell(found: list[Measurement | None], index: int) -> str:
    """The first run's figure over run `index`'s, or `noisy` when either was flagged."""
    first, other = found[0], found[index]
    if is_noisy(first) or is_noisy(other):
        return "noisy"
    values = [None if m is None else m.value for m in (first, other)]
    return format_ratio(ratio(values[0], values[1]))


# What a person calls each metric; the unit is added once, in parentheses, unless the label is it.
METRIC_LABELS: dict[str, str] = {
    "gflops": "GFLOPS",
    "tflops": "TFLOPS",
    "gbps": "GB/s",
    "pct_of_peak": "% of peak",
    "time_ms": "time",
    "time_us": "time",
    "throughput": "throughput",
    "speedup_vs_fp32": "speed-up vs fp32",
    "peak_memory": "peak memory, tensors",
    "peak_rss": "peak memory, process RSS",
    "peak_allocated": "peak memory, tensors (allocator)",
    "peak_reserved": "peak memory, reserved by the allocator",
    "memory_saving_vs_fp32": "memory saving vs fp32",
    "mfu": "MFU",
    "final_loss": "final loss",
    "energy_per_step": "energy per step",
    "energy_per_unit": "energy",
    "units_per_joule": "work per joule",
    "avg_power": "average power",
    "energy": "energy",
}
UNITLESS = ("", "x")
# Units of things counted one by one (train's skipped_steps is saved as a float).
COUNT_UNITS = frozenset(
    {"count", "steps", "requests", "tokens", "samples", "files", "errors"}
)  # a speed-up reads 1.31x in its cells; no "(x)" in the header


def metric_header(metric: str, unit: str) -> str:
    """`GFLOPS`, `% of peak`, `time (ms)`, `peak memory, tensors (MiB)`: the unit once."""
    label = METRIC_LABELS.get(metric) or _plain(metric, unit)
    if unit == "bytes":  # each cell carries its own binary unit (format_bytes)
        return label
    if unit in UNITLESS or unit == label or unit in label.split():
        return label
    return f"{label} ({unit})"


def measured_header(metric: str, unit: str, runs: Iterable[RunResult]) -> str:
    """`metric_header`, saying what a peak-memory figure counted: on a CPU a row with no recorded
    source (`rocmkit train`'s) is the process's peak RSS, not its tensors."""
    if metric != "peak_memory":
        return metric_header(metric, unit)
    kinds = {
        "peak_rss"
        if not run.environment.get("gpu_available")
        and not any(m.extra.get("source") for m in run.measurements if m.metric == metric)
        else metric
        for run in runs
        if any(m.metric == metric for m in run.measurements)
    }
    if len(kinds) > 1:
        return metric_header(metric, unit).replace(", tensors", " (tensors or process RSS)")
    return metric_header(kinds.pop() if kinds else metric, unit)


def _plain(metric: str, unit: str) -> str:
    """`ttft_ms` with unit ms -> `ttft`: the unit shows once, in the parentheses."""
    suffix = "_" + unit.lower().replace("/", "_per_")
    if unit and metric.lower().endswith(suffix):
        metric = metric[: -len(suffix)]
    return metric.replace("_", " ")


BINARY_UNITS = (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def format_bytes(value: float) -> str:
    """A byte count people read at a glance: `707.0 MiB`, `1.23 GiB`, `512 bytes`."""
    for name, size in BINARY_UNITS:
        if abs(value) >= size:
            return f"{format_value(value / size)} {name}"
    return f"{value:,.0f} bytes"


def format_cell(m: Measurement) -> str:
    """A measurement's value as a cell: `n/a`, `12.34`, `1.31x` for a speed-up, `1,024` for a
    count, `707.0 MiB` for bytes. The one number formatter of every table, on the console and in
    reports alike."""
    if m.unit in COUNT_UNITS and m.value is not None and float(m.value).is_integer():
        # counts are whole numbers: 0 skipped steps, not 0.00
        return f"{int(m.value):,}" + verdict_mark(m)
    if m.unit == "bytes" and m.value is not None:
        return format_bytes(m.value) + verdict_mark(m)
    text = format_value(m.value)
    text = f"{text}x" if m.unit == "x" and m.value is not None else text
    return text + verdict_mark(m)


def verdict_mark(m: Measurement) -> str:
    """' WRONG' on a figure whose output check failed, ' BELOW FLOOR' under its --expect floor,
    ' OUTLIER' far from the fleet's median under torchrun."""
    marks = []
    if m.extra.get("correct") is False:
        marks.append("WRONG")
    if m.extra.get("below_floor"):
        marks.append("BELOW FLOOR")
    if m.extra.get("outlier"):
        marks.append("OUTLIER")
    return "".join(f" {mark}" for mark in marks)


def row_key(m: Measurement) -> str:
    """The identity of a row across metrics and runs: its name plus its parameters."""
    return f"{m.name}|{json.dumps(m.params, sort_keys=True, default=str)}"


def suites_in(measurements: Iterable[Measurement]) -> list[str]:
    return list(dict.fromkeys(m.suite for m in measurements))


def ordered_metrics(suite: str, measurements: Iterable[Measurement]) -> list[tuple[str, str]]:
    """(metric, unit) pairs of a suite, its layout's first metrics first."""
    from rocmkit.report.layouts import layout_for  # the layouts build on these tables

    seen = dict.fromkeys((m.metric, m.unit) for m in measurements if m.suite == suite)
    layout = layout_for(suite)
    preferred = layout.first_metrics if layout is not None else ()
    rank = {name: i for i, name in enumerate(preferred)}
    return sorted(seen, key=lambda mu: rank.get(mu[0], len(rank)))


def skipped_notes(measurements: Iterable[Measurement]) -> list[str]:
    """One note per distinct skip reason: 'n/a' cells are explained, never left as zeros."""
    notes: dict[str, list[str]] = {}
    for m in measurements:
        reason = m.extra.get("skipped")
        if m.value is None and reason:
            notes.setdefault(str(reason), []).append(m.name)
    return [
        f"n/a for {', '.join(dict.fromkeys(names))}: {reason}" for reason, names in notes.items()
    ]


def run_table(run: RunResult, suite: str) -> Table:
    """One suite of one run, wide: a row per name/params, a column per metric.

    A column whose unit differs between rows (tokens/s vs images/s) shows the unit in each cell;
    columns with no value at all are left out and named in a note.
    """
    from rocmkit.report.layouts import suite_title  # the layouts build on these tables

    rows_of = [m for m in run.measurements if m.suite == suite]
    cells: dict[str, dict[str, Measurement]] = {}
    names: dict[str, str] = {}
    for m in rows_of:
        cells.setdefault(row_key(m), {})[m.metric] = m
        names[row_key(m)] = m.name
    metrics = list(dict.fromkeys(metric for metric, _ in ordered_metrics(suite, rows_of)))
    empty = [x for x in metrics if all(m.value is None for m in rows_of if m.metric == x)]
    shown = [x for x in metrics if x not in empty] or metrics[:1]
    units = {x: list(dict.fromkeys(m.unit for m in rows_of if m.metric == x)) for x in shown}
    headers = [measured_header(x, units[x][0] if len(units[x]) == 1 else "", [run]) for x in shown]
    has_samples = any(m.stats.get("num_samples") for m in rows_of)
    rows = []
    for key, by_metric in cells.items():
        row = [names[key]] + [_cell(by_metric.get(x), len(units[x]) > 1) for x in shown]
        if has_samples:
            counts = [
                int(m.stats["num_samples"])
                for m in by_metric.values()
                if m.stats.get("num_samples")
            ]
            row.append(str(max(counts)) if counts else "")
        rows.append(row)
    notes = shared_params_note(rows_of) + _peak_notes(rows_of) + skipped_notes(rows_of)
    notes += wrong_result_notes(rows_of) + noise_notes(rows_of)
    hidden = [x for x in empty if x not in shown]
    if hidden:
        notes.append(f"no data for: {', '.join(hidden)}")
    return Table(
        suite=suite,
        title=suite_title(suite),
        rows=rows,
        notes=notes,
        columns=["name", *headers] + (["samples"] if has_samples else []),
    )


def _cell(m: Measurement | None, with_unit: bool) -> str:
    if m is None:
        return ""
    text = format_cell(m)
    shown = with_unit and m.value is not None and m.unit and m.unit != "bytes"
    text = f"{text} {m.unit}" if shown else text
    return text + NOISY_MARK if is_noisy(m) else text


def shared_params_note(measurements: list[Measurement]) -> list[str]:
    """Parameters every row shares (attention's shapes, train-precision's steps), said once."""
    keys = {row_key(m) for m in measurements}
    if len(keys) < 2:
        return []
    first = measurements[0].params
    shared = {
        k: v
        for k, v in first.items()
        if all(m.params.get(k) == v for m in measurements) and k not in ("suite",)
    }
    if not shared:
        return []
    return ["every row: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in shared.items())]


def wrong_result_notes(measurements: Iterable[Measurement]) -> list[str]:
    """Rows whose correctness check failed: their numbers time a wrong computation."""
    measurements = list(measurements)
    notes = []
    wrong = [m for m in measurements if m.extra.get("correct") is False]
    if wrong:
        worst = {m.name: m for m in wrong}.values()
        details = [_wrong_detail(m) for m in worst]
        notes.append(f"WRONG RESULT (correctness check failed): {', '.join(details)}")
    below = [m for m in measurements if m.extra.get("below_floor")]
    if below:
        details = [
            f"{m.name} {m.metric} (floor {format_value(m.extra.get('floor'))})" for m in below
        ]
        notes.append(f"BELOW FLOOR (--expect): {', '.join(details)}")
    outliers = [m for m in measurements if m.extra.get("outlier")]
    if outliers:
        threshold = outliers[0].extra.get("outlier_threshold", 0)
        details = [f"{m.name} {m.metric} ({m.extra['outlier']})" for m in outliers]
        notes.append(
            f"OUTLIER (more than {threshold:.0%} worse than the fleet median): {', '.join(details)}"
        )
    return notes


def _wrong_detail(m: Measurement) -> str:
    if "num_wrong" not in m.extra:
        return m.name
    detail = f"{m.name} ({m.extra['num_wrong']} wrong"
    if m.extra.get("tolerance") is not None and m.extra.get("max_error") is not None:
        error, tolerance = m.extra["max_error"], m.extra["tolerance"]
        detail += f", error {error:.3g} vs tolerance {tolerance:.3g}"
    return detail + ")"


def _peak_notes(measurements: list[Measurement]) -> list[str]:
    sources = dict.fromkeys(
        str(m.extra["peak_source"]) for m in measurements if m.extra.get("peak_source")
    )
    notes = [f"peak: {source}" for source in sources]
    above = [m.name for m in measurements if m.metric == "pct_of_peak" and (m.value or 0) > 100]
    if above:  # a peak is meant as an upper bound; a figure above it proves the peak wrong
        notes.append(
            f"above the stated peak (the peak is wrong, not the figure): {', '.join(above)}"
        )
    return notes


def run_label(run: RunResult) -> str:
    """A short name for a run: its label, else the device model token (MI300X, H100), else the backend."""
    if run.label:
        return run.label
    env = run.environment
    devices = env.get("devices") or []
    if devices and isinstance(devices[0], dict) and env.get("gpu_available", True):
        name = str(devices[0].get("name", ""))
        tokens = [t for t in name.split() if any(ch.isdigit() for ch in t)]
        if tokens:
            return tokens[0]
        if name:
            return name
    return "CPU" if not env.get("gpu_available") else str(env.get("backend", "run"))
