"""LLM inference benchmarks: a local transformers model, or an OpenAI-compatible server.

Library entry points (the CLI `rocmkit infer` is a thin layer over them):
`benchmark_local(LocalConfig, Platform)` and `benchmark_server(ServeConfig, Workload)`; the metric
maths (`summarize`, `parse_slo`) are pure functions. Importing this package loads neither torch
nor the HTTP client.
"""

from rocmkit.infer.client import Endpoint
from rocmkit.infer.loadgen import LoadConfig, run_load
from rocmkit.infer.local import LocalConfig, LocalResult, benchmark_local
from rocmkit.infer.metrics import RequestRecord, ServeSummary, parse_slo, summarize
from rocmkit.infer.serve import ServeConfig, ServeResult, benchmark_server
from rocmkit.infer.workloads import (
    Prompt,
    Tokenizer,
    Workload,
    jsonl_workload,
    random_workload,
    shared_prefix_workload,
    sharegpt_workload,
)

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
