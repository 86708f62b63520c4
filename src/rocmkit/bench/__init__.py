"""Benchmarks: timing core, suites (gemm, bandwidth, collectives, attention, train-precision,
links, burn-in), power.

`run_bench(BenchConfig(...), platform)` runs suites by name and returns a `RunResult` whose
`result.json` `rocmkit report` renders. Importing this package loads the suite registry (the
suite modules import it to register themselves), so the CLI imports nothing from here to
declare its flags: `rocmkit --help` stays fast.
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
