"""Registered table layouts: suites whose rows read better as parameter columns plus chosen metrics.

The generic table (tables.run_table) names a row by its measurement name and shows every metric.
An inference run has ~30 metrics per row (mean, p50, p90, p95, p99 of four latencies...), so its
layout names rows by their parameters (model, precision, shape; or workload, rate, concurrency) and
shows the figures people compare first: latency, throughput, goodput, energy efficiency, as in the
guide's inference table. The other metrics stay in result.json and a note says so. Register a
layout with `register_layout`; suites without one keep the generic rendering.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rocmkit.report.tables import (
    Table,
    format_cell,
    ratio_cell,
    row_key,
    run_table,
    skipped_notes,
)
from rocmkit.results import Measurement, RunResult


@dataclass(kw_only=True, frozen=True, slots=True)
class SuiteLayout:
    """A suite's columns: parameters that name a row, then metrics, each (key, header)."""

    title: str
    keys: tuple[tuple[str, str], ...]
    metrics: tuple[tuple[str, str], ...]

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

LAYOUTS: dict[str, SuiteLayout] = {"infer-local": INFER_LOCAL, "infer-serve": INFER_SERVE}


def register_layout(suite: str, layout: SuiteLayout) -> None:
    """Lay out `suite`'s tables with `layout` from now on (replaces any earlier one)."""
    LAYOUTS[suite] = layout


def suite_table(run: RunResult, suite: str) -> Table:
    """One suite of one run: its registered layout, else the generic table."""
    return LAYOUTS[suite].table(run, suite) if suite in LAYOUTS else run_table(run, suite)
