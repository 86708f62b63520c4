"""Benchmarks: timing core, suites (gemm, bandwidth, collectives, attention, train-precision), power.

`run_bench(BenchConfig(...), platform)` runs suites by name and returns a `RunResult` whose
`result.json` `rocmkit report` renders.
"""

from rocmkit.bench.suites import SUITES, BenchConfig, Suite, get_suite, register_suite, run_bench
from rocmkit.measure.timing import Stats, TimingConfig, measure, summarize

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
