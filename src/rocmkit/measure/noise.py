"""CPU measurement on a shared machine: free cores, torch threads, contention and noise flags.

On a 2-core machine another process taking one core turns a 2-thread GEMM from ~85 into ~2 GFLOPS:
OpenMP's default wait policy spins, so each parallel region waits for the descheduled thread.
Measured on the 2-core shared Linux CPU (no GPU), 256^3 fp32 matmul, one other process busy:
2 threads spinning 1.4 GFLOPS, 2 threads with OMP_WAIT_POLICY=PASSIVE 81, 1 thread 88.
So a CPU run uses `OMP_WAIT_POLICY=PASSIVE` (set before torch starts its pool), as many torch
threads as there are free cores, and every timed figure records how much CPU other processes used
while it was measured. A figure whose samples scatter or whose cores were taken is re-measured once
and, if still unsteady, flagged: reports show the flag and refuse to present its ratios as facts.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# The figure is the median, so a few preempted samples (a huge CV, e.g. 190% over 50 samples of
# 0.3 ms) do not move it; what makes a median unsteady is a wide middle half of the samples. CV still
# decides when there are too few samples for quartiles to mean anything.
SPREAD_LIMIT = 0.25  # (q75 - q25) / median
CV_LIMIT = 0.25  # stdev / mean, used below MIN_QUARTILE_SAMPLES
MIN_QUARTILE_SAMPLES = 5
# Contended: other processes needed at least half a core the run wanted, and the run got less than
# this share of the CPU time its threads asked for.
CONTENTION_CORES = 0.5
MIN_CPU_SHARE = 0.8
# Many short samples with a tight middle half kept their median through the load (the scheduler
# preempts a few whole samples, it does not slow them all); few or scattered samples did not.
TRUSTED_SAMPLES = 10
TRUSTED_SPREAD = 0.10
PASSIVE_NOTE = "OMP_WAIT_POLICY=PASSIVE: idle OpenMP threads sleep instead of spinning"


@dataclass(frozen=True, kw_only=True)
class CpuSnapshot:
    """Monotonic time, CPU-seconds the whole machine was busy, and CPU-seconds of this process."""

    wall_s: float
    busy_s: float
    own_s: float


def snapshot() -> CpuSnapshot:
    """Read the machine's and this process's CPU times now (psutil; /proc/stat on Linux)."""
    import psutil

    total = psutil.cpu_times()
    # steal is time the hypervisor gave our vCPU to someone else: contention as well.
    busy = sum(total) - total.idle - getattr(total, "iowait", 0.0)
    own = psutil.Process().cpu_times()
    return CpuSnapshot(wall_s=time.monotonic(), busy_s=busy, own_s=own.user + own.system)


def other_cores(start: CpuSnapshot, end: CpuSnapshot) -> float | None:
    """Average number of cores other processes kept busy between two snapshots."""
    wall = end.wall_s - start.wall_s
    if wall <= 0:
        return None
    other = (end.busy_s - start.busy_s) - (end.own_s - start.own_s)
    return max(0.0, other / wall)


def num_cpus() -> int:
    """CPUs this process may run on (affinity and cgroup-pinned sets included)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def measure_free_cores(seconds: float = 0.3) -> tuple[float, float]:
    """(free cores, cores other processes used) over a short idle look at the machine."""
    start = snapshot()
    time.sleep(seconds)
    used = other_cores(start, snapshot()) or 0.0
    return max(0.0, num_cpus() - used), used


def threads_for(free_cores: float, cpus: int) -> int:
    """Torch threads for a CPU run: the free cores, rounded, at least 1, at most the CPUs."""
    return max(1, min(cpus, math.floor(free_cores + 0.5)))


def use_passive_wait_policy() -> bool:
    """Ask OpenMP to sleep rather than spin; only effective before torch is imported.

    Returns whether the policy is (or will be) passive. A value the user set is kept.
    """
    import sys

    if "OMP_WAIT_POLICY" not in os.environ and "torch" not in sys.modules:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return os.environ.get("OMP_WAIT_POLICY", "").upper() == "PASSIVE"


@dataclass(frozen=True, kw_only=True)
class Noise:
    """What the shared machine did to one figure while it was measured."""

    median: float
    iqr: float
    cv: float
    num_samples: int
    other_cores: float | None  # cores other processes kept busy
    own_cores: float | None  # cores this process got
    threads: int  # CPU threads the run used (torch's pool on CPU)
    cpus: int

    def reasons(self, *, on_cpu: bool) -> list[str]:
        """Why this figure cannot be trusted; empty when it can."""
        found = []
        spread = self.iqr / self.median if self.median > 0 else 0.0
        if self.num_samples >= MIN_QUARTILE_SAMPLES and spread > SPREAD_LIMIT:
            found.append(
                f"middle half of {self.num_samples} samples spans {100 * spread:.0f}% of the "
                f"median (CV {100 * self.cv:.0f}%)"
            )
        elif 3 <= self.num_samples < MIN_QUARTILE_SAMPLES and self.cv > CV_LIMIT:
            found.append(f"samples vary {100 * self.cv:.0f}% (CV over {self.num_samples})")
        shielded = self.num_samples >= TRUSTED_SAMPLES and spread <= TRUSTED_SPREAD
        if on_cpu and self.contended() and not shielded:
            found.append(
                f"other processes used {self.other_cores:.1f} of {self.cpus} cores; "
                f"its {self.threads} thread(s) got {self.own_cores:.1f}"
            )
        return found

    def contended(self) -> bool:
        if self.other_cores is None or self.own_cores is None:
            return False
        wanted_from_others = self.other_cores + self.threads - self.cpus
        starved = self.own_cores < MIN_CPU_SHARE * self.threads
        return wanted_from_others >= CONTENTION_CORES and starved


def own_cores(start: CpuSnapshot, end: CpuSnapshot) -> float | None:
    """Average number of cores this process used between two snapshots."""
    wall = end.wall_s - start.wall_s
    return (end.own_s - start.own_s) / wall if wall > 0 else None


def prepare_cpu(
    threads: int | None,
    *,
    on_cpu: bool,
    on_note: Callable[[str], None] | None = None,
    flag: str = "bench.threads",
) -> dict[str, Any]:
    """Look at the machine's load before a suite; on CPU, use as many torch threads as cores are
    free (`threads` or OMP_NUM_THREADS win). Returns what it saw and chose, for result.json."""
    import torch

    free, used = measure_free_cores()
    record: dict[str, Any] = {
        "loadavg_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "other_cores_before": round(used, 2),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default (spin)"),
    }
    if not on_cpu:
        return record
    cpus = num_cpus()
    if threads is not None:
        why = flag
    elif os.environ.get("OMP_NUM_THREADS"):
        threads, why = torch.get_num_threads(), "OMP_NUM_THREADS"
    else:
        threads, why = threads_for(free, cpus), f"{free:.1f} of {cpus} cores free"
    torch.set_num_threads(threads)
    record.update(threads=threads, threads_reason=why)
    if on_note is not None and used >= CONTENTION_CORES:
        on_note(f"other processes are using {used:.1f} of {cpus} cores: {threads} torch thread(s)")
    return record
