"""LLM inference benchmarks: a local transformers model, or an OpenAI-compatible server.

Library entry points (the CLI `rocmkit infer` is a thin layer over them):
`benchmark_local(LocalConfig, Platform)` and `benchmark_server(ServeConfig, Workload)`, whose
configs are the commands' own (`ServeConfig(url=..., model=..., rate=(1.0, 4.0))`: every keyword a
flag of `rocmkit infer serve`); the metric maths (`summarize`, `parse_slo`) are pure functions. Importing this package loads neither torch
nor the HTTP client.
"""

from typing import TYPE_CHECKING

from rocmkit.lazy import lazy_names

if TYPE_CHECKING:
    from rocmkit.infer.client import Endpoint
    from rocmkit.infer.loadgen import LoadConfig, run_load
    from rocmkit.infer.local import LocalConfig, LocalResult, benchmark_local
    from rocmkit.infer.metrics import RequestRecord, ServeSummary, parse_slo, summarize
    from rocmkit.infer.serve import ServeResult, benchmark_server
    from rocmkit.infer.settings import ServeConfig
    from rocmkit.infer.workloads import (
        Prompt,
        Tokenizer,
        Workload,
        jsonl_workload,
        random_workload,
        shared_prefix_workload,
        sharegpt_workload,
    )

# Loaded on first use: the CLI imports `rocmkit.infer.settings` to build its flags, and that
# must not pull in numpy (the load generator) or the HTTP client (`rocmkit --help` stays fast).
_LAZY = {
    "Endpoint": "rocmkit.infer.client",
    "LoadConfig": "rocmkit.infer.loadgen",
    "run_load": "rocmkit.infer.loadgen",
    "LocalConfig": "rocmkit.infer.local",
    "LocalResult": "rocmkit.infer.local",
    "benchmark_local": "rocmkit.infer.local",
    "RequestRecord": "rocmkit.infer.metrics",
    "ServeSummary": "rocmkit.infer.metrics",
    "parse_slo": "rocmkit.infer.metrics",
    "summarize": "rocmkit.infer.metrics",
    "ServeConfig": "rocmkit.infer.settings",
    "ServeResult": "rocmkit.infer.serve",
    "benchmark_server": "rocmkit.infer.serve",
    "Prompt": "rocmkit.infer.workloads",
    "Tokenizer": "rocmkit.infer.workloads",
    "Workload": "rocmkit.infer.workloads",
    "jsonl_workload": "rocmkit.infer.workloads",
    "random_workload": "rocmkit.infer.workloads",
    "shared_prefix_workload": "rocmkit.infer.workloads",
    "sharegpt_workload": "rocmkit.infer.workloads",
}


__getattr__ = lazy_names(__name__, _LAZY)


__all__ = [
    "Endpoint",
    "LoadConfig",
    "LocalConfig",
    "LocalResult",
    "Prompt",
    "RequestRecord",
    "ServeConfig",
    "ServeResult",
    "ServeSummary",
    "Tokenizer",
    "Workload",
    "benchmark_local",
    "benchmark_server",
    "jsonl_workload",
    "parse_slo",
    "random_workload",
    "run_load",
    "shared_prefix_workload",
    "sharegpt_workload",
    "summarize",
]
