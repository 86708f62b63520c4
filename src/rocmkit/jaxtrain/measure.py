"""What the JAX backend measures besides time: memory (compiled step, device allocator, process)
and the JAX side of the environment record."""

from __future__ import annotations

from typing import Any

import jax

from rocmkit.train.metrics import MemoryMeter

__all__ = ["compiled_peak_bytes", "jax_environment", "peak_memory_bytes"]


def compiled_peak_bytes(compiled: jax.stages.Compiled) -> int | None:
    """Device memory the compiled step needs at its peak, by XLA's own buffer assignment."""
    try:
        stats = compiled.memory_analysis()
    except (NotImplementedError, RuntimeError):
        return None
    if stats is None:
        return None
    # Not stats.peak_memory_in_bytes: on the CPU client it leaves the temporaries out.
    return int(
        stats.argument_size_in_bytes
        + stats.output_size_in_bytes
        + stats.temp_size_in_bytes
        - stats.alias_size_in_bytes
    )


def peak_memory_bytes(device: jax.Device, meter: MemoryMeter) -> int | None:
    """The device allocator's peak where JAX reports one (GPUs), else the process's peak RSS
    (as the torch backend reports on CPU)."""
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    if stats and "peak_bytes_in_use" in stats:
        return int(stats["peak_bytes_in_use"])
    return meter.sample()


def jax_environment(devices: list[jax.Device]) -> dict[str, Any]:
    """The JAX side of the environment record: versions and the devices trained on."""
    import flax
    import jaxlib

    return {
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "flax": flax.__version__,
        "platform": devices[0].platform,
        "devices": [str(d.device_kind) for d in devices],
    }
