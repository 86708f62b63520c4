"""What device sizing shares across suites: the run's mode and the timing budgets per device.

Each suite module sizes its own problems (`Suite.defaults(platform, mode)` -> its config as a
dict, the base under the user's overrides): a GPU gets sizes that fill it, a 2-core CPU tiny ones.
"""

from __future__ import annotations

from typing import Literal

from rocmkit.measure.timing import TimingConfig
from rocmkit.platform import Platform

Mode = Literal["quick", "full"]


def timing_for(platform: Platform, mode: Mode) -> TimingConfig:
    """Timing budgets: GPUs take many short samples, a CPU few (it is slower and shared)."""
    if platform.gpu_available:
        return TimingConfig(
            warmup=5,
            min_samples=10,
            max_samples=200,
            budget_s=0.5 if mode == "quick" else 2.0,
            flush_cache=False,
        )
    return TimingConfig(
        warmup=1, min_samples=3, max_samples=50, budget_s=0.25 if mode == "quick" else 1.0
    )
