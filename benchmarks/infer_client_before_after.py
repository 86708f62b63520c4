"""Did a change to the serving client cost CPU or timing accuracy? The client before and after,
alternated, measured by `infer_client_overhead.py`'s own loads, written as a result file.

Each round runs one child process per side, alternating (before, after, before, after...): the
child imports rocmkit from that side's `src` (before: `git archive REV src`, after: this checkout)
and measures, with the stub server of the tests on the other core:
1. requests per CPU-second (4,000 one-token requests, 64 in flight) and streamed tokens per
   CPU-second (128 streams of 1,024 tokens), in the child's process CPU time;
2. the TTFT error at ~100 concurrent streams (kernel receive stamps): the client's first-token
   stamp minus the stub's send time of that chunk, mean |error| and p99 |error| in ms.
The result file (benchmarks/results/infer_client_before_after.json) follows the shape of the result
files of `benchmarks/resultfile.py` (issue 27): commit, command, machine, load before and after,
versions, every run's value, median and spread, and the baseline of each figure.

Run: OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/infer_client_before_after.py --before main
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULT = REPO / "benchmarks" / "results" / "infer_client_before_after.json"
FIGURES = {  # key -> (unit, clock, higher is better)
    "req_per_cpu_s": ("req/CPU-s", "process", True),
    "tok_per_cpu_s": ("tok/CPU-s", "process", True),
    "ttft_error_ms_mean_abs": ("ms", "wall", False),
    "ttft_error_ms_p99_abs": ("ms", "wall", False),
    "client_cpu_wait_s": ("s", "wall", False),
}


def child(quick: bool) -> dict[str, float]:
    """One side's figures, with the rocmkit on PYTHONPATH (run in a fresh process)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import infer_client_overhead as bench

    from rocmkit.infer import http
    from rocmkit.infer.client import Client, Endpoint
    from rocmkit.infer.loadgen import LoadConfig, run_load
    from rocmkit.infer.workloads import random_workload

    cpus = sorted(os.sched_getaffinity(0))
    client_cpu, stub_cpu = (cpus[0], cpus[1]) if len(cpus) > 1 else (None, None)
    if client_cpu is not None:
        os.sched_setaffinity(0, {client_cpu})
    figures: dict[str, float] = {}
    proc, url = bench.start_stub(0.0, 0.0, stub_cpu)
    try:
        rocmkit = bench.CLIENTS["rocmkit"]
        cpu, units = bench.cpu_cost(
            rocmkit, url, num=1000 if quick else 4000, output_len=1, concurrency=64
        )
        figures["req_per_cpu_s"] = units / cpu
        cpu, units = bench.cpu_cost(
            rocmkit, url, num=64 if quick else 128, output_len=1024, concurrency=64
        )
        figures["tok_per_cpu_s"] = units / cpu
    finally:
        proc.terminate()
        proc.wait()
    # the accuracy load of infer_client_overhead.accuracy: ~100 streams, TTFT 100 ms, ITL 20 ms
    ttft_ms, itl_ms, output_len, streams = 100.0, 20.0, 32, 100
    rate = streams / ((ttft_ms + (output_len - 1) * itl_ms) / 1e3)
    proc, url = bench.start_stub(ttft_ms, itl_ms, stub_cpu)
    endpoint = Endpoint(base_url=url, model="stub", timeout_s=60)
    prompts = random_workload(
        num_prompts=300 if quick else 1000, input_len=16, output_len=output_len
    ).prompts
    sent: dict[str, Any] = {}

    async def load() -> tuple[Any, dict[str, Any]]:
        async with Client(endpoint) as client:

            async def send(prompt: Any) -> Any:
                sent[prompt.text] = record = await client.send(prompt)
                return record

            await client.get_json("/stats")
            config = LoadConfig(
                request_rate=rate, max_concurrency=streams, num_warmup=streams, seed=1
            )
            result = await run_load(prompts, send, config)
            return result, (await client.get_json("/stats"))[1]

    try:
        wait0 = bench.cpu_wait_s()
        result, truth = http.run(load())
        figures["client_cpu_wait_s"] = bench.cpu_wait_s() - wait0
    finally:
        proc.terminate()
        proc.wait()
    errors = bench.ttft_errors_ms(result.records, sent, truth["first_sent_s"])
    figures["ttft_error_ms_mean_abs"] = bench.mean(abs(e) for e in errors)
    figures["ttft_error_ms_p99_abs"] = bench.quantile([abs(e) for e in errors], 0.99)
    return figures


def export_src(rev: str, into: Path) -> tuple[Path, str]:
    """`src` of `rev` unpacked under `into`; (its path, the full commit id)."""
    sha = _git("rev-parse", rev)
    archive = into / "src.tar"
    subprocess.run(["git", "archive", "-o", str(archive), sha, "src"], cwd=REPO, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src", sha


def run_side(src: Path, quick: bool) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, __file__, "--child"] + (["--quick"] if quick else [])
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, timeout=900)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def figure(runs: list[float], unit: str, clock: str, higher: bool, **extra: Any) -> dict[str, Any]:
    median = statistics.median(runs)
    low, high = min(runs), max(runs)
    spread_pct = 100.0 * (high - low) / abs(median) if median else 0.0
    return {
        "unit": unit,
        "clock": clock,
        "runs": runs,
        "median": median,
        "min": low,
        "max": high,
        "spread_pct": spread_pct,
        "higher_is_better": higher,
        **extra,
    }


def environment() -> dict[str, Any]:
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        platform.processor(),
    )
    versions = {"python": platform.python_version()}
    import importlib.metadata

    for package in ("numpy", "httpx", "aiohttp", "uvloop", "httptools", "orjson"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
    import rocmkit

    versions["rocmkit"] = rocmkit.__version__
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    return {
        "commit": {"sha": _git("rev-parse", "HEAD"), "dirty": dirty},
        "command": [Path(sys.executable).name, *sys.argv],
        "machine": {
            "hostname": platform.node(),
            "platform": platform.platform(),
            "cpu_model": cpu,
            "cpu_count": os.cpu_count(),
            "cores_available": len(os.sched_getaffinity(0)),
            "gpu_model": None,
        },
        "threads": {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")},
        "versions": versions,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main", help="git revision of the client before")
    parser.add_argument("--repeats", type=int, default=3, help="alternated rounds (>= 3)")
    parser.add_argument("--quick", action="store_true", help="fewer requests")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, default=RESULT)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.quick)))
        return
    started, load_before = _now(), [round(v, 2) for v in os.getloadavg()]
    env = environment()
    runs: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    with tempfile.TemporaryDirectory() as tmp:
        before_src, before_sha = export_src(args.before, Path(tmp))
        sides = {"before": before_src, "after": REPO / "src"}
        for round_index in range(args.repeats):  # alternated: before, after, before, after...
            for side, src in sides.items():
                for key, value in run_side(src, args.quick).items():
                    runs[side].setdefault(key, []).append(value)
                print(
                    f"round {round_index + 1} {side}: "
                    + ", ".join(f"{k} {v[-1]:,.3f}" for k, v in runs[side].items()),
                    flush=True,
                )
    load_after = [round(v, 2) for v in os.getloadavg()]
    cores = env["machine"]["cores_available"]
    under_load = max(load_before[0], load_after[0]) > cores
    figures: dict[str, Any] = {}
    for key, (unit, clock, higher) in FIGURES.items():
        after, before = runs["after"][key], runs["before"][key]
        figures[f"after.{key}"] = figure(
            after, unit, clock, higher, baseline=f"before.{key}", under_load=under_load
        )
        figures[f"before.{key}"] = figure(
            before,
            unit,
            clock,
            higher,
            under_load=under_load,
            note=f"the client at {before_sha[:12]}",
        )
        figures[f"after_over_before.{key}"] = figure(
            [a / b for a, b in zip(after, before, strict=True)],
            "x",
            clock,
            higher,
            baseline=f"before.{key}",
            under_load=under_load,
        )
    document = {
        "schema_version": 1,
        "benchmark": "infer_client_before_after",
        "started": started,
        "finished": _now(),
        "environment": env,
        "load": {
            "before": load_before,
            "after": load_after,
            "cores": cores,
            "under_load": under_load,
        },
        "under_load": under_load,
        "parameters": {
            "before": args.before,
            "before_sha": before_sha,
            "repeats": args.repeats,
            "quick": args.quick,
        },
        "figures": figures,
        "notes": [],
    }
    args.result.parent.mkdir(parents=True, exist_ok=True)
    args.result.write_text(json.dumps(document, indent=2) + "\n")
    for key in FIGURES:
        print(
            f"{key}: before {figures[f'before.{key}']['median']:,.3f} -> after "
            f"{figures[f'after.{key}']['median']:,.3f} (median of {args.repeats})"
        )
    print(f"result: {args.result}" + (" (under load)" if under_load else ""))


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


if __name__ == "__main__":
    main()
