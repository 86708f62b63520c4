"""Memory monitoring: a sampler thread (device allocator or process RSS) and per-category peaks.

On a GPU the timeline comes from torch.cuda.memory_allocated/reserved (HIP builds answer the same
calls) and the allocator history can be exported as a snapshot for pytorch.org/memory_viz. On CPU
torch keeps no allocator statistics, so the timeline is the process RSS (psutil), and the split into
parameters/gradients/optimizer state/activations comes from torch's MemTracker, which follows every
tensor storage through a dispatch mode.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmkit.atomic import atomic_write_json
from rocmkit.errors import UserError
from rocmkit.results import Measurement

if TYPE_CHECKING:
    import torch
    from torch.distributed._tools.mem_tracker import _State

MEMORY_FILE = "memory.json"
SNAPSHOT_FILE = "memory_snapshot.pickle"
MEMORY_SUITE = "memory"

# MemTracker's reference types -> the estimator's categories ("Temp" and "Other" stay separate).
_CATEGORY_OF = {
    "PARAM": "parameters",
    "BUFFER": "buffers",
    "GRAD": "gradients",
    "OPT": "optimizer",
    "ACT": "activations",
    "TEMP": "temporary",
    "OTH": "other",
}


@dataclass(frozen=True, kw_only=True)
class MemorySample:
    time_s: float
    allocated_bytes: int  # device allocator, or RSS on CPU
    reserved_bytes: int | None = None  # device caching allocator; None on CPU


@dataclass(kw_only=True)
class MemoryTimeline:
    """What a MemoryMonitor saw: samples, peaks, and where an allocator snapshot went."""

    device: str  # "cuda" or "cpu"
    source: str  # "torch.cuda.memory_allocated" | "psutil rss"
    samples: list[MemorySample] = field(default_factory=list)
    peak_allocated_bytes: int | None = None
    peak_reserved_bytes: int | None = None
    total_device_bytes: int | None = None
    snapshot_path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "source": self.source,
            "peak_allocated_bytes": self.peak_allocated_bytes,
            "peak_reserved_bytes": self.peak_reserved_bytes,
            "total_device_bytes": self.total_device_bytes,
            "snapshot_path": self.snapshot_path,
            "samples": [[s.time_s, s.allocated_bytes, s.reserved_bytes] for s in self.samples],
        }

    def save(self, path: str | Path) -> Path:
        target = Path(path)
        try:
            atomic_write_json(target, self.to_dict())
        except OSError as exc:
            raise UserError(f"cannot write memory timeline {target}: {exc.strerror}") from None
        return target


Reader = Callable[[], tuple[int, int | None]]


class MemoryMonitor:
    """Sample memory every `interval_s` on a daemon thread while a block of code runs.

    `with MemoryMonitor(device="cuda", record_history=True) as mon: ...; mon.timeline` — `reader`
    replaces the real source in tests.
    """

    def __init__(
        self,
        *,
        device: str = "cpu",
        interval_s: float = 0.05,
        record_history: bool = False,
        reader: Reader | None = None,
    ) -> None:
        if interval_s <= 0:
            raise UserError(f"memory sampling interval must be positive (got {interval_s})")
        self.device = device
        self.interval_s = interval_s
        self.record_history = record_history and device == "cuda"
        self._reader = reader or (_cuda_reader() if device == "cuda" else _rss_reader())
        source = "torch.cuda.memory_allocated" if device == "cuda" else "psutil rss"
        self.timeline = MemoryTimeline(device=device, source=source)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start = 0.0

    def __enter__(self) -> MemoryMonitor:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if self.device == "cuda":
            _cuda_start(self.record_history)
        self._start = time.perf_counter()
        self._sample()
        self._thread = threading.Thread(target=self._run, name="rocmkit-memory", daemon=True)
        self._thread.start()

    def stop(self) -> MemoryTimeline:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._sample()
        line = self.timeline
        line.peak_allocated_bytes = max(s.allocated_bytes for s in line.samples)
        reserved = [s.reserved_bytes for s in line.samples if s.reserved_bytes is not None]
        line.peak_reserved_bytes = max(reserved) if reserved else None
        if self.device == "cuda":
            _cuda_finish(line)
        return line

    def export_snapshot(self, path: str | Path) -> Path | None:
        """Write the allocator history (GPU only; open it at pytorch.org/memory_viz)."""
        if not self.record_history:
            return None
        import torch

        target = Path(path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            torch.cuda.memory._dump_snapshot(str(target))
        except OSError as exc:
            raise UserError(f"cannot write memory snapshot {target}: {exc.strerror}") from None
        finally:
            torch.cuda.memory._record_memory_history(enabled=None)
        self.timeline.snapshot_path = str(target)
        return target

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def _sample(self) -> None:
        allocated, reserved = self._reader()
        elapsed = time.perf_counter() - self._start
        self.timeline.samples.append(
            MemorySample(time_s=elapsed, allocated_bytes=allocated, reserved_bytes=reserved)
        )


def _rss_reader() -> Reader:
    import psutil

    process = psutil.Process()
    return lambda: (int(process.memory_info().rss), None)


def _cuda_reader() -> Reader:
    import torch

    return lambda: (int(torch.cuda.memory_allocated()), int(torch.cuda.memory_reserved()))


def _cuda_start(record_history: bool) -> None:
    import torch

    torch.cuda.reset_peak_memory_stats()
    if record_history:
        torch.cuda.memory._record_memory_history(max_entries=100_000)


def _cuda_finish(line: MemoryTimeline) -> None:
    import torch

    # The allocator's own high-water marks see spikes between two samples; the sampled maxima
    # still count when the monitored code reset those marks itself (bench's train-precision does).
    line.peak_allocated_bytes = max(
        line.peak_allocated_bytes or 0, int(torch.cuda.max_memory_allocated())
    )
    line.peak_reserved_bytes = max(
        line.peak_reserved_bytes or 0, int(torch.cuda.max_memory_reserved())
    )
    line.total_device_bytes = int(
        torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
    )


@contextlib.contextmanager
def monitor_run(out_dir: str | Path, *, device: str) -> Iterator[MemoryMonitor]:
    """Monitor memory while the block runs; then write `memory.json` (atomically) into `out_dir`,
    and on GPU the allocator snapshot beside it. Written even when the block fails (an OOM is
    when the timeline matters most)."""
    out = Path(out_dir)
    monitor = MemoryMonitor(device=device, record_history=device == "cuda")
    monitor.start()
    try:
        yield monitor
    finally:
        try:
            if device == "cuda":
                monitor.export_snapshot(out / SNAPSHOT_FILE)
        finally:
            monitor.stop()
            monitor.timeline.save(out / MEMORY_FILE)


def timeline_measurements(timeline: MemoryTimeline, *, name: str) -> list[Measurement]:
    """The monitor's peaks as result.json measurements (suite "memory", MiB)."""
    params = {"device": timeline.device, "source": timeline.source}
    extra = {"samples": len(timeline.samples), "timeline_file": MEMORY_FILE}
    if timeline.device == "cuda":
        rows = [
            ("peak_allocated", timeline.peak_allocated_bytes),
            ("peak_reserved", timeline.peak_reserved_bytes),
        ]
    else:  # CPU: the whole process's resident set, torch and everything else
        rows = [("peak_rss", timeline.peak_allocated_bytes)]
    return [
        Measurement(
            suite=MEMORY_SUITE,
            name=name,
            metric=metric,
            value=None if value is None else value / 2**20,
            unit="MiB",
            params=params,
            extra={**extra, "peak_bytes": value},
        )
        for metric, value in rows
    ]


@dataclass(frozen=True, kw_only=True)
class CategoryPeaks:
    """Per-category high points of one training step, from MemTracker."""

    device: str
    peak_bytes: dict[str, int]  # category -> its own maximum during the measured step
    at_total_peak_bytes: dict[str, int]  # category -> bytes at the moment of the total peak
    after_step_bytes: dict[str, int]  # category -> bytes left after the step (persistent state)
    total_peak_bytes: int


def _tracker_class() -> type:
    from torch.distributed._tools.mem_tracker import MemTracker

    class _CategoryPeakTracker(MemTracker):
        """MemTracker records the split at the *total* peak; we also want each category's own peak.

        `_update_peak_stats` runs after every operator, so it sees each category's high point.
        """

        def __init__(self) -> None:
            super().__init__()
            self.category_peaks: dict[str, int] = {}

        def _update_peak_stats(self, peak_state: _State) -> None:
            super()._update_peak_stats(peak_state)
            for dev_snap in self._curr_mem_snap.values():
                for key, value in dev_snap.items():
                    name = _category_name(key)
                    self.category_peaks[name] = max(self.category_peaks.get(name, 0), value)

    return _CategoryPeakTracker


def _category_name(key: object) -> str:
    text = str(getattr(key, "name", key))
    return _CATEGORY_OF.get(text, text.lower())


def measure_step_memory(
    step: Callable[[], None],
    *,
    modules: list[torch.nn.Module],
    optimizer: torch.optim.Optimizer,
    warmup_steps: int = 1,
) -> CategoryPeaks:
    """Run `step` (forward, backward, optimizer step, zero_grad) under MemTracker.

    The first `warmup_steps` create the optimizer state; the peaks are those of the next step.
    """
    import torch

    tracker = _tracker_class()()
    tracker.track_external(*modules, optimizer)
    with tracker:
        for _ in range(warmup_steps):
            step()
        tracker.reset_mod_stats()
        tracker.category_peaks.clear()
        step()
        after = tracker.get_tracker_snapshot("current")
    snapshot = tracker.get_tracker_snapshot("peak")
    device, cats = next(iter(snapshot.items())) if snapshot else (torch.device("cpu"), {})
    at_peak = {_category_name(k): int(v) for k, v in cats.items() if _category_name(k) != "total"}
    peaks = {k: v for k, v in tracker.category_peaks.items() if k != "total"}
    left = {_category_name(k): int(v) for d in after.values() for k, v in d.items()}
    left.pop("total", None)
    total = int(tracker.category_peaks.get("total", sum(at_peak.values())))
    return CategoryPeaks(
        device=str(device),
        peak_bytes=peaks,
        at_total_peak_bytes=at_peak,
        after_step_bytes=left,
        total_peak_bytes=total,
    )
