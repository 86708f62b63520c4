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
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable
from pathlib import Path
from typing import Any

import aiohttp
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from resultfile import ResultRun, add_result_args, ratios

from rocmkit.infer import http
from rocmkit.infer.client import Client, Endpoint, parse_sse_line
from rocmkit.infer.loadgen import LoadConfig, run_load
from rocmkit.infer.metrics import RequestRecord, summarize
from rocmkit.infer.workloads import Prompt, random_workload

STUB = Path(__file__).resolve().parent.parent / "tests" / "infer" / "stub_server.py"
Send = Callable[[Prompt], Awaitable[RequestRecord]]
Runner = Callable[[Coroutine[Any, Any, Any]], Any]
ClientKind = tuple[Callable[..., Any], Runner]
TARGETS = {"req/CPU-s": 1200.0, "tok/CPU-s": 70_000.0}  # issue 14
TTFT_ERROR_TARGET_MS = 1.0


def start_stub(ttft_ms: float, itl_ms: float, cpu: int | None) -> tuple[subprocess.Popen[str], str]:
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
async def httpx_client(endpoint: Endpoint, concurrency: int) -> AsyncIterator[Send]:
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
async def aiohttp_client(endpoint: Endpoint, concurrency: int) -> AsyncIterator[Send]:
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
async def rocmkit_client(endpoint: Endpoint, concurrency: int) -> AsyncIterator[Send]:
    async with Client(endpoint) as client:
        yield client.send


# "rocmkit" runs on http.run's loop (uvloop's event loop when installed);
# the same client on asyncio's own loop is measured too
CLIENTS: dict[str, ClientKind] = {
    "rocmkit": (rocmkit_client, http.run),
    "rocmkit on asyncio": (rocmkit_client, asyncio.run),
    "httpx (previous)": (httpx_client, asyncio.run),
    "aiohttp": (aiohttp_client, asyncio.run),
    "aiohttp on uvloop": (aiohttp_client, http.run),  # the peer style, given the same loop
}
BASELINES = ("httpx (previous)", "aiohttp", "aiohttp on uvloop")


def cpu_cost(
    client: ClientKind, url: str, *, num: int, output_len: int, concurrency: int
) -> tuple[float, int]:
    """(client CPU seconds, units: requests or tokens) for one zero-delay load.

    The warm-up (one request per connection) runs before the CPU clock starts: the figure divides
    the work counted (the measured requests, or their tokens) by the CPU spent on that work only.
    """
    factory, runner = client
    endpoint = Endpoint(base_url=url, model="stub", timeout_s=60)
    prompts = random_workload(num_prompts=num, input_len=16, output_len=output_len).prompts

    async def measure() -> tuple[float, int]:
        async with factory(endpoint, concurrency) as send:
            await run_load(prompts[:concurrency], send, LoadConfig(max_concurrency=concurrency))
            cpu0 = time.process_time()
            result = await run_load(prompts, send, LoadConfig(max_concurrency=concurrency))
            cpu = time.process_time() - cpu0
        done = [r for r in result.records if r.ok]
        units = len(done) if output_len == 1 else sum(r.output_tokens for r in done)
        assert len(done) == num, f"{num - len(done)} requests failed"
        return cpu, units

    return runner(measure())  # type: ignore[no-any-return]


def slug(name: str) -> str:
    """A client's key in the result file: "aiohttp on uvloop" -> "aiohttp_on_uvloop"."""
    return "".join(c if c.isalnum() else "_" for c in name.split(" (")[0]).strip("_")


FIGURE_KEYS = {"req/CPU-s": "req_per_cpu_s", "tok/CPU-s": "tok_per_cpu_s"}


def cost_table(
    args: argparse.Namespace, cpus: tuple[int | None, int | None], run: ResultRun
) -> None:
    proc, url = start_stub(0.0, 0.0, cpus[1])
    shapes = {
        "req/CPU-s": (1000 if args.quick else 4000, 1),
        "tok/CPU-s": (64 if args.quick else 128, 1024),
    }
    runs: dict[str, dict[str, list[float]]] = {name: {k: [] for k in shapes} for name in CLIENTS}
    try:
        for _ in range(args.repeats):  # alternate the clients; the median of the runs counts
            for name, client in CLIENTS.items():
                for label, (num, output_len) in shapes.items():
                    cpu, units = cpu_cost(
                        client, url, num=num, output_len=output_len, concurrency=64
                    )
                    runs[name][label].append(units / cpu)
                    print(f"  {name}: {units / cpu:,.0f} {label}", file=sys.stderr, flush=True)
    finally:
        proc.terminate()
        proc.wait()
    for name, by_label in runs.items():
        for label, values in by_label.items():
            run.add(f"{slug(name)}.{FIGURE_KEYS[label]}", values, unit=label)
    for name in BASELINES:
        for label in shapes:
            run.add(
                f"rocmkit_over_{slug(name)}.{FIGURE_KEYS[label]}",
                ratios(runs["rocmkit"][label], runs[name][label]),
                unit="x",
                baseline=name,
            )
    rates = {name: {k: statistics.median(v) for k, v in row.items()} for name, row in runs.items()}
    print(f"== CPU cost, 64 in flight, median of {args.repeats} alternated runs (process CPU time)")
    print(f"{'client':20} {'req/CPU-s (1 token)':>20} {'tok/CPU-s (1024-token streams)':>32}")
    for name, row in rates.items():
        print(f"{name:20} {row['req/CPU-s']:20.0f} {row['tok/CPU-s']:32.0f}")
    new = rates["rocmkit"]
    for name in BASELINES:
        print(f"rocmkit / {name}: {new['req/CPU-s'] / rates[name]['req/CPU-s']:.2f}x requests, "
              f"{new['tok/CPU-s'] / rates[name]['tok/CPU-s']:.2f}x tokens per CPU-second")  # fmt: skip
    for label, target in TARGETS.items():
        print(f"target {label} >= {target:,.0f}: {_met(new[label] >= target)} ({new[label]:,.0f})")


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def cpu_wait_s(pid: int | str = "self") -> float:
    """Seconds a process spent runnable but waiting for a CPU (Linux schedstat; 0 elsewhere).
    Other work on the machine shows up here, and in every timing error."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def accuracy(
    args: argparse.Namespace, cpus: tuple[int | None, int | None], kernel: bool
) -> dict[str, float]:
    """TTFT/ITL at ~100 streams against the stub's truth; `kernel`: kernel receive stamps on.
    Returns the TTFT error's mean |error| and p99 |error| in ms, and the client's CPU wait in s."""
    ttft_ms, itl_ms, output_len, streams = 100.0, 20.0, 32, 100
    rate = streams / ((ttft_ms + (output_len - 1) * itl_ms) / 1e3)  # Little's law: ~100 in flight
    proc, url = start_stub(ttft_ms, itl_ms, cpus[1])
    endpoint = Endpoint(base_url=url, model="stub", timeout_s=60)
    num = 300 if args.quick else 1000
    prompts = random_workload(num_prompts=num, input_len=16, output_len=output_len).prompts
    sent: dict[str, RequestRecord] = {}

    async def load() -> tuple[Any, dict[str, Any]]:
        async with Client(endpoint) as client:

            async def send(prompt: Prompt) -> RequestRecord:
                sent[prompt.text] = record = await client.send(prompt)
                return record

            await client.get_json("/stats")  # reset the stub's record
            config = LoadConfig(
                request_rate=rate, max_concurrency=streams, num_warmup=streams, seed=1
            )
            result = await run_load(prompts, send, config)
            return result, (await client.get_json("/stats"))[1]

    saved, http._KERNEL_STAMPS = http._KERNEL_STAMPS, http._KERNEL_STAMPS and kernel
    how = "kernel receive stamps" if http._KERNEL_STAMPS else "stamped when read"
    try:
        waits = cpu_wait_s(), cpu_wait_s(proc.pid)
        result, truth = http.run(load())
        waits = cpu_wait_s() - waits[0], cpu_wait_s(proc.pid) - waits[1]
    finally:
        http._KERNEL_STAMPS = saved
        proc.terminate()
        proc.wait()
    s = summarize(result.records, result.duration_s)
    print(f"== timing accuracy ({how}): {s.num_completed}/{s.num_requests} ok, ~{streams} streams, "
          f"stub TTFT {ttft_ms:g} ms, ITL {itl_ms:g} ms, {output_len} tokens")  # fmt: skip
    errors = ttft_errors_ms(result.records, sent, truth["first_sent_s"])
    size = mean(abs(e) for e in errors)
    print(f"TTFT error per request (the client's first-token stamp - the stub's send time of that "
          f"chunk, same clock): mean |error| {size:.3f} ms, mean {mean(errors):+.3f} ms, p99 "
          f"|error| {quantile([abs(e) for e in errors], 0.99):.3f} ms over {len(errors)} requests; "
          f"target < {TTFT_ERROR_TARGET_MS:g} ms mean: {_met(size < TTFT_ERROR_TARGET_MS)}")  # fmt: skip
    print("distributions, measured vs the stub's (from its reading the request to its send, "
          "so its own delay in reading requests is not in them):")  # fmt: skip
    print(f"{'':9} {'measured':>12} {'stub':>12} {'diff':>10}")
    for label, dist in (("ttft", s.ttft), ("itl", s.itl)):
        for stat, got in (("mean", dist.mean), ("p50", dist.median), ("p99", dist.percentiles[99])):
            want = truth[f"{label}_ms_{stat}"]
            got_ms = 1e3 * (got or 0.0)
            print(f"{label:4} {stat:4} {got_ms:9.3f} ms {want:9.3f} ms {got_ms - want:+7.3f} ms")
    print(f"stub lateness (its sends vs its promise): mean {truth['lateness_ms_mean']:.2f} ms, p99 "
          f"{truth['lateness_ms_p99']:.2f} ms; waited for a CPU during the {result.duration_s:.1f} "
          f"s run: client {waits[0]:.2f} s, stub {waits[1]:.2f} s")  # fmt: skip
    p99 = quantile([abs(e) for e in errors], 0.99)
    return {
        "ttft_error_ms_mean_abs": size,
        "ttft_error_ms_p99_abs": p99,
        "client_cpu_wait_s": waits[0],
    }


def ttft_errors_ms(
    records: list[RequestRecord], sent: dict[str, RequestRecord], first_sent_s: dict[str, float]
) -> list[float]:
    """Per measured request: the client's first-token stamp - the stub's first-chunk send, in ms.
    perf_counter and the stub's loop clock are both CLOCK_MONOTONIC on Linux."""
    measured = {id(r) for r in records}
    return [
        1e3 * (record.start_s + record.ttft_s - first_sent_s[text])
        for text, record in sent.items()
        if id(record) in measured and record.ttft_s is not None and text in first_sent_s
    ]


def mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / max(1, len(items))


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))] if ordered else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests")
    parser.add_argument("--repeats", type=int, default=3, help="alternated runs per client")
    parser.add_argument("--accuracy-only", action="store_true", help="skip the CPU cost table")
    add_result_args(parser, "infer_client_overhead")
    args = parser.parse_args()
    run = ResultRun.start("infer_client_overhead", args)
    available = sorted(os.sched_getaffinity(0))
    cpus = (available[0], available[1]) if len(available) >= 2 else (None, None)
    if cpus[0] is not None:
        os.sched_setaffinity(0, {cpus[0]})
    print(f"client on cpu {cpus[0]}, stub on cpu {cpus[1]}, load average {os.getloadavg()[0]:.2f}")
    if not args.accuracy_only:
        cost_table(args, cpus, run)
    modes = ["kernel_stamps", "stamped_when_read"] if http._KERNEL_STAMPS else ["stamped_when_read"]
    found: dict[str, dict[str, list[float]]] = {mode: {} for mode in modes}
    for _ in range(args.repeats):  # alternated: kernel stamps, then the same load stamped when read
        for mode in modes:
            for key, value in accuracy(args, cpus, kernel=mode == "kernel_stamps").items():
                found[mode].setdefault(key, []).append(value)
    for mode, figures in found.items():
        for key, values in figures.items():
            unit = "s" if key.endswith("_s") else "ms"
            run.add(
                f"accuracy.{mode}.{key}", values, unit=unit, clock="wall", higher_is_better=False
            )
    run.finish()


if __name__ == "__main__":
    main()
