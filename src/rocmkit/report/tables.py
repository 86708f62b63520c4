"""Turn measurements of ANY suite into tables: rows = measurement name/params, columns = metrics.

Known suites get a title and a preferred column order; an unknown suite (e.g. one added by the
infer command) renders the same generic way. Pure: no printing, no drawing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rocmkit.results import Measurement, RunResult

# Titles and the metrics to show first for the suites rocmkit ships; anything else keeps its order.
KNOWN_SUITES: dict[str, tuple[str, tuple[str, ...]]] = {
    "gemm": ("GEMM throughput", ("tflops", "gflops", "pct_of_peak")),
    "bandwidth": ("Memory bandwidth", ("gbps", "pct_of_peak")),
    "collectives": ("Collectives (nccl-tests algbw/busbw)", ("time_us", "algbw", "busbw")),
    "attention": ("Attention (SDPA)", ("time_ms", "tflops")),
    "train-precision": (
        "Training precision comparison",
        ("throughput", "speedup_vs_fp32", "peak_memory", "memory_saving_vs_fp32", "mfu"),
    ),
    "power": ("Power and energy", ("avg_power", "energy")),
}


@dataclass(kw_only=True)
class Table:
    """A rendered-agnostic table: header cells, rows of cells (str), and notes under it."""

    suite: str
    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)


def suite_title(suite: str) -> str:
    if suite in KNOWN_SUITES:
        return KNOWN_SUITES[suite][0]
    if suite.startswith("infer"):
        return f"Inference: {suite}"
    return suite


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


def metric_header(metric: str, unit: str) -> str:
    return f"{metric} ({unit})" if unit else metric


def row_key(m: Measurement) -> str:
    """The identity of a row across metrics and runs: its name plus its parameters."""
    return f"{m.name}|{json.dumps(m.params, sort_keys=True, default=str)}"


def suites_in(measurements: Iterable[Measurement]) -> list[str]:
    return list(dict.fromkeys(m.suite for m in measurements))


def ordered_metrics(suite: str, measurements: Iterable[Measurement]) -> list[tuple[str, str]]:
    """(metric, unit) pairs of a suite, known metrics first."""
    seen = dict.fromkeys((m.metric, m.unit) for m in measurements if m.suite == suite)
    preferred = KNOWN_SUITES.get(suite, ("", ()))[1]
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
    headers = [metric_header(x, units[x][0]) if len(units[x]) == 1 else x for x in shown]
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
    notes = _peak_notes(rows_of) + skipped_notes(rows_of) + wrong_result_notes(rows_of)
    notes += noise_notes(rows_of)
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
    text = format_value(m.value)
    text = f"{text} {m.unit}" if with_unit and m.value is not None and m.unit else text
    return text + NOISY_MARK if is_noisy(m) else text


def wrong_result_notes(measurements: Iterable[Measurement]) -> list[str]:
    """Rows whose correctness check failed: their numbers time a wrong computation."""
    wrong = list(dict.fromkeys(m.name for m in measurements if m.extra.get("correct") is False))
    return [f"WRONG RESULT (correctness check failed): {', '.join(wrong)}"] if wrong else []


def _peak_notes(measurements: list[Measurement]) -> list[str]:
    sources = dict.fromkeys(
        str(m.extra["peak_source"]) for m in measurements if m.extra.get("peak_source")
    )
    return [f"peak: {source}" for source in sources]


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


def environment_summary(run: RunResult) -> list[tuple[str, str]]:
    """Doctor-like key facts of where a run happened, for the top of every report."""
    env: dict[str, Any] = run.environment
    devices = env.get("devices") or []
    device_names = (
        ", ".join(str(d.get("name")) for d in devices if isinstance(d, dict)) or "none (CPU run)"
    )
    cpu = env.get("cpu") or {}
    versions = [f"torch {env.get('torch_version')}"]
    versions += [
        f"{k.split('_')[0].upper()} {env[k]}"
        for k in ("hip_version", "cuda_version", "rocm_version")
        if env.get(k)
    ]
    return [
        ("label", run_label(run)),
        ("backend", f"{env.get('backend', '?')} (runs on {env.get('torch_device', '?')})"),
        ("devices", device_names),
        ("versions", ", ".join(versions)),
        (
            "cpu",
            f"{cpu.get('model', '?')}, {env.get('torch_num_threads', '?')} torch thread(s)"
            if cpu
            else "?",
        ),
        ("power sensor", str(env.get("power_reader") or "n/a")),
        *([("machine load", load_summary(env["load"]))] if env.get("load") else []),
        ("created", f"{run.created_at}, rocmkit {run.rocmkit_version}"),
    ]


def load_summary(load: dict[str, Any]) -> str:
    """What other processes did before each suite, and the threads bench chose for it."""
    parts = []
    for suite, facts in load.items():
        if not isinstance(facts, dict):
            continue
        text = f"{suite}: other processes used {facts.get('other_cores_before', '?')} cores"
        if facts.get("threads"):
            text += f", {facts['threads']} torch thread(s) ({facts.get('threads_reason')})"
        parts.append(text)
    return "; ".join(parts)
