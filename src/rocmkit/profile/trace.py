"""Run steps under torch.profiler (wait/warmup/active schedule) and export a Chrome trace.

`StepProfiler` wraps a loop someone else drives (rocmkit.train calls `on_step` after every
optimizer step); `profile_steps` drives a plain callable. The summary is in `summary.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmkit.atomic import atomic_path, check_writable_file
from rocmkit.errors import UserError
from rocmkit.profile.summary import TraceSummary, load_trace, summarize_trace

if TYPE_CHECKING:
    import torch.profiler


@dataclass(frozen=True, kw_only=True)
class ProfileSchedule:
    """torch.profiler's schedule: skip `wait` steps, warm up `warmup`, record `active`."""

    wait: int = 1
    warmup: int = 1
    active: int = 3

    def __post_init__(self) -> None:
        if self.wait < 0 or self.warmup < 0 or self.active < 1:
            raise UserError(
                f"profile schedule needs wait >= 0, warmup >= 0, active >= 1 "
                f"(got {self.wait}/{self.warmup}/{self.active})"
            )

    @property
    def num_steps(self) -> int:
        return self.wait + self.warmup + self.active


class StepProfiler:
    """torch.profiler over a loop someone else drives: call `step()` after every step.

    `with StepProfiler(trace_path, schedule, device="cuda") as prof: train(..., callbacks=[prof.on_step])`
    """

    def __init__(
        self, trace_path: str | Path, schedule: ProfileSchedule, *, device: str = "cpu"
    ) -> None:
        self.trace_path = Path(trace_path)
        self.schedule = schedule
        self.device = device
        self.steps_seen = 0
        self._profiler: Any = None
        self._exported = False

    def __enter__(self) -> StepProfiler:
        from torch.profiler import ProfilerActivity, profile, schedule

        check_writable_file(self.trace_path, what="trace file")
        activities = [ProfilerActivity.CPU]
        if self.device == "cuda":
            activities.append(ProfilerActivity.CUDA)  # also HIP kernels on ROCm builds
        sched = self.schedule
        self._profiler = profile(
            activities=activities,
            schedule=schedule(wait=sched.wait, warmup=sched.warmup, active=sched.active, repeat=1),
            on_trace_ready=self._export,
            record_shapes=False,
        )
        self._profiler.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._profiler.__exit__(*exc)

    def step(self) -> None:
        self.steps_seen += 1
        self._profiler.step()

    def on_step(self, _metrics: object) -> None:
        """A rocmkit.train callback (called with StepMetrics after every optimizer step)."""
        self.step()

    def summary(self, *, top_k: int = 10) -> TraceSummary:
        if not self._exported:
            raise UserError(
                f"the profiler recorded nothing: run at least {self.schedule.num_steps} steps "
                f"(wait {self.schedule.wait} + warmup {self.schedule.warmup} + active "
                f"{self.schedule.active}), {self.steps_seen} ran"
            )
        return summarize_trace(load_trace(self.trace_path), top_k=top_k)

    def _export(self, prof: torch.profiler.profile) -> None:
        # torch writes the file itself, by name; a kill mid-export still leaves no torn trace.
        with atomic_path(self.trace_path) as partial:
            prof.export_chrome_trace(str(partial))
        self._exported = True


def profile_steps(
    step: Callable[[int], object],
    *,
    trace_path: str | Path,
    schedule: ProfileSchedule | None = None,
    device: str = "cpu",
    top_k: int = 10,
) -> TraceSummary:
    """Run `step(i)` for the schedule's steps under the profiler; export the trace; summarise."""
    sched = schedule or ProfileSchedule()
    with StepProfiler(trace_path, sched, device=device) as prof:
        for index in range(sched.num_steps):
            step(index)
            if device == "cuda":
                _synchronize()
            prof.step()
    return prof.summary(top_k=top_k)


def _synchronize() -> None:
    import torch

    torch.cuda.synchronize()
