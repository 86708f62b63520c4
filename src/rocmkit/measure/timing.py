"""The timing core: device events on GPU, perf_counter on CPU, warm-up, cache flush, statistics.

`time_callable(fn, config, device)` runs `fn` a few times untimed, then times it until a sample count
or a time budget is reached, and returns the samples in seconds. `summarize(samples)` is pure.
`measure` adds what the shared machine did meanwhile (bench.noise) and re-measures an unsteady figure
once; `Stats.noise` says why a figure is still not to be trusted.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocmkit.errors import UserError
from rocmkit.measure.noise import Noise, num_cpus, other_cores, own_cores, snapshot
from rocmkit.measure.ticks import tick
from rocmkit.platform.specs import last_level_cache_bytes

if TYPE_CHECKING:
    import torch

MIN_FLUSH_BYTES = 64 * 2**20
# The kernel counts CPU time in 10 ms ticks: over a few milliseconds another process's load reads
# as zero or as several cores at random. The load around a CPU figure is read over at least this.
MIN_LOAD_WINDOW_S = 0.1


@dataclass(kw_only=True)
class TimingConfig:
    """How long and how often to time one measurement."""

    warmup: int = 3
    min_samples: int = 5
    max_samples: int = 200
    budget_s: float = 1.0  # stop after this much timed time once min_samples are in
    flush_cache: bool = (
        False  # overwrite a buffer larger than the last-level cache before each sample
    )

    def __post_init__(self) -> None:
        if self.warmup < 0:
            raise UserError("timing.warmup must be >= 0")
        if self.min_samples < 1 or self.max_samples < self.min_samples:
            raise UserError("timing needs 1 <= min_samples <= max_samples")
        if self.budget_s <= 0:
            raise UserError("timing.budget_s must be > 0")


@dataclass(frozen=True, kw_only=True)
class Stats:
    """Summary of timed samples (seconds): every figure comes with its sample count."""

    median: float
    iqr: float
    min: float
    max: float
    mean: float
    cv: float  # standard deviation / mean; 0 for a single sample
    num_samples: int
    other_cores: float | None = None  # cores other processes kept busy while this was timed
    noise: tuple[str, ...] = ()  # why the figure is unsteady; empty when it is not
    first_noise: tuple[str, ...] = ()  # why it was re-measured; empty when it was not
    checked: object = None  # what `measure(check=...)` said of the last timed iteration's output

    def to_dict(self) -> dict[str, float]:
        """The numbers, for Measurement.stats."""
        numbers: dict[str, float] = {
            "median": self.median,
            "iqr": self.iqr,
            "min": self.min,
            "max": self.max,
            "mean": self.mean,
            "cv": self.cv,
            "num_samples": self.num_samples,
        }
        if self.other_cores is not None:
            numbers["other_cores"] = self.other_cores
        return {k: v if k == "num_samples" else float(v) for k, v in numbers.items()}

    def noise_extra(self) -> dict[str, str]:
        """Measurement.extra entries that flag this figure: `noisy` and/or `remeasured`."""
        extra = {}
        if self.noise:
            extra["noisy"] = "; ".join(self.noise)
        if self.first_noise:
            extra["remeasured"] = "once, because " + "; ".join(self.first_noise)
        return extra


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default 'linear' method) of already sorted values."""
    if not sorted_values:
        raise ValueError("quantile of no values")
    position = (len(sorted_values) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    fraction = position - low
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * fraction


def summarize(samples: Sequence[float]) -> Stats:
    """Median, IQR (q75 - q25), min, max, mean and coefficient of variation of samples."""
    if not samples:
        raise ValueError("cannot summarize zero samples")
    values = sorted(float(s) for s in samples)
    mean = statistics.fmean(values)
    stdev = statistics.stdev(values) if len(values) > 1 else 0.0
    return Stats(
        median=quantile(values, 0.5),
        iqr=quantile(values, 0.75) - quantile(values, 0.25),
        min=values[0],
        max=values[-1],
        mean=mean,
        cv=stdev / mean if mean > 0 else 0.0,
        num_samples=len(values),
    )


def flush_bytes_for(arch: str | None, l2_cache_bytes: int | None) -> int:
    """Flush buffer size: twice the largest cache in front of memory, at least 64 MiB.

    torch reports only L2 (`L2_cache_size`); the cache behind it (AMD Infinity Cache) comes from
    the hardware-facts table, which cites its source."""
    llc = last_level_cache_bytes(arch)
    return max(MIN_FLUSH_BYTES, 2 * llc, 2 * (l2_cache_bytes or 0))


class Flusher:
    """Overwrites a buffer larger than the device's caches so the next read comes from memory."""

    def __init__(self, device: torch.device | str) -> None:
        import torch

        self.device = torch.device(device)
        if self.device.type == "cuda":
            props = torch.cuda.get_device_properties(self.device)
            arch = str(getattr(props, "gcnArchName", "")).split(":")[0] or None
            size = flush_bytes_for(arch, getattr(props, "L2_cache_size", None))
        else:
            size = flush_bytes_for(None, None)
        self.num_bytes = size
        self._buffer = torch.empty(size, dtype=torch.uint8, device=self.device)

    def __call__(self) -> None:
        self._buffer.fill_(1)


def time_callable(
    fn: Callable[[], object], config: TimingConfig, device: torch.device | str = "cpu"
) -> list[float]:
    """Run `fn` config.warmup times, then time it; returns samples in seconds."""
    return _time_callable(fn, config, device)[0]


def _time_callable(
    fn: Callable[[], object], config: TimingConfig, device: torch.device | str
) -> tuple[list[float], object]:
    """The samples and what the last timed call of `fn` returned (the output a check reads)."""
    import torch

    dev = torch.device(device)
    flush = Flusher(dev) if config.flush_cache else None
    for _ in range(config.warmup):
        fn()
    if dev.type == "cuda":
        return _time_events(fn, config, flush, dev)
    return _time_host(fn, config, flush)


def _time_host(
    fn: Callable[[], object], config: TimingConfig, flush: Callable[[], None] | None
) -> tuple[list[float], object]:
    samples: list[float] = []
    spent = 0.0
    last: object = None
    while len(samples) < config.max_samples:
        if flush is not None:
            flush()
        start = time.perf_counter()
        last = fn()
        elapsed = time.perf_counter() - start
        samples.append(elapsed)
        spent += elapsed
        if len(samples) >= config.min_samples and spent >= config.budget_s:
            break
    return samples, last


def _time_events(
    fn: Callable[[], object],
    config: TimingConfig,
    flush: Callable[[], None] | None,
    dev: torch.device,
) -> tuple[list[float], object]:
    """GPU timing with events recorded on the stream; one synchronize per batch of samples."""
    import torch

    torch.cuda.synchronize(dev)
    last: object = None
    samples: list[float] = []
    spent = 0.0
    batch = config.min_samples
    while len(samples) < config.max_samples:
        pairs = []
        for _ in range(min(batch, config.max_samples - len(samples))):
            if flush is not None:
                flush()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            last = fn()
            end.record()
            pairs.append((start, end))
        torch.cuda.synchronize(dev)
        new = [s.elapsed_time(e) / 1e3 for s, e in pairs]
        samples.extend(new)
        spent += sum(new)
        if spent >= config.budget_s:
            break
        batch = max(1, min(batch * 2, config.max_samples))
    return samples, last


def measure(
    fn: Callable[[], object],
    config: TimingConfig,
    device: torch.device | str = "cpu",
    check: Callable[[object], object] | None = None,
) -> Stats:
    """time_callable + summarize + the machine's load meanwhile; an unsteady figure is timed once
    more and the steadier (else the faster) of the two attempts is kept, flagged if still unsteady.

    `check(output)` runs on what the last timed call of `fn` returned, before anything else runs;
    its verdict is `Stats.checked` (of the attempt kept)."""
    first = _measure_once(fn, config, device, check)
    if not first.noise:
        tick()
        return first
    second = _measure_once(fn, config, device, check)
    best = second if not second.noise or second.median <= first.median else first
    # a wrong output in either attempt stays wrong, whichever timing is kept
    checks = (first.checked, second.checked)
    checked = next((c for c in checks if getattr(c, "correct", True) is False), best.checked)
    tick()
    return dataclasses.replace(best, first_noise=first.noise, checked=checked)


def _measure_once(
    fn: Callable[[], object],
    config: TimingConfig,
    device: torch.device | str,
    check: Callable[[object], object] | None = None,
) -> Stats:
    import torch

    on_cpu = torch.device(device).type == "cpu"
    start = snapshot()
    samples, last = _time_callable(fn, config, device)
    stats = summarize(samples)
    if check is not None:
        stats = dataclasses.replace(stats, checked=check(last))
    if on_cpu:
        _keep_busy(fn, until_s=start.wall_s + MIN_LOAD_WINDOW_S)
    end = snapshot()
    others = other_cores(start, end)
    noise = Noise(
        median=stats.median,
        iqr=stats.iqr,
        cv=stats.cv,
        num_samples=stats.num_samples,
        other_cores=others,
        own_cores=own_cores(start, end),
        threads=torch.get_num_threads(),
        cpus=num_cpus(),
    )
    reasons = noise.reasons(on_cpu=on_cpu)
    return dataclasses.replace(stats, other_cores=others, noise=tuple(reasons))


def _keep_busy(fn: Callable[[], object], *, until_s: float) -> None:
    """Run the figure's own work, untimed, until `until_s`: the load read around a short figure
    then covers enough ticks, and this process competes as it did while it was timed."""
    while time.monotonic() < until_s:
        fn()
