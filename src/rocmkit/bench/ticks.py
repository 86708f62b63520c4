"""How many figures a sized bench suite will produce, for the progress bar's total.

One counter per built-in suite, named in its registration (`Suite.num_figures`); a registered suite
without one shows only its start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rocmkit.bench.attention import AttentionConfig
    from rocmkit.bench.bandwidth import BandwidthConfig
    from rocmkit.bench.collectives import CollectivesConfig
    from rocmkit.bench.gemm import GemmConfig
    from rocmkit.bench.train_precision import TrainPrecisionConfig
    from rocmkit.platform import Platform


def gemm_figures(config: GemmConfig, platform: Platform) -> int:
    return len(config.sizes) * len(config.dtypes)


def bandwidth_figures(config: BandwidthConfig, platform: Platform) -> int:
    # Host<->device copies need a device: on the CPU only copy and triad run.
    ops = [o for o in config.ops if platform.gpu_available or o in ("copy", "triad")]
    return len(ops) * len(config.sizes_mib)


def attention_figures(config: AttentionConfig, platform: Platform) -> int:
    return 2 * len(config.backends) * len(config.dtypes)  # forward and backward


def collectives_figures(config: CollectivesConfig, platform: Platform) -> int:
    return len(config.ops) * len(config.sizes_bytes)


def train_precision_figures(config: TrainPrecisionConfig, platform: Platform) -> int:
    return len(config.models) * len(config.dtypes)  # training runs, not timed figures
