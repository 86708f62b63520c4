"""What `rocmkit bench`'s train-precision suite needs from the JAX backend: when it can run,
and the memory figure its rows report."""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rocmkit.train.metrics import TrainResult

__all__ = ["XLA_MEMORY_METRIC", "XLA_MEMORY_SOURCE", "jax_skip_reason", "use_xla_step_memory"]

XLA_MEMORY_METRIC = "xla_step_memory"
# The same figure on every device: JAX's GPU allocator peak is not resettable between runs of
# one process, and its CPU client keeps no allocator statistics at all.
XLA_MEMORY_SOURCE = (
    "XLA memory analysis of the compiled step: arguments + outputs + temporaries - aliased"
)


class MemoryFigure(Protocol):
    """The memory fields of a bench run (bench's own row type; jaxtrain does not import bench)."""

    peak_memory_bytes: int | None
    memory_source: str | None
    memory_note: str | None


def jax_skip_reason(preset: str) -> str | None:
    """Why the JAX backend cannot train `preset` here, or None when it can."""
    missing = [m for m in ("jax", "flax", "optax", "orbax") if importlib.util.find_spec(m) is None]
    if missing:
        return f"{missing[0]} is not installed: pip install 'rocmkit[jax]'"
    from rocmkit.train.config import preset_data

    kind = preset_data(preset).get("model", {}).get("kind", "gpt")
    if kind != "gpt":
        return f"the JAX backend trains the GPT presets only ({preset} is model.kind {kind})"
    return None


def use_xla_step_memory(run: MemoryFigure, result: TrainResult) -> None:
    """Set a bench run's peak memory to the compiled step's, from the train result's rows."""
    rows = [m for m in result.measurements if m.metric == XLA_MEMORY_METRIC]
    value = rows[0].value if rows else None
    run.peak_memory_bytes = None if value is None else int(value)
    run.memory_source = XLA_MEMORY_SOURCE
    run.memory_note = None if value is not None else "n/a: XLA gave no memory analysis here"
