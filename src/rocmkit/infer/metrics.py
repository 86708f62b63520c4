"""Serving metrics as pure functions: TTFT, TPOT, ITL, E2E, throughputs and goodput.

Definitions follow vLLM's `benchmarks/benchmark_serving.py` (`vllm bench serve`) so numbers can be
compared with it: TPOT per request is (E2E - TTFT) / (output tokens - 1) over requests with more than
one output token, ITL is every gap between consecutive streamed chunks of every successful request,
throughputs divide by the wall-clock duration of the measured run (warm-up excluded), and goodput
counts the successful requests that meet every SLO. docs/infer.md spells each one out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from rocmkit.errors import UserError

PERCENTILES: tuple[float, ...] = (50, 90, 95, 99)  # the default --percentiles
SLO_METRICS: tuple[str, ...] = ("ttft", "tpot", "e2e")
_SLO_ITEM = re.compile(r"^\s*(\w+)\s*=\s*([0-9]*\.?[0-9]+(?:[eE][-+]?\d+)?)\s*(ms|s)?\s*$")


@dataclass(kw_only=True, slots=True)
class RequestRecord:
    """What the client saw for one request; times in seconds from the moment it was sent."""

    ok: bool
    start_s: float = 0.0  # perf_counter when sent; only differences are meaningful
    scheduled_s: float | None = None  # perf_counter when it was due by the arrival schedule
    ttft_s: float | None = None
    e2e_s: float | None = None
    itl_s: list[float] = field(default_factory=list)
    prompt_tokens: int | None = None
    output_tokens: int = 0
    tokens_from_usage: bool = False  # True when the server's usage field gave the counts
    error: str | None = None
    http_status: int | None = None  # the answer's status; None when no answer came
    unreachable: bool = False  # no connection could be made (refused, DNS, connect timeout)
    cancelled: bool = False  # in flight when the run stopped (run timeout, Ctrl-C, server gone)
    streamed: bool = True  # False: one whole answer, so there is no per-token timing (TPOT n/a)

    @property
    def tpot_s(self) -> float | None:
        """(E2E - TTFT) / (output tokens - 1); None with fewer than two output tokens, and for a
        whole (not streamed) answer, whose TTFT is its E2E: there is no time per token to see."""
        if not self.ok or not self.streamed or self.ttft_s is None or self.e2e_s is None:
            return None
        if self.output_tokens < 2:
            return None
        return (self.e2e_s - self.ttft_s) / (self.output_tokens - 1)

    @property
    def queue_s(self) -> float | None:
        """Client-side wait from the scheduled send time to the request on the wire (a free
        concurrency slot, the event loop, building the request)."""
        return None if self.scheduled_s is None else max(0.0, self.start_s - self.scheduled_s)

    def chunk_times_s(self) -> list[float]:
        """perf_counter time of each streamed text chunk (the first at start + TTFT)."""
        if self.ttft_s is None:
            return []
        times = [self.start_s + self.ttft_s]
        for gap in self.itl_s:
            times.append(times[-1] + gap)
        return times


@dataclass(kw_only=True, frozen=True, slots=True)
class Distribution:
    """Mean, median, standard deviation, tail percentiles and maximum of one latency, in seconds."""

    count: int
    mean: float | None
    median: float | None
    std: float | None
    percentiles: dict[float, float | None]
    max: float | None = None


@dataclass(kw_only=True, frozen=True, slots=True)
class ServeSummary:
    """The aggregate of one measured run (one rate / concurrency point)."""

    num_requests: int
    num_completed: int
    num_failed: int
    num_unsent: int = 0  # prompts of the point never put on the wire (the run stopped first)
    duration_s: float
    total_prompt_tokens: int | None  # None when some prompt's length is unknown
    total_output_tokens: int
    request_per_s: float
    output_tokens_per_s: float
    total_tokens_per_s: float | None
    goodput_req_per_s: float | None  # None when no SLO was given
    ttft: Distribution
    tpot: Distribution
    itl: Distribution
    e2e: Distribution
    queue: Distribution  # client-side wait before sending (RequestRecord.queue_s)
    peak_output_tokens_per_s: float | None  # the busiest 1 s window of the run
    slo_attainment: dict[str, float]  # metric -> share of all requests within its limit
    errors: dict[str, int]  # error message -> count
    tokens_from_usage: bool  # every completed request's counts came from the server's usage


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolation percentile (numpy's default, as vLLM uses); None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def distribution(values: Sequence[float], qs: Iterable[float] = PERCENTILES) -> Distribution:
    """Summarise latencies; every field is None (not 0) when there are no values."""
    if not values:
        return Distribution(
            count=0, mean=None, median=None, std=None, percentiles=dict.fromkeys(qs), max=None
        )
    mean = math.fsum(values) / len(values)
    # population standard deviation, like numpy's np.std default that vLLM reports
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
    return Distribution(
        count=len(values),
        mean=mean,
        median=percentile(values, 50),
        std=std,
        percentiles={q: percentile(values, q) for q in qs},
        max=max(values),
    )


def parse_slo(text: str) -> dict[str, float]:
    """Parse "ttft=200ms,tpot=50ms,e2e=2s" into {"ttft": 0.2, "tpot": 0.05, "e2e": 2.0} seconds."""
    slo: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = _SLO_ITEM.match(item)
        if match is None:
            raise UserError(
                f"bad SLO '{item}': write METRIC=VALUE[ms|s], e.g. ttft=200ms,tpot=50ms"
            )
        name, number, unit = match.group(1).lower(), float(match.group(2)), match.group(3)
        if name not in SLO_METRICS:
            raise UserError(f"unknown SLO metric '{name}': use one of {', '.join(SLO_METRICS)}")
        if unit is None:
            raise UserError(f"SLO '{item}' needs a unit: {name}={match.group(2)}ms or ...s")
        if number <= 0:
            raise UserError(f"SLO '{item}' must be positive")
        slo[name] = number / 1000.0 if unit == "ms" else number
    if not slo:
        raise UserError("empty SLO: write e.g. --slo ttft=200ms,tpot=50ms")
    return slo


def parse_percentiles(values: Sequence[float]) -> tuple[float, ...]:
    """Checked `--percentiles` (each strictly between 0 and 100), sorted, without repeats."""
    for q in values:
        if not 0 < q < 100:
            raise UserError(
                f"--percentiles takes values between 0 and 100, e.g. 50,90,99,99.9 (got {q:g})"
            )
    if not values:
        raise UserError("--percentiles needs at least one value, e.g. 50,90,99,99.9")
    return tuple(sorted(set(values)))


def percentile_name(q: float) -> str:
    """The metric suffix of a percentile: 99 -> p99, 99.9 -> p99.9 (as vLLM names them)."""
    return f"p{q:g}"


def meets_slo(record: RequestRecord, slo: Mapping[str, float]) -> bool:
    """True when a successful request meets every SLO.

    As in vLLM, a request with a single output token has TPOT 0 for this purpose.
    """
    if not record.ok or record.ttft_s is None or record.e2e_s is None:
        return False
    observed = {"ttft": record.ttft_s, "tpot": record.tpot_s or 0.0, "e2e": record.e2e_s}
    return all(observed[name] <= limit for name, limit in slo.items())


def peak_output_tokens_per_s(
    records: Sequence[RequestRecord], start_s: float, window_s: float = 1.0
) -> float | None:
    """Most output tokens received in one `window_s` window (windows aligned to `start_s`).

    A request's output tokens are spread evenly over its text chunks, so the windows add up to
    the total; with one token per chunk this is vLLM's max_output_tokens_per_s.
    """
    buckets: dict[int, float] = {}
    for record in records:
        times = record.chunk_times_s() if record.ok else []
        for when in times:
            index = math.floor((when - start_s) / window_s)
            buckets[index] = buckets.get(index, 0.0) + record.output_tokens / len(times)
    return max(buckets.values()) / window_s if buckets else None


def slo_attainment(records: Sequence[RequestRecord], slo: Mapping[str, float]) -> dict[str, float]:
    """Per metric: the share of all requests (failed ones count as misses) within its limit."""
    if not records:
        return {}
    shares = {}
    for name, limit in slo.items():
        within = sum(meets_slo(record, {name: limit}) for record in records)
        shares[name] = within / len(records)
    return shares


def summarize(
    records: Sequence[RequestRecord],
    duration_s: float,
    slo: Mapping[str, float] | None = None,
    start_s: float | None = None,
    *,
    percentiles: Sequence[float] = PERCENTILES,
    num_unsent: int = 0,
) -> ServeSummary:
    """Aggregate the records of one measured run that lasted `duration_s` seconds from `start_s`
    (perf_counter; default: the first request's send time); `percentiles` of every latency are
    reported, `num_unsent` prompts were never sent (not failures)."""
    if duration_s <= 0:
        raise ValueError("duration_s must be positive")
    done = [r for r in records if r.ok]
    errors: dict[str, int] = {}
    for record in records:
        if not record.ok:
            key = record.error or "unknown error"
            errors[key] = errors.get(key, 0) + 1
    known = all(r.prompt_tokens is not None for r in done)
    prompt_tokens = sum(r.prompt_tokens or 0 for r in done) if known else None
    output_tokens = sum(r.output_tokens for r in done)
    tpots = [t for t in (r.tpot_s for r in done) if t is not None]
    good = None if slo is None else sum(meets_slo(r, slo) for r in done) / duration_s
    if start_s is None:
        start_s = min((r.start_s for r in records), default=0.0)
    return ServeSummary(
        num_requests=len(records),
        num_completed=len(done),
        num_failed=len(records) - len(done),
        num_unsent=num_unsent,
        duration_s=duration_s,
        total_prompt_tokens=prompt_tokens,
        total_output_tokens=output_tokens,
        request_per_s=len(done) / duration_s,
        output_tokens_per_s=output_tokens / duration_s,
        total_tokens_per_s=None
        if prompt_tokens is None
        else (prompt_tokens + output_tokens) / duration_s,
        goodput_req_per_s=good,
        ttft=distribution([r.ttft_s for r in done if r.ttft_s is not None], percentiles),
        tpot=distribution(tpots, percentiles),
        itl=distribution([gap for r in done for gap in r.itl_s], percentiles),
        e2e=distribution([r.e2e_s for r in done if r.e2e_s is not None], percentiles),
        queue=distribution([q for q in (r.queue_s for r in records) if q is not None], percentiles),
        peak_output_tokens_per_s=peak_output_tokens_per_s(done, start_s),
        slo_attainment=slo_attainment(records, slo) if slo else {},
        errors=errors,
        tokens_from_usage=bool(done) and all(r.tokens_from_usage for r in done),
    )
