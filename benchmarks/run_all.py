"""Re-run every benchmark that fits this machine and refresh its file in benchmarks/results/.

Each benchmark runs once as its own process (it does its own >= 3 alternated rounds and writes
benchmarks/results/<name>.json); the ones that need a GPU, hipcc or the hipify corpus are skipped
with the reason when those are missing. The defaults are sized for well under 20 minutes on a quiet
2-core CPU (hipify_corpus, about 10 minutes of hipcc more, only with --slow); that total has not been
timed end to end yet: on the development machine at a load average of 10-14 the set took about an
hour. Afterwards, `python scripts/check_figures.py` says which cited figures moved.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/run_all.py [--list] [--only a,b] [--skip a]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CORPUS = REPO / ".cache" / "hipify-corpus"


def _gpu() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def _jax() -> bool:
    try:
        import jax  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True)
class Benchmark:
    name: str
    args: tuple[str, ...] = ()
    # (is it runnable here, why not) -- checked only when the benchmark is about to run
    needs: Callable[[], str | None] = lambda: None
    slow: bool = False  # over 5 minutes here: only with --slow


def _needs_jax() -> str | None:
    return None if _jax() else "needs the jax extra (pip install 'rocmkit[jax]')"


def _needs_hipcc() -> str | None:
    return None if shutil.which("hipcc") else "needs hipcc (scripts/install --test, as root)"


def _needs_corpus() -> str | None:
    if not shutil.which("hipcc"):
        return "needs hipcc (scripts/install --test, as root)"
    if not CORPUS.is_dir():
        return f"needs the hipify corpus in {CORPUS} (scripts/fetch-hipify-corpus)"
    return None


def _needs_cuda_samples() -> str | None:
    return "needs a CUDA source tree to translate (--src cuda-samples); run it by hand"


BENCHMARKS = (
    Benchmark("bench_overhead"),
    Benchmark("tracker_overhead"),
    Benchmark("port_speed", ("--files", "3000")),
    Benchmark("hipify_throughput", ("--mb", "4")),
    Benchmark("infer_client_overhead"),
    Benchmark("infer_local_fast"),
    Benchmark("jax_vs_torch", needs=_needs_jax),
    Benchmark("jax_at_par", needs=_needs_jax),
    # eager on a CPU: compiling both loops 3 times each takes most of an hour on 2 shared cores
    Benchmark("train_vs_reference", ("--no-compile", "--steps", "10", "--warmup", "10")),
    Benchmark("hipify_compile", needs=_needs_cuda_samples),
    Benchmark("hipify_corpus", needs=_needs_corpus, slow=True),
)


def run_one(bench: Benchmark, results: Path) -> tuple[str, float]:
    command = [sys.executable, str(HERE / f"{bench.name}.py"), *bench.args,
               "--result", str(results / f"{bench.name}.json")]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    print(f"== {bench.name}: {' '.join(command[1:])}", flush=True)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, env=env, check=False)
    status = "ok" if done.returncode == 0 else f"FAILED (exit {done.returncode})"
    return status, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="say what would run and what not")
    parser.add_argument("--only", default="", help="comma list of benchmark names")
    parser.add_argument("--skip", default="", help="comma list of benchmark names")
    parser.add_argument("--slow", action="store_true", help="also the slow ones (hipify_corpus)")
    parser.add_argument("--results", type=Path, default=HERE / "results")
    args = parser.parse_args()
    only = {n for n in args.only.split(",") if n}
    skip = {n for n in args.skip.split(",") if n}
    plan = []
    for bench in BENCHMARKS:
        if (only and bench.name not in only) or bench.name in skip:
            continue
        reason = bench.needs()
        if reason is None and bench.slow and not args.slow:
            reason = "slow (about 10 minutes of hipcc on 2 cores): pass --slow"
        plan.append((bench, reason))
        print(f"{bench.name:22s} {'run' if reason is None else 'skip: ' + reason}")
    if args.list:
        return 0
    summary = []
    for bench, reason in plan:
        if reason is None:
            summary.append((bench.name, *run_one(bench, args.results)))
    print("\n== summary")
    for name, status, seconds in summary:
        print(f"{name:22s} {status:20s} {seconds:7.0f} s")
    return 0 if all(status == "ok" for _, status, _ in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
