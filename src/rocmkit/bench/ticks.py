"""How many figures a sized bench suite will produce, for the progress bar's total."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rocmkit.bench.suites import BenchConfig
    from rocmkit.platform import Platform


def num_figures(name: str, config: BenchConfig, platform: Platform) -> int:
    """How many timed figures (training runs for train-precision) a sized suite will produce."""
    if name == "gemm" and config.gemm is not None:
        return len(config.gemm.sizes) * len(config.gemm.dtypes)
    if name == "bandwidth" and config.bandwidth is not None:
        ops = [o for o in config.bandwidth.ops if platform.gpu_available or o in ("copy", "triad")]
        return len(ops) * len(config.bandwidth.sizes_mib)
    if name == "attention" and config.attention is not None:
        return 2 * len(config.attention.backends) * len(config.attention.dtypes)
    if name == "collectives" and config.collectives is not None:
        return len(config.collectives.ops) * len(config.collectives.sizes_bytes)
    if name == "train-precision" and config.train_precision is not None:
        return len(config.train_precision.models) * len(config.train_precision.dtypes)
    return 0  # a suite registered by someone else: progress shows only its start
