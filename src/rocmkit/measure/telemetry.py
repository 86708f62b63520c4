"""GPU telemetry: clocks, power, temperature, clock-limit reasons and ECC/RAS counters, sampled in
a background thread and summarised per stretch of work (a bench suite, a burn-in).

A reader is `() -> tuple[DeviceReading, ...]` (every visible GPU at once). `telemetry_reader`
picks the best one: the pynvml or amdsmi Python library when importable, else `nvidia-smi
--query-gpu`, `amd-smi metric --json` or `rocm-smi --showallinfo --json` run through the one
runner with a deadline (`platform.smi.run_command`). No tool, no library, no GPU: no reader and
the reason, never an exception. The readers live in `measure.telemetry_readers`, the pure parsers in
`measure.telemetry_parsers`.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rocmkit.measure.telemetry_parsers import DeviceReading, slowdowns
from rocmkit.measure.telemetry_readers import TelemetryReader, command_reader, telemetry_reader

DEFAULT_INTERVAL_S = 0.5
MAX_SAMPLES = 2048  # a 5-minute burn-in at 0.5 s fits; longer runs keep every 2nd, 4th... sample

__all__ = [
    "DeviceReading",
    "TelemetryReader",
    "TelemetrySample",
    "TelemetrySampler",
    "command_reader",
    "summarize",
    "telemetry_reader",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class TelemetrySample:
    time_s: float  # on the sampler's clock
    devices: tuple[DeviceReading, ...]


# ---------------------------------------------------------------------------- sampler


class TelemetrySampler:
    """Calls `reader` every `interval_s` seconds between start() and stop(), in a daemon thread.

    Memory is bounded: past `max_samples`, every second sample is dropped and the keeping stride
    doubles, so a long run keeps evenly spread samples from its start to its end. A reader that
    raises counts an error; one that hangs stalls only this thread (stop() waits `timeout_s`)."""

    def __init__(
        self,
        reader: TelemetryReader,
        *,
        source: str = "injected",
        interval_s: float = DEFAULT_INTERVAL_S,
        max_samples: int = MAX_SAMPLES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_samples < 2:
            raise ValueError("max_samples must be at least 2")
        self.source = source
        self._reader = reader
        self._interval_s = interval_s
        self._max_samples = max_samples
        self._clock = clock
        self._samples: list[TelemetrySample] = []
        self._stride = 1
        self._num_reads = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.num_errors = 0
        self.last_error: str | None = None

    def start(self) -> TelemetrySampler:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="rocmkit-telemetry", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def __enter__(self) -> TelemetrySampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def now(self) -> float:
        return self._clock()

    def read_once(self) -> None:
        """One reading now (the loop's body; tests call it directly)."""
        try:
            devices = self._reader()
        except Exception as exc:
            self.num_errors += 1
            self.last_error = str(exc) or type(exc).__name__
            return
        self._keep(TelemetrySample(time_s=self._clock(), devices=tuple(devices)))

    def _keep(self, sample: TelemetrySample) -> None:
        with self._lock:
            self._num_reads += 1
            if (self._num_reads - 1) % self._stride:
                return
            self._samples.append(sample)
            if len(self._samples) >= self._max_samples:
                self._samples = self._samples[::2]
                self._stride *= 2

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.read_once()
            self._stop.wait(self._interval_s)

    def samples(
        self, start: float | None = None, end: float | None = None
    ) -> list[TelemetrySample]:
        with self._lock:
            kept = list(self._samples)
        return [
            s
            for s in kept
            if (start is None or s.time_s >= start) and (end is None or s.time_s <= end)
        ]


# ---------------------------------------------------------------------------- summaries


@dataclass(kw_only=True)
class DeviceSummary:
    """One device over a stretch of work: what a report shows and a burn-in judges."""

    index: int
    num_samples: int
    sm_clock_mhz: dict[str, float] = field(default_factory=dict)  # min / median / max
    memory_clock_mhz: dict[str, float] = field(default_factory=dict)
    power_w: dict[str, float] = field(default_factory=dict)
    temperature_c: dict[str, float] = field(default_factory=dict)
    burst_sm_clock_mhz: float | None = None  # median over the first `burst_s` seconds
    sustained_sm_clock_mhz: float | None = None  # median over the rest
    reasons_seen: dict[str, float] = field(default_factory=dict)  # reason -> fraction of samples
    reasons_reported: bool = False
    ecc_corrected_delta: int | None = None
    ecc_uncorrected_delta: int | None = None

    @property
    def slowdowns(self) -> list[str]:
        """Thermal or hardware slowdown reasons seen (what a burn-in flags)."""
        return slowdowns(self.reasons_seen)

    @property
    def slowdown_fraction(self) -> float | None:
        """Fraction of samples with a thermal or hardware reason active (None: not reported)."""
        if not self.reasons_reported:
            return None
        return max((self.reasons_seen[r] for r in self.slowdowns), default=0.0)

    def record(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {**asdict(self), "slowdowns": self.slowdowns}


def _spread(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {}
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def summarize(samples: Sequence[TelemetrySample], *, burst_s: float = 2.0) -> list[DeviceSummary]:
    """Per device: min/median/max of each field, burst (first `burst_s` s) vs sustained SM clock,
    the share of samples each clock reason was active in, and the ECC counters' growth."""
    if not samples:
        return []
    start = samples[0].time_s
    by_device: dict[int, list[tuple[float, DeviceReading]]] = {}
    for sample in samples:
        for reading in sample.devices:
            by_device.setdefault(reading.index, []).append((sample.time_s - start, reading))
    return [_device_summary(index, rows, burst_s) for index, rows in sorted(by_device.items())]


def _device_summary(
    index: int, rows: list[tuple[float, DeviceReading]], burst_s: float
) -> DeviceSummary:
    def values(name: str, rows: Sequence[tuple[float, DeviceReading]] = rows) -> list[float]:
        return [float(v) for _, r in rows if (v := getattr(r, name)) is not None]

    burst = values("sm_clock_mhz", [(t, r) for t, r in rows if t <= burst_s])
    sustained = values("sm_clock_mhz", [(t, r) for t, r in rows if t > burst_s])
    reported = [r.clock_reasons for _, r in rows if r.clock_reasons is not None]
    seen: dict[str, float] = {}
    for reasons in reported:
        for reason in reasons:
            seen[reason] = seen.get(reason, 0.0) + 1 / len(reported)
    return DeviceSummary(
        index=index,
        num_samples=len(rows),
        sm_clock_mhz=_spread(values("sm_clock_mhz")),
        memory_clock_mhz=_spread(values("memory_clock_mhz")),
        power_w=_spread(values("power_w")),
        temperature_c=_spread(values("temperature_c")),
        burst_sm_clock_mhz=statistics.median(burst) if burst else None,
        sustained_sm_clock_mhz=statistics.median(sustained) if sustained else None,
        reasons_seen={k: round(v, 4) for k, v in seen.items()},
        reasons_reported=bool(reported),
        ecc_corrected_delta=_delta([r.ecc_corrected for _, r in rows]),
        ecc_uncorrected_delta=_delta([r.ecc_uncorrected for _, r in rows]),
    )


def _delta(counts: Sequence[int | None]) -> int | None:
    known = [c for c in counts if c is not None]
    return known[-1] - known[0] if known else None


# ---------------------------------------------------------------------------- the active sampler

_ACTIVE: list[TelemetrySampler] = []


@contextlib.contextmanager
def sampling(sampler: TelemetrySampler | None) -> Iterator[TelemetrySampler | None]:
    """Run `sampler` for the block and make it `active_sampler()` there (a burn-in inside a bench
    run reads the run's sampler instead of starting a second one)."""
    if sampler is None:
        yield None
        return
    sampler.start()
    _ACTIVE.append(sampler)
    try:
        yield sampler
    finally:
        _ACTIVE.remove(sampler)
        sampler.stop()


def active_sampler() -> TelemetrySampler | None:
    return _ACTIVE[-1] if _ACTIVE else None
