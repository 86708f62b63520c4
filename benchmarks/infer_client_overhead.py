"""Is rocmkit's serving client the bottleneck? Its CPU cost and timing error against a stub server.

The stub (tests/infer/stub_server.py) runs in its own process on one core, the client on the other.
1. CPU cost: requests per CPU-second (zero-delay one-token requests, 64 in flight) and streamed
   tokens per CPU-second (zero-delay 1024-token streams, 64 in flight), counted with this process's
   CPU time (time.process_time), so other work on a shared machine neither flatters nor hurts the
   figure. Measured in the same run for rocmkit's client and two baselines written the usual way:
   httpx (rocmkit's previous client: one single-connection AsyncClient per stream, aiter_lines) and
   aiohttp (one shared connector with a limit, line iteration, as peer benchmark clients do).
2. Timing accuracy at ~100 concurrent streams: TTFT and ITL measured by rocmkit's client vs what the
   stub really did (its own send timestamps), goal: TTFT mean error < 1 ms.

Run: OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/infer_client_overhead.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import httpx

from rocmkit.infer.client import Client, Endpoint, parse_sse_line
from rocmkit.infer.loadgen import LoadConfig, run_load
from rocmkit.infer.metrics import RequestRecord, summarize
from rocmkit.infer.workloads import Prompt, random_workload

STUB = Path(__file__).resolve().parent.parent / "tests" / "infer" / "stub_server.py"
Send = Callable[[Prompt], Awaitable[RequestRecord]]


def start_stub(ttft_ms: float, itl_ms: float, cpu: int | None) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, str(STUB), "--ttft-ms", str(ttft_ms), "--itl-ms", str(itl_ms)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    if cpu is not None:
        os.sched_setaffinity(proc.pid, {cpu})
    return proc, f"http://127.0.0.1:{port}/v1"


def _stream_line(line: str, record: RequestRecord, now: float, last: list[float]) -> None:
    event = parse_sse_line(line)
    if event is None or not event.text:
        return
    if record.ttft_s is None:
        record.ttft_s = now - record.start_s
    else:
        record.itl_s.append(now - last[0])
    last[0] = now
    record.output_tokens += 1


@contextlib.asynccontextmanager
async def httpx_client(endpoint: Endpoint, concurrency: int):
    """The previous rocmkit client: a LIFO pool of single-connection httpx clients."""
    free: list[httpx.AsyncClient] = []
    every: list[httpx.AsyncClient] = []

    async def send(prompt: Prompt) -> RequestRecord:
        client = free.pop() if free else None
        if client is None:
            limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
            client = httpx.AsyncClient(limits=limits, timeout=60, trust_env=False)
            every.append(client)
        record, last = RequestRecord(ok=False, start_s=time.perf_counter()), [0.0]
        try:
            async with client.stream("POST", endpoint.url, json=endpoint.body(prompt)) as resp:
                async for line in resp.aiter_lines():
                    _stream_line(line, record, time.perf_counter(), last)
            record.ok = record.output_tokens > 0
        finally:
            free.append(client)
        return record

    yield send
    for client in every:
        await client.aclose()


@contextlib.asynccontextmanager
async def aiohttp_client(endpoint: Endpoint, concurrency: int):
    """A peer-style client: one aiohttp session, a connector limited to the concurrency."""
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, trust_env=False) as session:

        async def send(prompt: Prompt) -> RequestRecord:
            record, last = RequestRecord(ok=False, start_s=time.perf_counter()), [0.0]
            async with session.post(endpoint.url, json=endpoint.body(prompt)) as resp:
                async for raw in resp.content:
                    _stream_line(raw.decode().strip(), record, time.perf_counter(), last)
            record.ok = record.output_tokens > 0
            return record

        yield send


@contextlib.asynccontextmanager
async def rocmkit_client(endpoint: Endpoint, concurrency: int):
    async with Client(endpoint) as client:
        yield client.send


CLIENTS = {"rocmkit": rocmkit_client, "httpx (previous)": httpx_client, "aiohttp": aiohttp_client}


def cpu_cost(
    factory, url: str, *, num: int, output_len: int, concurrency: int
) -> tuple[float, int]:
    """(client CPU seconds, units: requests or tokens) for one zero-delay load."""
    endpoint = Endpoint(base_url=url, model="stub", timeout_s=60)
    prompts = random_workload(num_prompts=num, input_len=16, output_len=output_len).prompts

    async def main() -> tuple[float, int]:
        async with factory(endpoint, concurrency) as send:
            load = LoadConfig(max_concurrency=concurrency, num_warmup=concurrency)
            cpu0 = time.process_time()
            result = await run_load(prompts, send, load)
            cpu = time.process_time() - cpu0
        done = [r for r in result.records if r.ok]
        units = len(done) if output_len == 1 else sum(r.output_tokens for r in done)
        assert len(done) == num, f"{num - len(done)} requests failed"
        return cpu, units

    return asyncio.run(main())


def cost_table(args: argparse.Namespace, cpus: tuple[int | None, int | None]) -> None:
    proc, url = start_stub(0.0, 0.0, cpus[1])
    shapes = {"req/CPU-s": (1000 if args.quick else 4000, 1), "tok/CPU-s": (64, 1024)}
    rates: dict[str, dict[str, float]] = {name: {} for name in CLIENTS}
    try:
        for _ in range(args.repeats):  # alternate the clients, keep each one's best
            for name, factory in CLIENTS.items():
                for label, (num, output_len) in shapes.items():
                    cpu, units = cpu_cost(
                        factory, url, num=num, output_len=output_len, concurrency=64
                    )
                    rates[name][label] = max(rates[name].get(label, 0.0), units / cpu)
    finally:
        proc.terminate()
        proc.wait()
    print(f"== CPU cost, 64 in flight, best of {args.repeats} alternated runs (process CPU time)")
    print(f"{'client':18} {'req/CPU-s (1 token)':>20} {'tok/CPU-s (1024-token streams)':>32}")
    for name, row in rates.items():
        print(f"{name:18} {row['req/CPU-s']:20.0f} {row['tok/CPU-s']:32.0f}")
    new = rates["rocmkit"]
    for name in list(CLIENTS)[1:]:
        print(f"rocmkit / {name}: {new['req/CPU-s'] / rates[name]['req/CPU-s']:.2f}x requests, "
              f"{new['tok/CPU-s'] / rates[name]['tok/CPU-s']:.2f}x tokens per CPU-second")  # fmt: skip


def cpu_wait_s(pid: int | str = "self") -> float:
    """Seconds a process spent runnable but waiting for a CPU (Linux schedstat; 0 elsewhere).
    Other work on the machine shows up here, and in every timing error."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def accuracy(args: argparse.Namespace, cpus: tuple[int | None, int | None]) -> None:
    ttft_ms, itl_ms, output_len, streams = 100.0, 20.0, 32, 100
    rate = streams / ((ttft_ms + (output_len - 1) * itl_ms) / 1e3)  # Little's law: ~100 in flight
    proc, url = start_stub(ttft_ms, itl_ms, cpus[1])
    endpoint = Endpoint(base_url=url, model="stub", timeout_s=60)
    num = 300 if args.quick else 1000
    prompts = random_workload(num_prompts=num, input_len=16, output_len=output_len).prompts

    async def main():
        async with Client(endpoint) as client:
            await client.get_json("/stats")  # reset the stub's record
            load = LoadConfig(
                request_rate=rate, max_concurrency=streams, num_warmup=streams, seed=1
            )
            result = await run_load(prompts, client.send, load)
            return result, (await client.get_json("/stats"))[1]

    try:
        waits = cpu_wait_s(), cpu_wait_s(proc.pid)
        result, truth = asyncio.run(main())
        waits = cpu_wait_s() - waits[0], cpu_wait_s(proc.pid) - waits[1]
    finally:
        proc.terminate()
        proc.wait()
    s = summarize(result.records, result.duration_s)
    print(f"== timing accuracy: {s.num_completed}/{s.num_requests} ok, ~{streams} streams, stub TTFT "
          f"{ttft_ms:g} ms, ITL {itl_ms:g} ms, {output_len} tokens (truth: the stub's own send times)")  # fmt: skip
    print(f"{'':9} {'measured':>12} {'truth':>12} {'error':>10}")
    for label, dist in (("ttft", s.ttft), ("itl", s.itl)):
        for stat, got in (("mean", dist.mean), ("p50", dist.median), ("p99", dist.percentiles[99])):
            want = truth[f"{label}_ms_{stat}"]
            got_ms = 1e3 * (got or 0.0)
            print(f"{label:4} {stat:4} {got_ms:9.3f} ms {want:9.3f} ms {got_ms - want:+7.3f} ms")
    print(f"waited for a CPU during the {result.duration_s:.1f} s run: client {waits[0]:.2f} s, "
          f"stub {waits[1]:.2f} s (other work on the machine; it shows up in the errors)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests")
    parser.add_argument("--repeats", type=int, default=3, help="alternated runs per client")
    args = parser.parse_args()
    available = sorted(os.sched_getaffinity(0))
    cpus = (available[0], available[1]) if len(available) >= 2 else (None, None)
    if cpus[0] is not None:
        os.sched_setaffinity(0, {cpus[0]})
    print(f"client on cpu {cpus[0]}, stub on cpu {cpus[1]}, load average {os.getloadavg()[0]:.2f}")
    cost_table(args, cpus)
    accuracy(args, cpus)


if __name__ == "__main__":
    main()
