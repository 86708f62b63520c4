"""Load generation: when each request is sent, how many may be in flight, and when a run stops.

Arrivals follow vLLM's scheme: gaps drawn from a gamma distribution with shape `burstiness` and
mean 1/rate (shape 1 is a Poisson process; below 1 burstier, above 1 more regular). A semaphore
caps requests in flight; a request that arrives while the cap is reached waits for a free slot.
With a ramp (`Ramp`, as vLLM's `--ramp-up-strategy`) the rate itself moves from a start to an end
rate over the requests of the point, linearly or exponentially.
A run ends when every request finished, at its deadline, or on Ctrl-C; requests in flight are
then recorded as failed with the reason (`cancelled`), requests never put on the wire (not yet
due, or waiting for a concurrency slot) are counted as unsent, so the partial result stays honest.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import signal
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from rocmkit.errors import UserError
from rocmkit.infer.metrics import RequestRecord
from rocmkit.infer.workloads import Prompt

SendFn = Callable[[Prompt], Awaitable[RequestRecord]]
# Called with the warm-up records before the measured phase; raises to abort the run.
WarmupCheck = Callable[[list[RequestRecord]], None]
# Called with every finished record; returns a reason to stop sending, or None.
Watch = Callable[[RequestRecord], str | None]


@dataclass(kw_only=True, frozen=True, slots=True)
class Ramp:
    """The rate moves from `start_rate` to `end_rate` over a point's requests (vLLM's ramp-up):
    request i of n is sent at the rate of progress i / (n - 1), linear or exponential in it."""

    strategy: Literal["linear", "exponential"]
    start_rate: float
    end_rate: float

    def __post_init__(self) -> None:
        if self.strategy not in ("linear", "exponential"):
            raise UserError(f"--ramp-up takes linear or exponential (got {self.strategy!r})")
        rates = (self.start_rate, self.end_rate)
        if not all(0 < r < math.inf for r in rates):
            raise UserError(
                "--ramp-up needs --ramp-up-start-rate and --ramp-up-end-rate, both finite and > 0"
            )

    def rate_at(self, progress: float) -> float:
        """Requests per second at `progress` in [0, 1] of the point's requests."""
        if self.strategy == "linear":
            return self.start_rate + (self.end_rate - self.start_rate) * progress
        return float(self.start_rate * (self.end_rate / self.start_rate) ** progress)

    def label(self) -> str:
        return f"{self.strategy} {self.start_rate:g}-{self.end_rate:g}"


@dataclass(kw_only=True, frozen=True, slots=True)
class LoadConfig:
    """One load point."""

    request_rate: float = math.inf  # requests per second; inf sends everything at once
    burstiness: float = 1.0  # gamma shape of the inter-arrival gaps; 1.0 is Poisson
    max_concurrency: int | None = None  # None: no cap
    num_warmup: int = 0  # requests sent and awaited first, excluded from the measurement
    seed: int = 0
    deadline_s: float | None = None  # perf_counter time at which the run is cut short
    ramp_up_s: float = 0.0  # the rate climbs linearly from 0 to request_rate over this time
    ramp: Ramp | None = None  # the rate moves between two rates over the requests (not --rate)

    def __post_init__(self) -> None:
        if self.ramp_up_s < 0 or (self.ramp_up_s > 0 and math.isinf(self.request_rate)):
            raise UserError("--ramp-up-time needs a finite --rate and a duration >= 0")
        if self.ramp is not None and (self.ramp_up_s > 0 or not math.isinf(self.request_rate)):
            raise UserError("--ramp-up sets the rate itself: leave out --rate and --ramp-up-time")
        if not self.request_rate > 0:
            raise UserError(f"--rate must be > 0 (got {self.request_rate})")
        if not self.burstiness > 0:
            raise UserError(f"burstiness must be > 0 (got {self.burstiness})")
        if self.max_concurrency is not None and self.max_concurrency < 1:
            raise UserError(f"--concurrency must be >= 1 (got {self.max_concurrency})")
        if self.num_warmup < 0:
            raise UserError("warm-up request count must be >= 0")


@dataclass(kw_only=True, slots=True)
class LoadResult:
    records: list[RequestRecord]
    duration_s: float
    stopped: str | None = None  # None, "run timeout", "interrupted" (Ctrl-C) or "terminated"
    start_s: float = 0.0  # perf_counter when the measured phase began (warm-up done)
    num_unsent: int = 0  # prompts never put on the wire (the run stopped first)


def ramp_offsets(offsets: Sequence[float], ramp_up_s: float) -> list[float]:
    """Warp constant-rate send times so the rate grows linearly from 0 over `ramp_up_s`.

    With a linear ramp, the requests sent by time t < R number rate * t^2 / (2R); at full rate
    they would number rate * u, so the request due at u is sent at sqrt(2 R u), and after the
    ramp (u >= R / 2) at u + R / 2.
    """
    if ramp_up_s <= 0:
        return list(offsets)
    half = ramp_up_s / 2
    return [math.sqrt(2 * ramp_up_s * u) if u < half else u + half for u in offsets]


def schedule(prompts: Sequence[Prompt], config: LoadConfig) -> list[float]:
    """Send times from the start: the prompts' own (trace replay) or drawn from the rate."""
    if prompts and all(p.arrival_s is not None for p in prompts):
        return [float(p.arrival_s or 0.0) for p in prompts]
    if config.ramp is not None:
        return ramped_offsets(len(prompts), config.ramp, config.burstiness, config.seed)
    offsets = arrival_offsets(len(prompts), config.request_rate, config.burstiness, config.seed)
    return ramp_offsets(offsets, config.ramp_up_s)


def arrival_offsets(num: int, rate: float, burstiness: float, seed: int) -> list[float]:
    """Send times (s from the start) of `num` requests; all zero for an infinite rate."""
    if math.isinf(rate):
        return [0.0] * num
    return _cumulative(_unit_gaps(num, burstiness, seed) / rate)


def ramped_offsets(num: int, ramp: Ramp, burstiness: float, seed: int) -> list[float]:
    """Send times under a ramp: the gap before request i is drawn at the rate of progress
    i / (num - 1), as vLLM's bench serve draws it."""
    progress = np.arange(num) / max(num - 1, 1)
    rates = np.array([ramp.rate_at(float(p)) for p in progress])
    return _cumulative(_unit_gaps(num, burstiness, seed) / rates)


def _unit_gaps(num: int, burstiness: float, seed: int) -> np.ndarray:
    """Gamma gaps of mean 1 and shape `burstiness` (divided by a rate, they have mean 1/rate)."""
    return np.random.default_rng(seed).gamma(shape=burstiness, scale=1.0 / burstiness, size=num)


def _cumulative(gaps: np.ndarray) -> list[float]:
    if len(gaps):
        gaps[0] = 0.0  # the first request goes at once; the clock starts with it
    return [float(t) for t in np.cumsum(gaps)]


async def run_load(
    prompts: Sequence[Prompt],
    send: SendFn,
    config: LoadConfig,
    *,
    check_warmup: WarmupCheck | None = None,
    watch: Watch | None = None,
    warm_send: SendFn | None = None,
) -> LoadResult:
    """Send `prompts` by the arrival schedule under the concurrency cap; return every record.

    `check_warmup` may raise to abort before the measured phase; `watch` sees each finished
    record and may stop the run (e.g. the server has been unreachable for too long);
    `warm_send` sends the warm-up requests (e.g. with retries; default `send`).
    """
    limit = asyncio.Semaphore(config.max_concurrency or len(prompts) or 1)
    stop = asyncio.Event()
    reason: list[str] = []

    def halt(why: str) -> None:
        if not reason:
            reason.append(why)
        stop.set()

    def watched(record: RequestRecord) -> None:
        why = watch(record) if watch is not None else None
        if why is not None:
            halt(why)

    with _on_stop_signals(halt):
        if config.num_warmup:
            warm = [prompts[i % len(prompts)] for i in range(config.num_warmup)]
            warm_tasks: list[asyncio.Future[RequestRecord]] = [
                asyncio.ensure_future(_limited(warm_send or send, p, limit, _Sending()))
                for p in warm
            ]
            if await _gather_until(warm_tasks, stop, config.deadline_s) and check_warmup:
                check_warmup([task.result() for task in warm_tasks])
        if stop.is_set() or _past(config.deadline_s):
            return LoadResult(
                records=[],
                duration_s=0.0,
                stopped=reason[0] if reason else "run timeout",
                num_unsent=len(prompts),
            )
        start = time.perf_counter()
        sending = await _launch(prompts, send, config, limit, stop, start, watched)
        finished = await _gather_until([task for task, _ in sending], stop, config.deadline_s)
        duration = time.perf_counter() - start
    if not finished and not reason:
        reason.append("run timeout")
    why = reason[0] if reason else ""
    records = [_record_of(task, why) for task, state in sending if state.on_wire]
    return LoadResult(
        records=records,
        duration_s=duration,
        stopped=reason[0] if reason else None,
        start_s=start,
        num_unsent=len(prompts) - len(records),
    )


@dataclass(slots=True)
class _Sending:
    """Whether a request got its concurrency slot and went to the client (else it is unsent)."""

    on_wire: bool = False


async def _launch(
    prompts: Sequence[Prompt],
    send: SendFn,
    config: LoadConfig,
    limit: asyncio.Semaphore,
    stop: asyncio.Event,
    start: float,
    watched: Callable[[RequestRecord], None],
) -> list[tuple[asyncio.Future[RequestRecord], _Sending]]:
    sending: list[tuple[asyncio.Future[RequestRecord], _Sending]] = []
    offsets = schedule(prompts, config)
    for prompt, offset in zip(prompts, offsets, strict=True):
        wait = start + offset - time.perf_counter()
        if config.deadline_s is not None:
            wait = min(wait, config.deadline_s - time.perf_counter())
        if wait > 0:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), wait)
        if stop.is_set() or _past(config.deadline_s):
            break
        state = _Sending()
        task = _limited(send, prompt, limit, state, watched, due_s=start + offset)
        sending.append((asyncio.ensure_future(task), state))
    return sending


async def _limited(
    send: SendFn,
    prompt: Prompt,
    limit: asyncio.Semaphore,
    state: _Sending,
    watched: Callable[[RequestRecord], None] | None = None,
    due_s: float | None = None,
) -> RequestRecord:
    async with limit:
        state.on_wire = True
        record = await send(prompt)
    record.scheduled_s = due_s
    if watched is not None:
        watched(record)
    return record


async def _gather_until(
    tasks: list[asyncio.Future[RequestRecord]], stop: asyncio.Event, deadline_s: float | None
) -> bool:
    """Wait for all tasks, the stop event or the deadline; cancel the rest. True if all finished."""
    if not tasks:
        return True
    stopper = asyncio.ensure_future(stop.wait())
    timeout = None if deadline_s is None else max(0.0, deadline_s - time.perf_counter())
    all_done = asyncio.ensure_future(asyncio.wait(tasks))
    await asyncio.wait([all_done, stopper], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finished = all_done.done()
    waiters: list[asyncio.Future[Any]] = [stopper, all_done, *tasks]
    for pending in waiters:
        if not pending.done():
            pending.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return finished


def _record_of(task: asyncio.Future[RequestRecord], reason: str) -> RequestRecord:
    if task.cancelled():
        return RequestRecord(ok=False, error=f"cancelled: {reason}", cancelled=True)
    exc = task.exception()
    if exc is not None:  # send functions should not raise; keep the run alive if one does
        return RequestRecord(ok=False, error=f"{type(exc).__name__}: {exc}")
    return task.result()


def _past(deadline_s: float | None) -> bool:
    return deadline_s is not None and time.perf_counter() >= deadline_s


# How a signal ends a run: its reason, which `rocmkit.driver` turns into exit code 130 or 143.
_STOP_SIGNALS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


@contextlib.contextmanager
def _on_stop_signals(halt: Callable[[str], None]) -> Iterator[None]:
    """Route Ctrl-C (SIGINT) and SIGTERM (a scheduler or `kill`) to `halt` while the run lasts,
    so either ends it with a partial result that is saved."""
    loop = asyncio.get_running_loop()
    added = []
    try:
        for signum, why in _STOP_SIGNALS.items():
            loop.add_signal_handler(signum, halt, why)
            added.append(signum)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or Windows
        pass
    try:
        yield
    finally:
        for signum in added:
            loop.remove_signal_handler(signum)
