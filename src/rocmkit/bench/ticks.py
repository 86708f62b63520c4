"""Work counting for progress bars: a suite says how many figures it will measure, and each
finished figure ticks whoever listens (the CLI's progress bar), without the suites knowing of it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rocmkit.bench.suites import BenchConfig
    from rocmkit.platform import Platform

_listener: ContextVar[Callable[[], None] | None] = ContextVar("rocmkit_bench_tick", default=None)


def tick() -> None:
    """One figure (or one training run) is done."""
    listener = _listener.get()
    if listener is not None:
        listener()


@contextlib.contextmanager
def listening(on_tick: Callable[[], None] | None) -> Iterator[None]:
    """Call `on_tick` for every tick inside the block."""
    token = _listener.set(on_tick)
    try:
        yield
    finally:
        _listener.reset(token)


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
