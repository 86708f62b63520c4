"""The memory breakdown chart: one stacked bar per precision/sharding (matplotlib, Agg, PNG)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rocmkit.atomic import atomic_write_bytes
from rocmkit.errors import UserError, require_extra
from rocmkit.profile.estimator import MemoryEstimate

_COLOURS = {
    "parameters": "#4c72b0",
    "gradients": "#dd8452",
    "optimizer": "#55a868",
    "activations": "#c44e52",
}


def render_memory_chart(
    estimates: Sequence[MemoryEstimate], path: str | Path, *, title: str = ""
) -> Path:
    """Write a PNG with stacked bars (parameters, gradients, optimizer state, activations) in GiB."""
    if not estimates:
        raise UserError("nothing to plot: no memory estimates")
    require_extra("matplotlib", "plot")
    import io

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    labels = [e.label for e in estimates]
    unit, scale = memory_unit(max(e.total_bytes for e in estimates))
    figure, axes = plt.subplots(figsize=(1.6 * len(estimates) + 2.5, 4.5))
    bottoms = [0.0] * len(estimates)
    for category, colour in _COLOURS.items():
        heights = [e.categories()[category] / scale for e in estimates]
        axes.bar(labels, heights, bottom=bottoms, color=colour, label=category)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    for index, total in enumerate(bottoms):
        axes.annotate(f"{total:.2f}", (index, total), ha="center", va="bottom", fontsize=8)
    axes.set_ylabel(f"{unit} per device")
    axes.set_title(title or "Estimated training memory per device")
    handles, names = axes.get_legend_handles_labels()
    axes.legend(handles[::-1], names[::-1], loc="upper right", fontsize=8)  # same order as stacked
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=120)
    plt.close(figure)
    target = Path(path)
    try:
        atomic_write_bytes(target, buffer.getvalue())
    except OSError as exc:
        raise UserError(f"cannot write the chart to {target}: {exc.strerror or exc}") from None
    return target


def memory_unit(num_bytes: int) -> tuple[str, int]:
    """GiB for totals of a GiB or more, MiB below (so tiny models do not read 0.0)."""
    return ("GiB", 2**30) if num_bytes >= 2**30 else ("MiB", 2**20)
