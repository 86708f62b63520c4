"""What checking a bench figure costs: the same figure timed with and without its output check.

For each figure of the quick CPU (or GPU) suite sizes, rounds alternate an unchecked and a checked
`_measure_once` (the production timing path: warm-up, timed samples, then the check on the last
timed output), each with a fixed sample count so both sides do the same timed work, and read the
process CPU time (time.process_time) of each side. The check's own CPU time is also read directly
(around the check call on the last output) and divided by the CPU time of the timed samples.
For copy and triad the full bit-for-bit comparison of the same output (`check_equal`, the check the
one-read checksum + sampled lines replaced) is timed too, alternated with the check: the baseline.
Goal: checking costs < 2% of the timed work.

Writes benchmarks/results/bench_check_cost.json (commit, command, machine, load, every run, median,
spread).

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_check_cost.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from resultfile import ResultRun, add_result_args

from rocmkit.bench import suites  # noqa: F401  (loads the suites before their modules)
from rocmkit.bench.attention import AttentionConfig, attention_problem
from rocmkit.bench.bandwidth import op_problem
from rocmkit.bench.checks import ExactReference, check_equal
from rocmkit.bench.gemm import matmul_problem
from rocmkit.measure import timing
from rocmkit.measure.timing import TimingConfig

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
    """One unchecked and one checked timing of the figure, in the order given, then the check
    alone on the last timed output and, for an exact check, the full bit-for-bit comparison of
    that output (the check it replaced) in the order given too."""
    fn, check = problem
    sides: dict[str, float] = {}
    for side in ("checked", "unchecked") if checked_first else ("unchecked", "checked"):
        with_check = check if side == "checked" else None
        seconds, stats = cpu_seconds(
            lambda: timing._measure_once(fn, config, device, with_check)  # noqa: B023
        )
        sides[f"{side}_cpu_s"] = seconds
        assert with_check is None or stats.checked.correct
    timed, (_, last) = cpu_seconds(lambda: timing._time_callable(fn, config, device))
    run = {**sides, "timed_cpu_s": timed}
    reference = _exact_reference(check)
    order = ["check", "full"] if reference is not None else ["check"]
    for what in order if checked_first else order[::-1]:
        if what == "check":
            seconds, verdict = cpu_seconds(lambda: check(last))
        else:
            assert reference is not None
            full = reference
            seconds, verdict = cpu_seconds(
                lambda: check_equal(last, full.expected, full.what)  # noqa: B023 (called at once)
            )
        assert verdict.correct
        run[f"{what}_cpu_s"] = seconds
        run[f"{what}_over_timed"] = seconds / timed
    return run


def _exact_reference(check: Callable[[object], Any]) -> ExactReference | None:
    """The reference an exact (copy, triad) check closes over, if `check` is one."""
    cells = [c.cell_contents for c in getattr(check, "__closure__", None) or ()]
    return next((c for c in cells if isinstance(c, ExactReference)), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=None, help="timed samples per figure")
    parser.add_argument("--only", default=None, help="figures whose name contains this")
    add_result_args(parser, "bench_check_cost")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    # the quick suite's sample cap (bench.sizing.timing_for); the budget never stops it early
    samples = args.samples or (200 if device == "cuda" else 50)
    args.samples = samples
    result = ResultRun.start("bench_check_cost", args)
    config = TimingConfig(warmup=1, min_samples=samples, max_samples=samples, budget_s=1e9)
    timing.MIN_LOAD_WINDOW_S = 0.0  # compare the timed work only, not the load-reading tail
    worst = 0.0
    for name, make in figures(device).items():
        if args.only and args.only not in name:
            continue
        problem = make()
        # which side goes first alternates between rounds: drift hits both
        runs = [one_round(problem, config, device, i % 2 == 1) for i in range(args.rounds)]
        key = name.replace(" ", "_")
        direct = [r["check_over_timed"] for r in runs]
        overhead = [r["checked_cpu_s"] / r["unchecked_cpu_s"] - 1 for r in runs]
        figure = result.add(
            f"{key}.check_over_timed",
            [100 * v for v in direct],
            unit="% of the timed CPU time",
            higher_is_better=False,
            note=f"the check of the last output over {samples} timed samples; goal < 2%",
        )
        line = f"{name:28} check/timed median {figure['median']:6.3f}% ({figure['min']:.3f}-"
        line += f"{figure['max']:.3f})"
        worst = max(worst, figure["median"])
        if "full_over_timed" in runs[0]:
            full = result.add(
                f"{key}.full_compare_over_timed",
                [100 * r["full_over_timed"] for r in runs],
                unit="% of the timed CPU time",
                higher_is_better=False,
                baseline="the full bit-for-bit comparison (check_equal) of the same output",
            )
            line += f"; full comparison {full['median']:6.3f}%"
        result.add(
            f"{key}.checked_minus_unchecked",
            [100 * v for v in overhead],
            unit="% CPU time, whole figure",
            higher_is_better=False,
            note="checked vs unchecked _measure_once; the load makes it noisier than the check",
        )
        print(line + f"; checked vs unchecked {statistics.median(overhead):+.2%}")
    result.notes.append(f"worst median check/timed {worst:.3f}% (goal < 2%)")
    print(f"worst median check/timed {worst:.3f}% ({'under' if worst < 2 else 'OVER'} 2%)")
    result.finish()


if __name__ == "__main__":
    main()
