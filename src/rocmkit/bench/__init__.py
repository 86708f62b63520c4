"""Benchmarks: timing core, suites (gemm, bandwidth, collectives, attention, train-precision,
links, burn-in), power.

`run_bench(BenchConfig(...), platform)` runs suites by name and returns a `RunResult` whose
`result.json` `rocmkit report` renders. Importing this package loads no suite: the CLI declares
`--burn-in` from `rocmkit.bench.burnin_option`, and `rocmkit --help` must not load the registry.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rocmkit.bench.suites import (
        SUITES,
        BenchConfig,
        Suite,
        get_suite,
        register_suite,
        run_bench,
    )
    from rocmkit.measure.timing import Stats, TimingConfig, measure, summarize

_LAZY = {
    "SUITES": "rocmkit.bench.suites",
    "BenchConfig": "rocmkit.bench.suites",
    "Suite": "rocmkit.bench.suites",
    "get_suite": "rocmkit.bench.suites",
    "register_suite": "rocmkit.bench.suites",
    "run_bench": "rocmkit.bench.suites",
    "Stats": "rocmkit.measure.timing",
    "TimingConfig": "rocmkit.measure.timing",
    "measure": "rocmkit.measure.timing",
    "summarize": "rocmkit.measure.timing",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rocmkit.bench' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "SUITES",
    "BenchConfig",
    "Stats",
    "Suite",
    "TimingConfig",
    "get_suite",
    "measure",
    "register_suite",
    "run_bench",
    "summarize",
]
