"""`rocmkit bench --burn-in DURATION`: sustained GEMM and a memory pattern test on every visible
device at once (a CPU-only machine counts as one device), every result checked, throughput kept
per time window.

Each device runs, in its own thread until the deadline, alternating: a burst of GEMMs (checked as
in bench.checks: C.x against A.(B.x) in float64) and a memory pattern pass (a fresh integer
pattern written, copied, and the copy compared bit for bit). A device is flagged when
- it errs: a wrong GEMM or pattern (figure WRONG), or its uncorrectable ECC count grew;
- it decays: the median throughput of the last window is under (1 - decay_threshold) of the
  first window's (figure BELOW FLOOR). The default 0.25 leaves room for the normal drop from boost
  to the power limit (an H100 bf16 GEMM: 797 TFLOPS for 20 iterations, 678 for 1,000, -15%);
- it throttles: a thermal or hardware clock slowdown (NVML / amd-smi reasons) was active in more
  than `slowdown_threshold` of the telemetry samples (figure BELOW FLOOR). A power cap is not
  flagged: holding the power limit under a GEMM is what a healthy board does.
Any flag fails the run (exit 1).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rocmkit.bench import burnin_rows
from rocmkit.bench.suites import Suite, register_suite
from rocmkit.errors import UserError
from rocmkit.platform import Platform
from rocmkit.report import SuiteLayout
from rocmkit.results import Measurement

if TYPE_CHECKING:
    import torch

    from rocmkit.bench.sizing import Mode
    from rocmkit.measure.power import PowerSampler

SUITE = "burn-in"  # cli/bench.py's --burn-in adds it by this name

# (device label, iteration, elapsed s, "gemm" | "memory", output) -> None: tests corrupt or stall
FaultHook = Callable[[str, int, float, str, "torch.Tensor"], None]


@dataclass(kw_only=True)
class BurnInConfig:
    """How long and how hard; thresholds that flag a device."""

    duration_s: float = 60.0
    window_s: float | None = None  # None: a fifth of the duration, 0.5 s to 30 s
    gemm_size: int = 4096
    dtype: str = "bf16"
    memory_mib: int = 1024
    decay_threshold: float = 0.25
    slowdown_threshold: float = 0.05  # share of telemetry samples allowed a thermal/hw slowdown
    iteration_s: float = 0.05  # GEMMs per burst are chosen to take about this long

    def __post_init__(self) -> None:
        if self.duration_s <= 0:
            raise UserError(f"burn-in duration_s must be > 0 (got {self.duration_s})")
        for name in ("decay_threshold", "slowdown_threshold"):
            if not 0 <= getattr(self, name) < 1:
                raise UserError(f"burn-in {name} must be in [0, 1) (got {getattr(self, name)})")
        if self.dtype not in ("fp32", "fp16", "bf16"):
            raise UserError(f"burn-in dtype must be fp32, fp16 or bf16 (got {self.dtype!r})")
        if self.gemm_size < 16 or self.memory_mib < 1:
            raise UserError("burn-in gemm_size must be >= 16 and memory_mib >= 1")

    @property
    def windows_s(self) -> float:
        return self.window_s or min(30.0, max(0.5, self.duration_s / 5))


def burn_in_defaults(platform: Platform, mode: Mode) -> dict[str, Any]:
    if platform.gpu_available:
        return {"gemm_size": 8192, "dtype": "bf16", "memory_mib": 1024}
    return {"gemm_size": 256, "dtype": "fp32", "memory_mib": 16}


@dataclass(kw_only=True)
class BurnLog:
    """One test on one device: (end time s, throughput) per iteration and its checks."""

    device: str
    test: str  # "gemm" | "memory"
    unit: str
    points: list[tuple[float, float]] = field(default_factory=list)
    num_checks: int = 0
    num_wrong_checks: int = 0
    max_error: float = 0.0
    first_wrong: dict[str, Any] | None = None


# ---------------------------------------------------------------------------- the work


def _dtype(name: str) -> torch.dtype:
    import torch

    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]


def _sync(device: torch.device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


class _Worker:
    """The loop on one device: GEMM bursts and memory passes alternate until the deadline."""

    def __init__(self, device: torch.device, config: BurnInConfig, fault: FaultHook | None):
        import torch

        from rocmkit.bench.checks import matmul_reference

        self.device, self.config, self.fault = device, config, fault
        self.label = str(device)
        n = config.gemm_size
        gen = torch.Generator(device="cpu").manual_seed(0)
        self.a = torch.randn(n, n, generator=gen).to(device, _dtype(config.dtype))
        self.b = torch.randn(n, n, generator=gen).to(device, _dtype(config.dtype))
        self.c = torch.empty_like(self.a)
        self.reference = matmul_reference(self.a, self.b, config.dtype)
        numel = config.memory_mib * 2**20 // 4
        self.index = torch.arange(numel, device=device, dtype=torch.int32)
        self.src = torch.empty(numel, device=device, dtype=torch.int32)
        self.dst = torch.empty_like(self.src)
        self.gemm = BurnLog(device=self.label, test="gemm", unit="TFLOPS")
        self.memory = BurnLog(device=self.label, test="memory", unit="GB/s")
        self.num_reps = 1
        self.num_copies = 1
        # A CPU is timed in process CPU time: on a shared machine, time the scheduler gives to
        # other processes would read as decay (a CPU that slows its clock still does less work
        # per CPU-second). A GPU is timed on the wall clock after a synchronize.
        self.timer = time.process_time if device.type == "cpu" else time.perf_counter

    def calibrate(self) -> None:
        """Warm up (the first copy faults the pages in); one timed GEMM and one timed copy set
        how many make a burst of ~iteration_s each."""
        self._fill(0)
        self.dst.copy_(self.src)
        start = self.timer()
        self._matmul()
        _sync(self.device)
        one = max(self.timer() - start, 1e-6)
        self.num_reps = max(1, int(self.config.iteration_s / one))
        start = self.timer()
        self.dst.copy_(self.src)
        _sync(self.device)
        one = max(self.timer() - start, 1e-6)
        self.num_copies = max(1, int(self.config.iteration_s / one))

    def _matmul(self) -> None:
        import torch

        torch.matmul(self.a, self.b, out=self.c)

    def run(self, start: float, deadline: float, stop: threading.Event) -> None:
        iteration = 0
        while time.perf_counter() < deadline and not stop.is_set():
            self._gemm_burst(start, iteration)
            self._memory_pass(start, iteration)
            iteration += 1

    def _gemm_burst(self, start: float, iteration: int) -> None:
        from rocmkit.bench.checks import check_matmul_output

        begin = self.timer()
        for _ in range(self.num_reps):
            self._matmul()
        _sync(self.device)
        if self.fault is not None:  # a stalled device is slower: the stall counts
            self.fault(self.label, iteration, time.perf_counter() - start, "gemm", self.c)
        took = max(self.timer() - begin, 1e-9)
        flops = 2.0 * self.config.gemm_size**3 * self.num_reps
        self.gemm.points.append((time.perf_counter() - start, flops / took / 1e12))
        _record(self.gemm, check_matmul_output(self.reference, self.c), iteration)

    def _memory_pass(self, start: float, iteration: int) -> None:
        from rocmkit.bench.checks import check_equal

        # a different pattern every pass (odd multiplier: every bit toggles somewhere)
        seed = (iteration * 0x9E3779B1 + 0x5BD1E995) & 0x7FFFFFFF
        self._fill(seed)
        _sync(self.device)
        begin = self.timer()
        for _ in range(self.num_copies):
            self.dst.copy_(self.src)
        _sync(self.device)
        if self.fault is not None:
            self.fault(self.label, iteration, time.perf_counter() - start, "memory", self.dst)
        took = max(self.timer() - begin, 1e-9)
        bytes_moved = 2 * self.src.numel() * self.src.element_size() * self.num_copies
        self.memory.points.append((time.perf_counter() - start, bytes_moved / took / 1e9))
        # written again, so a cell of either buffer that does not hold its value shows
        self._fill(seed)
        _record(self.memory, check_equal(self.dst, self.src, "copy of a fresh pattern"), iteration)

    def _fill(self, seed: int) -> None:
        self.src.copy_(self.index).mul_(0x2545F491).add_(seed)


def _record(log: BurnLog, check: Any, iteration: int) -> None:
    log.num_checks += 1
    if not check.correct:
        log.num_wrong_checks += 1
        log.max_error = max(log.max_error, check.max_error)
        if log.first_wrong is None:
            log.first_wrong = {"iteration": iteration, **check.extra()}


def burn_devices(platform: Platform) -> list[str]:
    """Every device torch can use here: all GPUs, else the CPU."""
    if not platform.gpu_available:
        return ["cpu"]
    import torch

    return [f"cuda:{i}" for i in range(torch.cuda.device_count())] or ["cuda:0"]


def run_burn_in(
    config: BurnInConfig,
    devices: Sequence[str],
    *,
    fault: FaultHook | None = None,
) -> tuple[list[BurnLog], float, float]:
    """Burn every device at once for `config.duration_s`; the logs, and the start and end times
    on time.monotonic (to pick the telemetry of the stretch)."""
    import torch

    workers = [_Worker(torch.device(d), config, fault) for d in devices]
    for worker in workers:
        worker.calibrate()
    errors: list[BaseException] = []
    stop = threading.Event()
    start_mono, start = time.monotonic(), time.perf_counter()
    deadline = start + config.duration_s

    def work(worker: _Worker) -> None:
        try:
            worker.run(start, deadline, stop)
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)
            stop.set()  # one device failing ends the burn-in of all

    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in workers]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except BaseException:  # Ctrl-C: the workers stop after their current iteration
        stop.set()
        raise
    if errors:
        raise errors[0]
    logs = [log for w in workers for log in (w.gemm, w.memory)]
    return logs, start_mono, time.monotonic()


def windows(points: Sequence[tuple[float, float]], window_s: float) -> list[tuple[float, float]]:
    """(window end s, median throughput) per window of `window_s`; the first point (after the
    warm-up, it can include lazy initialisation) is left out when there are others."""
    kept = list(points[1:]) if len(points) > 1 else list(points)
    grouped: dict[int, list[float]] = {}
    for t, value in kept:
        grouped.setdefault(int(t // window_s), []).append(value)
    return [((k + 1) * window_s, statistics.median(v)) for k, v in sorted(grouped.items())]


def run_burn_in_suite(
    config: BurnInConfig, platform: Platform, sampler: PowerSampler | None = None
) -> list[Measurement]:
    """The registered suite: burn every device, judge, and turn it into rows."""
    from rocmkit.bench.sustained import platform_reader
    from rocmkit.measure.telemetry import TelemetrySampler, active_sampler, sampling

    telemetry = active_sampler()
    own = None
    if telemetry is None:  # called outside `rocmkit bench`: sample for ourselves
        reader, source = platform_reader(platform)
        own = TelemetrySampler(reader, source=source) if reader else None
    with sampling(own):
        logs, start, end = run_burn_in(config, burn_devices(platform))
    telemetry = telemetry or own
    return burnin_rows.rows(config, logs, telemetry, start, end)


BENCH_SUITE = register_suite(
    Suite(
        name=SUITE,
        description="sustained GEMM + memory pattern test on every device, checked throughout",
        run=run_burn_in_suite,
        config_type=BurnInConfig,
        defaults=burn_in_defaults,
        num_figures=lambda config, platform: 0,
        layout=SuiteLayout(
            title="Burn-in: sustained throughput and checks",
            plot="rocmkit.report.plot_burnin:burnin_plot",
        ),
    )
)
