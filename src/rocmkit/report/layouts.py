"""The one layout registry of reports: how each result kind is printed and each suite titled,
tabled and plotted, keyed by the kind or suite name.

A `SuiteLayout` gives a title, the metrics the generic table shows first, optionally its own
columns and a plot. The generic table (tables.run_table) names a row by its measurement name and
shows every metric. An inference run has ~30 metrics per row (mean, p50, p90, p95, p99 of four
latencies...), so its layout names rows by their parameters (model, precision, shape; or workload,
rate, concurrency) and shows the figures people compare first: latency, throughput, goodput, energy
efficiency, as in the guide's inference table. The other metrics stay in result.json and a note
says so.

A result kind's console view (`view`: what `rocmkit X` and `rocmkit report RUN` print for a doctor,
port, hipify, train or profile result; report.views) sits in the same entry; a kind without one
gets the standard report. Where a suite's layout comes from (`layout_for`): one registered here with `register_layout` (the
inference suites, power, train's curves), else the one the bench suite of that name declares
(`rocmkit.bench.Suite.layout`, built-in or from another package's entry point), else none: the
generic table under the suite's name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rocmkit.report.tables import (
    Table,
    format_cell,
    ratio_cell,
    row_key,
    run_table,
    skipped_notes,
)
from rocmkit.results import Measurement, RunResult

if TYPE_CHECKING:
    from rocmkit.report.views import View

# (runs, their labels) -> PNG bytes, or None when the runs hold nothing for this figure.
Plot = Callable[[Sequence[RunResult], Sequence[str]], "bytes | None"]


@dataclass(kw_only=True, frozen=True, slots=True)
class SuiteLayout:
    """How a suite reads in a report. `keys` and `metrics` ((key, header) pairs): parameters that
    name a row, then chosen metrics; without them the generic table (a row per name/params, every
    metric, `first_metrics` first). `plot`: a function of (runs, labels) -> PNG or None, or its
    "module:function" name, imported when a report draws (matplotlib stays unloaded otherwise).
    `title` "" is the suite's name. `view`: for a result kind, its console view (a function or
    its "module:function" name, see report.views)."""

    title: str = ""
    keys: tuple[tuple[str, str], ...] = ()
    metrics: tuple[tuple[str, str], ...] = ()
    first_metrics: tuple[str, ...] = ()
    plot: Plot | str | None = None
    view: View | str | None = None

    @property
    def has_columns(self) -> bool:
        return bool(self.metrics)

    def plot_function(self) -> Plot | None:
        plot: Plot | None = _resolve(self.plot)
        return plot

    def view_function(self) -> View | None:
        view: View | None = _resolve(self.view)
        return view

    def _key_columns(self, measurements: Sequence[Measurement]) -> list[tuple[str, str]]:
        """The key parameters these measurements have; the measurement name if none."""
        keys = [(k, h) for k, h in self.keys if any(k in m.params for m in measurements)]
        return keys or [(_NAME, "name")]

    def _metric_columns(self, measurements: Sequence[Measurement]) -> list[tuple[str, str]]:
        present = {m.metric for m in measurements}
        return [(k, h) for k, h in self.metrics if k in present]

    def _notes(self, measurements: Sequence[Measurement]) -> list[str]:
        shown = {k for k, _ in self.metrics}
        hidden = list(dict.fromkeys(m.metric for m in measurements if m.metric not in shown))
        notes = skipped_notes(measurements)
        if hidden:
            notes.append(f"also in result.json: {', '.join(hidden)}")
        return notes

    def table(self, run: RunResult, suite: str) -> Table:
        """One run: a row per measured configuration."""
        rows_of = [m for m in run.measurements if m.suite == suite]
        keys, metrics = self._key_columns(rows_of), self._metric_columns(rows_of)
        rows = []
        for by_metric in _rows(rows_of).values():
            first = next(iter(by_metric.values()))
            cells = [_cell(by_metric.get(k)) for k, _ in metrics]
            rows.append(_key_cells(first, keys) + cells)
        return Table(
            suite=suite,
            title=self.title,
            columns=[h for _, h in keys] + [h for _, h in metrics],
            rows=rows,
            notes=self._notes(rows_of),
        )

    def comparison(self, runs: Sequence[RunResult], labels: Sequence[str], suite: str) -> Table:
        """Several runs: a row per (configuration, metric), a column per run, then the ratios
        of the first run to each other one, as the generic comparison does."""
        per_run = [_rows([m for m in run.measurements if m.suite == suite]) for run in runs]
        every = [m for run in runs for m in run.measurements if m.suite == suite]
        keys, metrics = self._key_columns(every), self._metric_columns(every)
        order = list(dict.fromkeys(key for rows in per_run for key in rows))
        table_rows = []
        for key in order:
            found = [rows.get(key, {}) for rows in per_run]
            first = next(m for by_metric in found for m in by_metric.values())
            for metric, header in metrics:
                cells = [by_metric.get(metric) for by_metric in found]
                if all(m is None for m in cells):
                    continue
                shown = [_cell(m) if m is not None else "-" for m in cells]
                ratios = [ratio_cell(cells, i) for i in range(1, len(cells))]
                table_rows.append([*_key_cells(first, keys), header, *shown, *ratios])
        return Table(
            suite=suite,
            title=self.title,
            columns=[h for _, h in keys]
            + ["metric", *labels]
            + [f"{labels[0]} / {label}" for label in labels[1:]],
            rows=table_rows,
            notes=self._notes(every),
        )


def _resolve(target: Any) -> Any:
    """A function, or the function a "module:function" name gives (imported only now)."""
    if not isinstance(target, str):
        return target
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def _rows(measurements: Sequence[Measurement]) -> dict[str, dict[str, Measurement]]:
    rows: dict[str, dict[str, Measurement]] = {}
    for m in measurements:
        rows.setdefault(row_key(m), {})[m.metric] = m
    return rows


_NAME = "\0name"  # a key column showing the measurement name, not a parameter


def _key_cells(m: Measurement, keys: Sequence[tuple[str, str]]) -> list[str]:
    return [m.name if k == _NAME else _param_text(m.params.get(k)) for k, _ in keys]


def _param_text(value: Any) -> str:
    return "none" if value is None else str(value)


def _cell(m: Measurement | None) -> str:
    return "" if m is None else format_cell(m)


INFER_LOCAL = SuiteLayout(
    title="Inference: local model (transformers generate)",
    plot="rocmkit.report.plots:local_throughput_plot",
    keys=(
        ("model", "model"),
        ("precision", "precision"),
        ("batch_size", "batch"),
        ("prompt_len", "prompt len"),
        ("output_len", "output len"),
        ("decode", "decode"),  # eager next to --fast (static KV cache + torch.compile)
    ),
    metrics=(
        ("ttft_ms", "TTFT (ms)"),
        ("tpot_ms", "TPOT (ms)"),
        ("e2e_ms", "E2E (ms)"),
        ("output_tokens_per_s", "output tokens/s"),
        ("prefill_tokens_per_s", "prefill tokens/s"),
        ("peak_memory_mib", "peak memory (MiB)"),
        ("avg_power_w", "avg power (W)"),
        ("energy_j_per_token", "J/token"),
        ("tokens_per_joule", "tokens/J"),
    ),
)

INFER_SERVE = SuiteLayout(
    title="Inference: server benchmark",
    plot="rocmkit.report.plots:serve_latency_plot",
    keys=(
        ("model", "model"),
        ("workload", "workload"),
        ("request_rate", "rate (req/s)"),
        ("max_concurrency", "concurrency"),
    ),
    metrics=(
        ("ttft_ms_p50", "TTFT p50 (ms)"),
        ("ttft_ms_p99", "TTFT p99 (ms)"),
        ("tpot_ms_p50", "TPOT p50 (ms)"),
        ("itl_ms_p50", "ITL p50 (ms)"),
        ("itl_ms_p99", "ITL p99 (ms)"),
        ("e2e_ms_p50", "E2E p50 (ms)"),
        ("request_per_s", "req/s"),
        ("output_tokens_per_s", "output tokens/s"),
        ("goodput_req_per_s", "goodput (req/s)"),
        ("num_failed", "failed"),
        ("avg_power_w", "avg power (W)"),
        ("energy_j_per_token", "J/token"),
        ("tokens_per_joule", "tokens/J"),
    ),
)

# Layouts of what no bench suite declares: rows bench adds to every run (power), the inference
# commands' suites, and the result kinds with a console view of their own (train's curves plot
# from result.data, keyed by the kind).
_REPORT = "rocmkit.report."
LAYOUTS: dict[str, SuiteLayout] = {
    "power": SuiteLayout(title="Power and energy", first_metrics=("avg_power", "energy")),
    "infer-local": INFER_LOCAL,
    "infer-serve": INFER_SERVE,
    "train": SuiteLayout(
        plot=_REPORT + "plots:train_curve_plot", view=_REPORT + "view_train:render"
    ),
    "train-export": SuiteLayout(view=_REPORT + "view_train:render_export"),
    "doctor": SuiteLayout(view=_REPORT + "view_doctor:render"),
    "doctor-checks": SuiteLayout(view=_REPORT + "view_doctor:render_checks"),
    "port": SuiteLayout(view=_REPORT + "view_port:render"),
    "port-rules": SuiteLayout(view=_REPORT + "view_port:render_rules"),
    "hipify": SuiteLayout(view=_REPORT + "view_hipify:render"),
    "profile-train": SuiteLayout(view=_REPORT + "view_profile:render_trace"),
    "profile-infer": SuiteLayout(view=_REPORT + "view_profile:render_trace"),
    "profile-memory": SuiteLayout(view=_REPORT + "view_profile:render_estimate"),
    "report": SuiteLayout(view=_REPORT + "view_report:render"),
}


def register_layout(suite: str, layout: SuiteLayout) -> None:
    """Lay out `suite`'s tables (or a result kind's plot) with `layout` from now on (replaces
    any earlier one, and the layout a bench suite of that name declares)."""
    LAYOUTS[suite] = layout


def layout_for(suite: str) -> SuiteLayout | None:
    """The layout of `suite`: registered here, else its bench suite's, else None (generic)."""
    if suite in LAYOUTS:
        return LAYOUTS[suite]
    return _bench_layout(suite)


def _bench_layout(suite: str) -> SuiteLayout | None:
    from rocmkit.bench import SUITES, get_suite
    from rocmkit.errors import UserError

    try:
        return (SUITES.get(suite) or get_suite(suite)).layout
    except UserError:  # not a bench suite (memory, floors, a suite of an uninstalled package)
        return None


def suite_title(suite: str) -> str:
    """A suite's table title: its layout's, else `Inference: NAME` for inference, else its name."""
    layout = layout_for(suite)
    if layout is not None and layout.title:
        return layout.title
    if suite.startswith("infer"):
        return f"Inference: {suite}"
    return suite


def suite_table(run: RunResult, suite: str) -> Table:
    """One suite of one run: its layout's columns, else the generic table."""
    layout = layout_for(suite)
    if layout is not None and layout.has_columns:
        return layout.table(run, suite)
    return run_table(run, suite)
