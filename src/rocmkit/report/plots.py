"""PNG plots of known suites (matplotlib, Agg, no pyplot state): one function per figure.

Each function takes runs and their labels and returns PNG bytes, or None when the runs hold no data
for that figure. Several runs share the axes, so machines compare at a glance.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from typing import Any

from rocmkit.errors import require_extra
from rocmkit.report.plot_burnin import burnin_plot
from rocmkit.report.tables import row_key
from rocmkit.results import RunResult

Plot = tuple[str, bytes]
# A chart must show more than a table: fewer bars, or lines over fewer sizes, read better as numbers.
MIN_BARS = 3
MIN_LINE_POINTS = 3


def _figure(width: float = 7.0, height: float = 3.6) -> Any:
    require_extra("matplotlib", "plot")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _values(run: RunResult, suite: str, metric: str) -> list[tuple[dict[str, Any], float]]:
    return [
        (m.params, m.value)
        for m in run.measurements
        if m.suite == suite and m.metric == metric and m.value is not None
    ]


def _grouped_bars(
    axes: Any, groups: list[str], series: dict[str, list[float]], ylabel: str
) -> None:
    width = 0.8 / max(1, len(series))
    for i, (name, heights) in enumerate(series.items()):
        positions = [g + i * width for g in range(len(groups))]
        axes.bar(positions, heights, width=width, label=name)
    axes.set_xticks(
        [g + width * (len(series) - 1) / 2 for g in range(len(groups))], groups, fontsize=8
    )
    axes.set_ylabel(ylabel)
    axes.legend(fontsize=8)
    axes.grid(axis="y", alpha=0.3)


def precision_plot(runs: Sequence[RunResult], labels: Sequence[str]) -> bytes | None:
    """Bars: speed-up vs fp32 and memory saving vs fp32 per model (x run) and dtype."""
    panels = [
        ("speedup_vs_fp32", "speed-up vs fp32 (x)"),
        ("memory_saving_vs_fp32", "memory saving vs fp32 (%)"),
    ]
    data = {metric: _by_group_dtype(runs, labels, metric) for metric, _ in panels}
    panels = [p for p in panels if _num_bars(data[p[0]][1]) >= MIN_BARS]
    if not panels:
        return None
    figure = _figure(height=3.2 * len(panels))
    for axes, (metric, ylabel) in zip(
        figure.subplots(len(panels), 1, squeeze=False)[:, 0], panels, strict=True
    ):
        groups, series = data[metric]
        _grouped_bars(axes, groups, series, ylabel)
    figure.suptitle("Training precision comparison")
    return _png(figure)


def _by_group_dtype(
    runs: Sequence[RunResult], labels: Sequence[str], metric: str
) -> tuple[list[str], dict[str, list[float]]]:
    cells: dict[tuple[str, str], float] = {}
    for run, label in zip(runs, labels, strict=True):
        prefix = f"{label}: " if len(runs) > 1 else ""
        for params, value in _values(run, "train-precision", metric):
            cells[(f"{prefix}{params.get('model')}", str(params.get("dtype")))] = value
    groups = list(dict.fromkeys(g for g, _ in cells))
    dtypes = list(dict.fromkeys(d for _, d in cells))
    return groups, {d: [cells.get((g, d), 0.0) for g in groups] for d in dtypes} if cells else {}


def _num_bars(series: dict[str, list[float]]) -> int:
    return sum(1 for heights in series.values() for h in heights if h == h)  # NaN: no bar


def gemm_plot(runs: Sequence[RunResult], labels: Sequence[str]) -> bytes | None:
    """Bars: best % of peak per dtype (throughput when no peak is known), one bar per run."""
    metric, ylabel = "pct_of_peak", "% of peak (best size)"
    if not any(_values(run, "gemm", metric) for run in runs):
        unit = next(
            (
                m.unit
                for run in runs
                for m in run.measurements
                if m.suite == "gemm" and m.metric != metric
            ),
            "",
        )
        metric, ylabel = ("tflops" if unit == "TFLOPS" else "gflops"), f"{unit} (best size)"
    best: dict[str, dict[str, float]] = {}
    for run, label in zip(runs, labels, strict=True):
        for params, value in _values(run, "gemm", metric):
            dtype = str(params.get("dtype"))
            best.setdefault(label, {})[dtype] = max(
                value, best.get(label, {}).get(dtype, float("-inf"))
            )
    if sum(len(per) for per in best.values()) < MIN_BARS:
        return None
    dtypes = list(dict.fromkeys(d for per in best.values() for d in per))
    figure = _figure()
    _grouped_bars(
        figure.subplots(),
        dtypes,
        {label: [per.get(d, 0.0) for d in dtypes] for label, per in best.items()},
        ylabel,
    )
    figure.suptitle(
        "GEMM: % of peak per dtype" if metric == "pct_of_peak" else "GEMM throughput per dtype"
    )
    return _png(figure)


def _lines(
    runs: Sequence[RunResult],
    labels: Sequence[str],
    suite: str,
    metric: str,
    size_key: str,
    xlabel: str,
    ylabel: str,
    title: str,
) -> bytes | None:
    curves: dict[str, list[tuple[float, float]]] = {}
    for run, label in zip(runs, labels, strict=True):
        prefix = f"{label} " if len(runs) > 1 else ""
        for params, value in _values(run, suite, metric):
            if size_key in params:
                curves.setdefault(f"{prefix}{params.get('op')}", []).append(
                    (float(params[size_key]), value)
                )
    if not curves or max(len({x for x, _ in p}) for p in curves.values()) < MIN_LINE_POINTS:
        return None
    figure = _figure()
    axes = figure.subplots()
    for name, points in curves.items():
        points.sort()
        axes.plot([x for x, _ in points], [y for _, y in points], marker="o", label=name)
    axes.set_xscale("log", base=2)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.suptitle(title)
    return _png(figure)


def bandwidth_plot(runs: Sequence[RunResult], labels: Sequence[str]) -> bytes | None:
    return _lines(
        runs,
        labels,
        "bandwidth",
        "gbps",
        "size_mib",
        "array size (MiB)",
        "GB/s",
        "Bandwidth vs size",
    )


def busbw_plot(runs: Sequence[RunResult], labels: Sequence[str]) -> bytes | None:
    return _lines(
        runs,
        labels,
        "collectives",
        "busbw",
        "size_bytes",
        "message size (bytes)",
        "busbw (GB/s)",
        "Collectives: busbw vs size",
    )


def _serve_points(
    run: RunResult,
) -> dict[str, list[tuple[float, dict[str, float | None], dict[str, Any]]]]:
    """model -> [(output tokens/s, {metric: value}, params)] for each point of a serve sweep."""
    rows: dict[str, dict[str, Any]] = {}
    for m in run.measurements:
        if m.suite == "infer-serve":
            rows.setdefault(row_key(m), {"params": m.params})[m.metric] = m.value
    curves: dict[str, list[tuple[float, dict[str, float | None], dict[str, Any]]]] = {}
    for row in rows.values():
        if row.get("output_tokens_per_s") is not None:
            model = str(row["params"].get("model"))
            curves.setdefault(model, []).append((row["output_tokens_per_s"], row, row["params"]))
    return curves


def _sweep_label(params: dict[str, Any], points: list[Any]) -> str:
    """Name a point by what the sweep varies: its rate, else its concurrency."""
    rates = {str(p.get("request_rate")) for _, _, p in points}
    if len(rates) > 1:
        rate = params.get("request_rate")
        return "rate inf" if rate == "inf" else f"{rate} req/s"
    return f"c={params.get('max_concurrency') or 'none'}"


def serve_latency_plot(runs: Sequence[RunResult], labels: Sequence[str]) -> bytes | None:
    """Latency vs throughput of a serve sweep: TTFT p50 and TPOT p50 against output tokens/s."""
    panels = [("ttft_ms_p50", "TTFT p50 (ms)"), ("tpot_ms_p50", "TPOT p50 (ms)")]
    curves = {}
    for run, label in zip(runs, labels, strict=True):
        for model, points in _serve_points(run).items():
            curves[f"{label}: {model}" if len(runs) > 1 else model] = sorted(
                points, key=lambda p: p[0]
            )
    if not curves:
        return None
    figure = _figure(height=5.6)
    for axes, (metric, ylabel) in zip(figure.subplots(2, 1, sharex=True), panels, strict=True):
        for name, points in curves.items():
            shown = [
                (x, row[metric], params) for x, row, params in points if row.get(metric) is not None
            ]
            axes.plot([x for x, _, _ in shown], [y for _, y, _ in shown], marker="o", label=name)
            for x, y, params in shown:
                axes.annotate(_sweep_label(params, points), (x, y), fontsize=7,
                              textcoords="offset points", xytext=(3, 3))  # fmt: skip
        axes.set_ylabel(ylabel)
        axes.set_ylim(bottom=0)  # from zero, so a small wobble does not look like a climb
        axes.margins(x=0.08)  # room for the last point's label
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
    axes.set_xlabel("output tokens/s")
    figure.suptitle("Serving: latency vs throughput over the sweep")
    return _png(figure)


def local_throughput_plot(runs: Sequence[RunResult], labels: Sequence[str]) -> bytes | None:
    """Bars: local generate() output tokens/s per shape, one bar per precision (x run)."""
    cells: dict[tuple[str, str], float] = {}
    for run, label in zip(runs, labels, strict=True):
        prefix = f"{label} " if len(runs) > 1 else ""
        for params, value in _values(run, "infer-local", "output_tokens_per_s"):
            shape = (
                f"{params.get('model')} b{params.get('batch_size')} "
                f"in{params.get('prompt_len')} out{params.get('output_len')}"
            )
            cells[(shape, f"{prefix}{params.get('precision')}")] = value
    if not cells:
        return None
    shapes = list(dict.fromkeys(shape for shape, _ in cells))
    series = list(dict.fromkeys(name for _, name in cells))
    figure = _figure()
    _grouped_bars(
        figure.subplots(),
        shapes,
        # a shape one run lacks draws no bar (NaN), not a zero
        {name: [cells.get((shape, name), math.nan) for shape in shapes] for name in series},
        "output tokens/s",
    )
    figure.suptitle("Local inference throughput per precision")
    return _png(figure)


# (series in result.data["curve"], axis label); a panel is drawn when some run has values.
_TRAIN_PANELS = (
    ("loss", "loss"),
    ("grad_norm", "grad norm"),
    ("units_per_s", "{unit}/s"),
    ("loss_scale", "loss scale (fp16)"),
)


def train_curve_plot(runs: Sequence[RunResult], labels: Sequence[str]) -> bytes | None:
    """Loss, grad norm, throughput and (fp16) loss scale by step, one line per training run,
    from the thinned metrics.jsonl series `rocmkit train` stores in result.json."""
    curves = [
        (label, run.data["curve"])
        for run, label in zip(runs, labels, strict=True)
        if run.kind == "train" and isinstance(run.data.get("curve"), dict)
    ]
    panels = [
        (key, ylabel)
        for key, ylabel in _TRAIN_PANELS
        if any(v is not None for _, c in curves for v in c.get(key) or [])
    ]
    if not curves or not panels:
        return None
    unit = (curves[0][1].get("unit_name") or ["tokens"])[0]
    figure = _figure(height=1.9 * len(panels) + 0.6)
    grid = figure.subplots(len(panels), 1, squeeze=False, sharex=True)[:, 0]
    for axes, (key, ylabel) in zip(grid, panels, strict=True):
        for label, curve in curves:
            points = [
                (x, y)
                for x, y in zip(curve["step"], curve.get(key) or [], strict=False)
                if y is not None
            ]
            if points:
                axes.plot([x for x, _ in points], [y for _, y in points], label=label)
        axes.set_ylabel(ylabel.format(unit=unit), fontsize=8)
        if key == "loss_scale":
            axes.set_yscale("log", base=2)
        axes.grid(alpha=0.3)
    grid[-1].set_xlabel("step")
    if len(curves) > 1:
        grid[0].legend(fontsize=8)
    figure.suptitle("Training curves")
    return _png(figure)


PLOTS: dict[str, Callable[[Sequence[RunResult], Sequence[str]], bytes | None]] = {
    "train": train_curve_plot,
    "infer-local": local_throughput_plot,
    "infer-serve": serve_latency_plot,
    "train-precision": precision_plot,
    "gemm": gemm_plot,
    "bandwidth": bandwidth_plot,
    "collectives": busbw_plot,
    "burn-in": burnin_plot,
}


def all_plots(runs: Sequence[RunResult], labels: Sequence[str]) -> dict[str, bytes]:
    """suite -> PNG for every known suite with data."""
    plots = {}
    for suite, make in PLOTS.items():
        png = make(runs, labels)
        if png is not None:
            plots[suite] = png
    return plots
