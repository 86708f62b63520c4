"""rocmkit's gemm timing vs a bare loop of torch.matmul timed the same way, in the same run.

Both sides time one matmul per sample (perf_counter on CPU, CUDA/HIP events on GPU) with the same
warm-up and sample count; rounds alternate so clock drift hits both. Prints the ratio of medians
(goal: within 2%, i.e. 0.98-1.02).

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_overhead.py [--size 512] [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from resultfile import ResultRun, add_result_args, ratios

from rocmkit.bench.gemm import make_matmul
from rocmkit.measure.timing import TimingConfig, measure


def bare_loop(
    a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, warmup: int, samples: int
) -> float:
    """Median seconds of torch.matmul timed by hand, exactly as rocmkit times on this device."""
    for _ in range(warmup):
        torch.matmul(a, b, out=out)
    times = []
    if a.is_cuda:
        torch.cuda.synchronize()
        pairs = []
        for _ in range(samples):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.matmul(a, b, out=out)
            end.record()
            pairs.append((start, end))
        torch.cuda.synchronize()
        times = [s.elapsed_time(e) / 1e3 for s, e in pairs]
    else:
        for _ in range(samples):
            begin = time.perf_counter()
            torch.matmul(a, b, out=out)
            times.append(time.perf_counter() - begin)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--size", type=int, default=None, help="matrix size (default 512 on CPU, 4096 on GPU)"
    )
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=7)
    add_result_args(parser, "bench_overhead")
    args = parser.parse_args()
    run = ResultRun.start("bench_overhead", args)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    size = args.size or (4096 if device == "cuda" else 512)
    config = TimingConfig(
        warmup=3, min_samples=args.samples, max_samples=args.samples, budget_s=1e9
    )
    fn = make_matmul("fp32", size, device)
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    out = torch.empty(size, size, device=device)
    ours, bare = [], []
    for _ in range(args.rounds):
        ours.append(measure(fn, config, device).median)
        bare.append(bare_loop(a, b, out, config.warmup, args.samples))
    ratio = statistics.median(ours) / statistics.median(bare)
    flops = 2.0 * size**3
    print(f"device={device} size={size} samples={args.samples} rounds={args.rounds}")
    print(
        f"rocmkit: {statistics.median(ours) * 1e3:.4f} ms ({flops / statistics.median(ours) / 1e9:.1f} GFLOPS)"
    )
    print(
        f"bare:    {statistics.median(bare) * 1e3:.4f} ms ({flops / statistics.median(bare) / 1e9:.1f} GFLOPS)"
    )
    print(
        f"ratio rocmkit/bare = {ratio:.4f} ({'within' if abs(ratio - 1) <= 0.02 else 'OUTSIDE'} 2%)"
    )
    # Both sides time each matmul on the wall clock (or device events), as rocmkit bench does.
    clock = "device" if device == "cuda" else "wall"
    run.add("rocmkit_ms", [t * 1e3 for t in ours], unit="ms", clock=clock, higher_is_better=False)
    run.add("bare_ms", [t * 1e3 for t in bare], unit="ms", clock=clock, higher_is_better=False)
    run.add(
        "rocmkit_over_bare",
        ratios(ours, bare),
        unit="x",
        clock=clock,
        baseline="bare torch.matmul loop",
        higher_is_better=False,
    )
    run.finish()


if __name__ == "__main__":
    main()
