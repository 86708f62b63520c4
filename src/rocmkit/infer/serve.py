"""The server benchmark: a workload sent at each point of a rate x concurrency sweep, summarised.

`benchmark_server(config, workload)` checks the server answers at all, then runs one measured load
per (rate, concurrency) point with the same prompts, and returns every point's summary. The
config is the command's own (`ServeConfig` is `rocmkit.infer.settings.ServeSettings`, the class
the flags, TOML keys and presets come from); the runner reads its fields and derived views. A run
deadline covers the whole sweep; Ctrl-C or the deadline end it early with what was measured.
With `power="local"` (the server runs on this machine) bench's power sampler reads this machine's
GPU during the sweep and each point's measured phase becomes an energy window; a client cannot read
a remote server's GPU, so this is opt-in.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rocmkit.infer import http
from rocmkit.infer.client import Client, Endpoint
from rocmkit.infer.guards import (
    UnreachableWatch,
    check_warmup,
    point_failure,
    retrying,
)
from rocmkit.infer.loadgen import LoadConfig, LoadResult, Ramp, SendFn, run_load
from rocmkit.infer.measurements import energy_values, measurement_rows
from rocmkit.infer.metrics import RequestRecord, ServeSummary, percentile_name, summarize
from rocmkit.infer.readiness import prepare_endpoint
from rocmkit.infer.settings import ServeConfig
from rocmkit.infer.workloads import Prompt, Workload
from rocmkit.measure.power import (
    EnergyWindow,
    PowerReader,
    PowerSampler,
    platform_power_reader,
)
from rocmkit.results import Measurement

if TYPE_CHECKING:
    from rocmkit.platform import Platform


@dataclass(kw_only=True, frozen=True, slots=True)
class ServePoint:
    request_rate: float
    max_concurrency: int | None
    summary: ServeSummary
    stopped: str | None  # why the point ended early, if it did
    failure: str | None = None  # why the point counts as failed (all or too many requests)
    energy_j: float | None = None  # this machine's GPU energy over the measured phase
    energy_skipped: str | None = None  # why energy_j is None (with power="local")
    start_s: float = 0.0  # perf_counter when the measured phase began
    records: list[RequestRecord] = field(default_factory=list, repr=False)
    ramp: Ramp | None = None  # the point's rate moved between two rates (--ramp-up)


@dataclass(kw_only=True, slots=True)
class ServeResult:
    points: list[ServePoint] = field(default_factory=list)
    stopped: str | None = None
    power_reader: str | None = None  # which reader sampled power; None when none did
    endpoint: Endpoint | None = None  # as used: the model filled in when it was discovered

    @property
    def failure(self) -> str | None:
        """Why the run failed (a point failed, or the server went away), None when it did not."""
        if self.stopped is not None and self.stopped.startswith("server unreachable"):
            return self.stopped
        for point in self.points:
            if point.failure is not None:
                return point.failure
        return None


async def benchmark_server_async(
    config: ServeConfig,
    workload: Workload,
    count_tokens: Callable[[str], int] | None = None,
    on_point: Callable[[ServePoint], None] | None = None,
    *,
    platform: Platform | None = None,
    power_reader: PowerReader | None = None,
) -> ServeResult:
    """Run every sweep point in turn; stop the sweep early on Ctrl-C or the run deadline.

    With config.power == "local", power comes from `power_reader` (e.g. a fake in tests), else
    from the sensor of `platform` (detected when not given).
    """
    # the endpoint as used: the model filled in from /models when the config names none
    endpoint = await prepare_endpoint(config.endpoint, wait_ready_s=config.wait_ready)
    result = ServeResult(endpoint=endpoint)
    reader, why = _power_reader(config, platform, power_reader)
    result.power_reader = why if reader is not None else None
    # perf_counter, the load generator's clock, so a point's window is exactly its measured phase
    sampler = (
        None
        if reader is None
        else PowerSampler(reader, interval_s=config.power_interval_s, clock=time.perf_counter)
    )
    with sampler or contextlib.nullcontext():
        async with Client(endpoint) as client:

            async def send(prompt: Prompt) -> RequestRecord:
                return await client.send(prompt, count_tokens)

            await _sweep(config, workload, send, result, on_point, sampler, why)
    return result


async def _sweep(
    config: ServeConfig,
    workload: Workload,
    send: SendFn,
    result: ServeResult,
    on_point: Callable[[ServePoint], None] | None,
    sampler: PowerSampler | None,
    no_power: str,
) -> None:
    deadline = None if config.run_timeout is None else time.perf_counter() + config.run_timeout
    for rate, concurrency in config.points():
        load = LoadConfig(
            request_rate=rate,
            burstiness=config.burstiness,
            max_concurrency=concurrency,
            num_warmup=config.warmup,
            seed=config.seed,
            deadline_s=deadline,
            ramp_up_s=config.ramp_up_time,
            ramp=config.ramp,
        )
        watch = UnreachableWatch(config.unreachable_timeout)
        outcome = await run_load(
            workload.prompts,
            send,
            load,
            check_warmup=check_warmup,
            watch=watch,
            warm_send=retrying(send, config.warmup_retries),
        )
        if outcome.records:
            summary = summarize(
                outcome.records,
                max(outcome.duration_s, 1e-9),
                config.slo_seconds,
                outcome.start_s,
                percentiles=config.percentiles,
                num_unsent=outcome.num_unsent,
            )
            window = EnergyWindow(start=outcome.start_s, end=outcome.start_s + outcome.duration_s)
            point = ServePoint(
                request_rate=rate,
                max_concurrency=concurrency,
                summary=summary,
                stopped=outcome.stopped,
                failure=_failure(outcome, config.max_error_rate),
                start_s=outcome.start_s,
                records=outcome.records,
                ramp=config.ramp,
                **_point_energy(config, sampler, window, no_power),
            )
            result.points.append(point)
            if on_point is not None:
                on_point(point)
        if outcome.stopped:
            result.stopped = outcome.stopped
            break


def _failure(outcome: LoadResult, max_error_rate: float) -> str | None:
    """Why the point fails the run: no request completed, or (leaving out the requests the run
    cancelled itself at a run timeout or Ctrl-C) too many failed or could not connect."""
    if outcome.records and not any(r.ok for r in outcome.records):
        return f"all {len(outcome.records)} requests failed"
    records = [r for r in outcome.records if not r.cancelled]
    return point_failure(
        len(records),
        sum(not r.ok for r in records),
        max_error_rate,
        num_unreachable=sum(r.unreachable for r in records),
    )


def _power_reader(
    config: ServeConfig, platform: Platform | None, injected: PowerReader | None
) -> tuple[PowerReader | None, str]:
    if config.power != "local":
        return None, "power not sampled: the server's GPU may be elsewhere (use --power local)"
    if injected is not None:
        return injected, "injected"
    if platform is None:
        from rocmkit.platform import detect

        platform = detect()
    return platform_power_reader(platform)


def _point_energy(
    config: ServeConfig, sampler: PowerSampler | None, window: EnergyWindow, no_power: str
) -> dict[str, Any]:
    if config.power != "local":
        return {}
    if sampler is None:
        return {"energy_skipped": no_power}
    energy = sampler.energy_j(window.start, window.end)
    if energy is not None:
        return {"energy_j": energy}
    return {"energy_skipped": sampler.why_no_energy(window)}


def benchmark_server(
    config: ServeConfig,
    workload: Workload,
    count_tokens: Callable[[str], int] | None = None,
    on_point: Callable[[ServePoint], None] | None = None,
    *,
    platform: Platform | None = None,
    power_reader: PowerReader | None = None,
) -> ServeResult:
    """Synchronous wrapper of `benchmark_server_async` (runs its own event loop: uvloop's when
    installed, which costs the client less CPU per network read)."""
    return http.run(
        benchmark_server_async(
            config, workload, count_tokens, on_point, platform=platform, power_reader=power_reader
        )
    )


def _rate_label(rate: float, ramp: Ramp | None = None) -> str:
    if ramp is not None:
        return ramp.label()
    return "inf" if math.isinf(rate) else f"{rate:g}"


def serve_measurements(
    result: ServeResult, config: ServeConfig, workload: Workload
) -> list[Measurement]:
    """One Measurement per metric and sweep point, suite "infer-serve"."""
    rows: list[Measurement] = []
    endpoint = result.endpoint or config.endpoint
    for point in result.points:
        s = point.summary
        concurrency = "none" if point.max_concurrency is None else str(point.max_concurrency)
        rate = _rate_label(point.request_rate, point.ramp)
        name = f"{endpoint.model} rate={rate} concurrency={concurrency}"
        params = {
            "model": endpoint.model,
            "api": endpoint.api,
            "stream": endpoint.stream,
            "workload": workload.name,
            "request_rate": rate,  # a string: JSON has no infinity; "linear 1-8" with a ramp
            "max_concurrency": point.max_concurrency,
            "burstiness": config.burstiness,
        }
        extra = {
            "errors": s.errors,
            "stopped": point.stopped,
            "notes": workload.notes,
            "tokens_from_usage": s.tokens_from_usage,
            "length_unit": workload.length_unit,
        }
        values = [(*v, extra) for v in summary_values(s)]
        if config.power == "local":
            energy_extra = (
                {**extra, "skipped": point.energy_skipped} if point.energy_skipped else extra
            )
            energy = energy_values(point.energy_j, s.duration_s, s.total_output_tokens)
            values += [(*v, energy_extra) for v in energy]
        rows += measurement_rows("infer-serve", name, params, values)
    return rows


def summary_values(s: ServeSummary) -> list[tuple[str, float | None, str]]:
    """(metric name with its unit, value, unit) for every number of a summary."""
    mean_in = (
        None
        if s.total_prompt_tokens is None or not s.num_completed
        else s.total_prompt_tokens / s.num_completed
    )
    mean_out = s.total_output_tokens / s.num_completed if s.num_completed else None
    values: list[tuple[str, float | None, str]] = [
        ("num_requests", s.num_requests, "count"),
        ("num_completed", s.num_completed, "count"),
        ("num_failed", s.num_failed, "count"),
        ("num_unsent", s.num_unsent, "count"),
        ("duration_s", s.duration_s, "s"),
        ("total_input_tokens", s.total_prompt_tokens, "tokens"),
        ("total_output_tokens", s.total_output_tokens, "tokens"),
        ("mean_input_tokens", mean_in, "tokens"),
        ("mean_output_tokens", mean_out, "tokens"),
        ("request_per_s", s.request_per_s, "req/s"),
        ("output_tokens_per_s", s.output_tokens_per_s, "tokens/s"),
        ("peak_output_tokens_per_s", s.peak_output_tokens_per_s, "tokens/s"),
        ("total_tokens_per_s", s.total_tokens_per_s, "tokens/s"),
    ]
    if s.goodput_req_per_s is not None:
        values.append(("goodput_req_per_s", s.goodput_req_per_s, "req/s"))
    values.extend(
        (f"slo_{name}_attainment", share, "fraction") for name, share in s.slo_attainment.items()
    )
    dists = (("ttft", s.ttft), ("tpot", s.tpot), ("itl", s.itl), ("e2e", s.e2e), ("queue", s.queue))
    for label, dist in dists:
        values.append((f"{label}_ms_mean", _ms(dist.mean), "ms"))
        values.append((f"{label}_ms_p50", _ms(dist.median), "ms"))
        values.append((f"{label}_ms_std", _ms(dist.std), "ms"))
        values.extend(
            (f"{label}_ms_{percentile_name(q)}", _ms(v), "ms")
            for q, v in dist.percentiles.items()
            if q != 50
        )
        values.append((f"{label}_ms_max", _ms(dist.max), "ms"))
    return values


def request_lines(point: ServePoint) -> list[dict[str, Any]]:
    """One JSON-ready dict per request of a point: times in seconds from the point's start, so
    every figure of the point can be recomputed from them (see docs/infer.md)."""
    rate = _rate_label(point.request_rate, point.ramp)
    lines = []
    for index, r in enumerate(point.records):
        sent = r.start_s - point.start_s if r.start_s else None
        lines.append(
            {
                "request_rate": rate,
                "max_concurrency": point.max_concurrency,
                "index": index,
                "ok": r.ok,
                "scheduled_s": None if r.scheduled_s is None else r.scheduled_s - point.start_s,
                "sent_s": sent,
                "ttft_s": r.ttft_s,
                "itl_s": r.itl_s,
                "e2e_s": r.e2e_s,
                "prompt_tokens": r.prompt_tokens,
                "output_tokens": r.output_tokens,
                "tokens_from_usage": r.tokens_from_usage,
                "http_status": r.http_status,
                "error": r.error,
            }
        )
    return lines


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3
