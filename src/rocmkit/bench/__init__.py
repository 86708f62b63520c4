"""Benchmarks: timing core, suites (gemm, bandwidth, collectives, attention, train-precision,
links, burn-in), power.

`run_bench(BenchConfig(...), platform)` runs suites by name and returns a `RunResult` whose
`result.json` `rocmkit report` renders. Importing this package loads no suite: the CLI declares
`--burn-in` from `rocmkit.bench.burnin_option`, and `rocmkit --help` must not load the registry.
"""

from typing import TYPE_CHECKING

from rocmkit.lazy import lazy_names

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


__getattr__ = lazy_names(__name__, _LAZY)


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
