"""Is rocmkit's serving client the bottleneck? Measure it against a stub server with known timings.

The stub (tests/infer/stub_server.py) runs in its own process, pinned to one core; the client runs
on the other. The stub reports what it really did (first-chunk send time after the request arrived,
gaps between chunk sends: the truth, scheduling jitter included), so the difference between what the
client measured and that truth is the client's own error.

1. Timing accuracy at ~100 concurrent streams: TTFT and ITL measured vs the truth (goal: within 1 ms).
2. Sustained request rate: zero-delay one-token requests at high concurrency; the request rate the
   client drives, and how busy each process was (a client at 100% of its core is the bottleneck).

Run: OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/infer_client_overhead.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil

from rocmkit.infer.client import ClientPool, Endpoint
from rocmkit.infer.loadgen import LoadConfig, run_load
from rocmkit.infer.metrics import RequestRecord, summarize
from rocmkit.infer.workloads import Prompt, random_workload

STUB = Path(__file__).resolve().parent.parent / "tests" / "infer" / "stub_server.py"


def start_stub(ttft_ms: float, itl_ms: float, cpu: int | None) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, str(STUB), "--ttft-ms", str(ttft_ms), "--itl-ms", str(itl_ms)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    if cpu is not None:
        os.sched_setaffinity(proc.pid, {cpu})
    return proc, f"http://127.0.0.1:{port}/v1"


def run_queue_wait_s() -> float:
    """Seconds this process spent runnable but waiting for a CPU (Linux schedstat; 0 elsewhere).
    Other work on the machine shows up here, and in every timing error."""
    try:
        return int(Path("/proc/self/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def stub_stats(base_url: str) -> dict:
    return httpx.get(f"{base_url}/stats", trust_env=False).json()


async def drive(
    base_url: str, *, num: int, output_len: int, rate: float, concurrency: int
) -> tuple[list[RequestRecord], float, float]:
    """Run one load; return the records, the duration and the client's CPU seconds."""
    endpoint = Endpoint(base_url=base_url, model="stub", timeout_s=60)
    prompts = random_workload(num_prompts=num, input_len=16, output_len=output_len).prompts
    async with ClientPool() as pool:

        async def send(prompt: Prompt) -> RequestRecord:
            return await pool.send(endpoint, prompt)

        load = LoadConfig(
            request_rate=rate, max_concurrency=concurrency, num_warmup=concurrency, seed=1
        )
        cpu0, wait0 = time.process_time(), run_queue_wait_s()
        result = await run_load(prompts, send, load)
        waited = run_queue_wait_s() - wait0
        print(
            f"   (client waited {waited:.2f} s for a CPU during the {result.duration_s:.1f} s run)"
        )
        return result.records, result.duration_s, time.process_time() - cpu0


def max_in_flight(records: list[RequestRecord]) -> int:
    timed = [r for r in records if r.e2e_s is not None]
    events = sorted(
        [(r.start_s, 1) for r in timed] + [(r.start_s + (r.e2e_s or 0.0), -1) for r in timed]
    )
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


def accuracy(args: argparse.Namespace, cpus: tuple[int | None, int | None]) -> None:
    ttft_ms, itl_ms, output_len, streams = 100.0, 20.0, 32, 100
    # Little's law: this arrival rate keeps about `streams` requests in flight
    rate = streams / ((ttft_ms + (output_len - 1) * itl_ms) / 1e3)
    proc, url = start_stub(ttft_ms, itl_ms, cpus[1])
    try:
        stub_stats(url)  # reset
        num = 200 if args.quick else 1000
        records, duration, client_cpu = asyncio.run(
            drive(url, num=num, output_len=output_len, rate=rate, concurrency=streams)
        )
        truth = stub_stats(url)
    finally:
        proc.terminate()
        proc.wait()
    summary = summarize(records, duration)
    print(
        f"== timing accuracy: {summary.num_completed}/{len(records)} ok; streams in flight: "
        f"max {max_in_flight(records)}, mean {sum(r.e2e_s or 0.0 for r in records) / duration:.0f}; "
        f"stub TTFT {ttft_ms:g} ms, ITL {itl_ms:g} ms, {output_len} tokens; "
        f"client CPU {100 * client_cpu / duration:.0f}% of a core"
    )
    print(f"{'':6} {'measured':>22} {'truth (stub sends)':>22} {'error':>18}")
    for label, dist in (("ttft", summary.ttft), ("itl", summary.itl)):
        for stat, got in (("mean", dist.mean), ("p50", dist.median), ("p99", dist.percentiles[99])):
            want = truth[f"{label}_ms_{stat}"]
            print(
                f"{label:4} {stat:4} {1e3 * (got or 0):19.3f} ms {want:19.3f} ms {1e3 * (got or 0) - want:+15.3f} ms"
            )
    print(
        f"stub scheduling lateness vs nominal: mean {truth['lateness_ms_mean']:.3f} ms, p99 {truth['lateness_ms_p99']:.3f} ms"
    )


def throughput(args: argparse.Namespace, cpus: tuple[int | None, int | None]) -> None:
    proc, url = start_stub(0.0, 0.0, cpus[1])
    stub = psutil.Process(proc.pid)
    try:
        num = 1000 if args.quick else 4000
        stub_cpu0 = sum(stub.cpu_times()[:2])
        records, duration, client_cpu = asyncio.run(
            drive(url, num=num, output_len=1, rate=float("inf"), concurrency=64)
        )
        stub_cpu = sum(stub.cpu_times()[:2]) - stub_cpu0
    finally:
        proc.terminate()
        proc.wait()
    ok = sum(r.ok for r in records)
    print(
        f"== sustained rate: {ok}/{len(records)} one-token requests at concurrency 64 in {duration:.2f} s"
    )
    print(
        f"client drives {ok / duration:.0f} requests/s; client CPU {100 * client_cpu / duration:.0f}% of a core,"
        f" stub CPU {100 * stub_cpu / duration:.0f}% of a core"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests")
    args = parser.parse_args()
    available = sorted(os.sched_getaffinity(0))
    cpus: tuple[int | None, int | None] = (
        (available[0], available[1]) if len(available) >= 2 else (None, None)
    )
    if cpus[0] is not None:
        os.sched_setaffinity(0, {cpus[0]})
    print(
        f"client on cpu {cpus[0]}, stub on cpu {cpus[1]} ({psutil.cpu_count()} cpus, load {os.getloadavg()[0]:.2f})"
    )
    accuracy(args, cpus)
    throughput(args, cpus)
    print(
        f"load average after: {os.getloadavg()[0]:.2f} (other work on these cores distorts both figures)"
    )


if __name__ == "__main__":
    main()
