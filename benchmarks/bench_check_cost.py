"""What checking a bench figure costs: the same figure timed with and without its output check.

For each figure of the quick CPU (or GPU) suite sizes, rounds alternate an unchecked and a checked
`_measure_once` (the production timing path: warm-up, timed samples, then the check on the last
timed output), each with a fixed sample count so both sides do the same timed work, and read the
process CPU time (time.process_time) of each side. The check's own CPU time is also read directly
(around the check call on the last output) and divided by the CPU time of the timed samples.
Goal: checking costs < 2% of the timed work.

Writes benchmarks/results/bench_check_cost.json (commit, command, machine, load, every run, median,
spread).

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_check_cost.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform as host
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from rocmkit.bench.attention import AttentionConfig, attention_problem
from rocmkit.bench.bandwidth import op_problem
from rocmkit.bench.gemm import matmul_problem
from rocmkit.measure import timing
from rocmkit.measure.timing import TimingConfig

RESULT = Path(__file__).parent / "results" / "bench_check_cost.json"
Problem = tuple[Callable[[], Any], Callable[[object], Any]]


def figures(device: str) -> dict[str, Callable[[], Problem]]:
    """The figures of `rocmkit bench --quick` (its CPU sizes on a CPU), one per kind of check."""
    gpu = device == "cuda"
    size = 4096 if gpu else 512
    shape = (
        {"batch": 4, "num_heads": 16, "seq_len": 2048, "head_dim": 128}
        if gpu
        else {"batch": 1, "num_heads": 4, "seq_len": 256, "head_dim": 64}
    )
    attention = AttentionConfig(**shape)
    mib = 256 if gpu else 16
    return {
        f"gemm fp32 {size}": lambda: matmul_problem("fp32", size, device),
        f"gemm bf16 {size}": lambda: matmul_problem("bf16", size, device),
        "attention flash bf16 fwd": lambda: attention_problem(
            attention, "flash", "bf16", False, device
        ),
        f"copy {mib} MiB": lambda: op_problem("copy", mib * 2**20, device),
        f"triad {mib} MiB": lambda: op_problem("triad", mib * 2**20, device),
    }


def cpu_seconds(action: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    result = action()
    return time.process_time() - start, result


def one_round(
    problem: Problem, config: TimingConfig, device: str, checked_first: bool
) -> dict[str, float]:
    """One unchecked and one checked timing of the figure, in the order given."""
    fn, check = problem
    sides: dict[str, float] = {}
    for side in ("checked", "unchecked") if checked_first else ("unchecked", "checked"):
        with_check = check if side == "checked" else None
        seconds, stats = cpu_seconds(
            lambda check=with_check: timing._measure_once(fn, config, device, check)
        )
        sides[f"{side}_cpu_s"] = seconds
        assert with_check is None or stats.checked.correct
    timed, (_, last) = cpu_seconds(lambda: timing._time_callable(fn, config, device))
    check_alone, verdict = cpu_seconds(lambda: check(last))
    assert verdict.correct
    return {
        **sides,
        "checked_first": checked_first,
        "timed_cpu_s": timed,
        "check_cpu_s": check_alone,
        "check_over_timed": check_alone / timed,
    }


def spread(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "max": max(values), "median": statistics.median(values)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=None, help="timed samples per figure")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    # the quick suite's sample cap (bench.sizing.timing_for); the budget never stops it early
    samples = args.samples or (200 if device == "cuda" else 50)
    config = TimingConfig(warmup=1, min_samples=samples, max_samples=samples, budget_s=1e9)
    timing.MIN_LOAD_WINDOW_S = 0.0  # compare the timed work only, not the load-reading tail
    load_before = os.getloadavg()
    document: dict[str, Any] = {
        "schema": "rocmkit.bench_check_cost",
        "schema_version": 1,
        "command": " ".join(["python", *sys.argv]),
        "environment": environment(device),
        "samples_per_figure": samples,
        "rounds": args.rounds,
        "figures": {},
    }
    for name, make in figures(device).items():
        problem = make()
        # which side goes first alternates between rounds: drift hits both
        runs = [one_round(problem, config, device, i % 2 == 1) for i in range(args.rounds)]
        overhead = [r["checked_cpu_s"] / r["unchecked_cpu_s"] - 1 for r in runs]
        direct = [r["check_over_timed"] for r in runs]
        document["figures"][name] = {
            "runs": runs,
            "checked_minus_unchecked": spread(overhead),
            "check_over_timed": spread(direct),
        }
        print(
            f"{name:28} check/timed median {statistics.median(direct):7.3%} "
            f"(min {min(direct):.3%}, max {max(direct):.3%}); checked vs unchecked "
            f"{statistics.median(overhead):+7.2%} (min {min(overhead):+.2%}, max {max(overhead):+.2%})"
        )
    document["load_average"] = {"before": load_before, "after": os.getloadavg()}
    worst = max(f["check_over_timed"]["median"] for f in document["figures"].values())
    document["worst_median_check_over_timed"] = worst
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(document, indent=1) + "\n")
    print(f"worst median check/timed {worst:.3%} ({'under' if worst < 0.02 else 'OVER'} 2%)")
    print(f"wrote {RESULT}")


def environment(device: str) -> dict[str, Any]:
    def git(*argv: str) -> str:
        return subprocess.run(["git", *argv], capture_output=True, text=True).stdout.strip()

    return {
        "commit": git("rev-parse", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "hostname": socket.gethostname(),
        "machine": host.processor() or host.machine(),
        "cpu_count": os.cpu_count(),
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "python": host.python_version(),
    }


if __name__ == "__main__":
    main()
