"""The burn-in's throughput over time: every device's GEMM and memory test as a share of its first
window, with the decay floor, so a device that slows down stands out whatever its absolute speed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rocmkit.results import RunResult

SUITE = "burn-in"


def _series(run: RunResult) -> list[tuple[str, list[tuple[float, float]], float | None]]:
    """(device test, [(time s, share of the first window)], decay floor) per sustained row."""
    found = []
    for m in run.measurements:
        if m.suite != SUITE or m.metric != "sustained":
            continue
        points = [(float(t), float(v)) for t, v in m.extra.get("windows") or []]
        if len(points) < 2 or points[0][1] <= 0:
            continue
        first = points[0][1]
        floor = next(
            (
                r.extra.get("floor")
                for r in run.measurements
                if r.suite == SUITE and r.name == m.name and r.metric == "sustained_vs_burst"
            ),
            None,
        )
        found.append((m.name, [(t, v / first) for t, v in points], floor))
    return found


def burnin_plot(runs: Sequence[RunResult], labels: Sequence[str]) -> bytes | None:
    """Relative throughput per window over time; None when no row has two windows."""
    from rocmkit.report.plots import _figure, _png

    curves = [
        (f"{label} {name}" if len(runs) > 1 else name, points, floor)
        for run, label in zip(runs, labels, strict=True)
        for name, points, floor in _series(run)
    ]
    if not curves:
        return None
    figure: Any = _figure()
    axes = figure.subplots()
    for name, points, _ in curves:
        axes.plot([t for t, _ in points], [v for _, v in points], marker="o", label=name)
    floors = {floor for _, _, floor in curves if floor is not None}
    for floor in sorted(floors):
        axes.axhline(
            floor, color="red", linestyle="--", linewidth=1, label=f"decay floor {floor:g}"
        )
    axes.set_xlabel("time (s)")
    axes.set_ylabel("throughput / first window")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.suptitle("Burn-in: throughput over time")
    return _png(figure)
