"""Per-step metrics, throughput and MFU maths, the JSONL log, and the final result.

MFU = achieved model FLOP/s per device / the device's dense peak for the run's dtype, where the
achieved rate is flops_per_sample (from the model: 6N + 12*L*H*d_head*T per token for the GPT,
PaLM appendix B) x samples per step per device / step time. The peak comes from the hardware-facts
table (rocmkit.platform.specs); unknown devices and CPUs report None ("n/a"), never a guess.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from rocmkit.platform import Platform
from rocmkit.platform.specs import lookup_spec
from rocmkit.results import UNITS, Measurement, RunResult, jsonable

SUITE = "train"
METRICS_FILE = "metrics.jsonl"


@dataclass(kw_only=True)
class StepMetrics:
    """What one optimizer step did; handed to callbacks and written to metrics.jsonl."""

    step: int  # 1-based count of completed optimizer steps
    loss: float
    lr: float
    grad_norm: float | None
    step_time_s: float
    units_per_s: float  # tokens/s or images/s, all ranks together
    units_per_s_per_device: float
    mfu: float | None  # fraction of peak, None when the peak is unknown
    peak_memory_bytes: int | None
    skipped: bool = False  # fp16 overflow: the optimizer step was not applied
    loss_scale: float | None = None
    unit_name: str = "samples"  # what units_per_s counts: tokens or images


@dataclass(kw_only=True)
class TrainResult:
    """The outcome of `train()`."""

    config: dict[str, Any]
    steps_done: int
    losses: list[float]
    final_loss: float | None
    median_step_time_s: float | None
    units_per_s: float | None
    unit_name: str
    mfu: float | None
    peak_memory_bytes: int | None
    num_skipped_steps: int
    run_dir: Path | None
    stopped_by_signal: bool = False
    stop_signal: str | None = None  # SIGTERM or SIGINT (another rank's, when this one got none)
    checkpoint: Path | None = None
    measurements: list[Measurement] = field(default_factory=list)
    run: RunResult | None = None  # the result.json document (environment, config, measurements)


def peak_flops_per_device(platform: Platform, dtype: str, index: int = 0) -> float | None:
    """Dense peak FLOP/s of GPU `index` for `dtype`; None on CPU or for unknown devices.

    "tf32" on a chip without TF32/XF32 (CDNA2, CDNA4, RDNA) is its fp32 peak: fp32 matmuls that
    may use TF32 run at the fp32 rate there.
    """
    if not platform.gpu_available or index >= len(platform.devices):
        return None
    device = platform.devices[index]
    spec = lookup_spec(device.arch, device.name)
    peak_tflops = spec.peak_for(dtype) if spec else None
    if spec and peak_tflops is None and dtype == "tf32":
        peak_tflops = spec.peak_for("fp32")
    return peak_tflops * 1e12 if peak_tflops else None


def mfu(
    flops_per_sample: float | None,
    samples_per_device: int,
    step_time_s: float,
    peak_flops: float | None,
) -> float | None:
    """Model FLOPs utilisation as a fraction (0..1); None when any input is unknown."""
    if not flops_per_sample or not peak_flops or step_time_s <= 0:
        return None
    return flops_per_sample * samples_per_device / step_time_s / peak_flops


class MemoryMeter:
    """Peak memory: the allocator's high-water mark on GPU; on CPU the process's peak RSS
    (the kernel's ru_maxrss where it exists, else the highest RSS psutil has sampled)."""

    def __init__(self, device_type: str) -> None:
        self.device_type = device_type
        self.peak_rss_bytes = 0
        self._process: Any = None
        if device_type == "cuda":
            import torch

            # This run's peak, not the high-water mark of earlier GPU work in the process.
            torch.cuda.reset_peak_memory_stats()
        if device_type == "cpu" and _maxrss_bytes() is None:
            import psutil

            self._process = psutil.Process()

    def sample(self) -> int | None:
        if self.device_type == "cuda":
            import torch

            return int(torch.cuda.max_memory_allocated())
        current = _maxrss_bytes() if self._process is None else self._process.memory_info().rss
        self.peak_rss_bytes = max(self.peak_rss_bytes, int(current or 0))
        return self.peak_rss_bytes


def _maxrss_bytes() -> int | None:
    try:
        import resource
    except ImportError:  # Windows
        return None
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss if sys.platform == "darwin" else maxrss * 1024  # Linux reports KiB


class JsonlLog:
    """metrics.jsonl in the run directory: one JSON object per logged step, appended."""

    def __init__(self, run_dir: Path) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        self.path = run_dir / METRICS_FILE
        self._file: IO[str] = self.path.open("a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        # A NaN loss is what a user greps metrics.jsonl for: null keeps every line valid JSON.
        self._file.write(json.dumps(jsonable(record), allow_nan=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


# The curve result.json carries (report plots): at most this many points of each series.
CURVE_POINTS = 200
CURVE_SERIES = ("loss", "grad_norm", "units_per_s", "loss_scale")


def curve(run_dir: Path, max_points: int = CURVE_POINTS) -> dict[str, list[Any]] | None:
    """The run's logged steps from metrics.jsonl (earlier runs of a resumed run included; a step
    logged twice keeps its last value), evenly thinned to `max_points`, as parallel lists
    `step`, `loss`, `grad_norm`, `units_per_s`, `loss_scale` (None where not logged)."""
    path = run_dir / METRICS_FILE
    if not path.is_file():
        return None
    by_step: dict[int, dict[str, Any]] = {}
    with path.open(encoding="utf-8") as file:
        for line in file:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line cut by a kill
            if isinstance(record, dict) and isinstance(record.get("step"), int):
                by_step[record["step"]] = record
    if not by_step:
        return None
    steps = sorted(by_step)
    stride = max(1, -(-len(steps) // max_points))
    kept = steps[::stride] if steps[-1] in steps[::stride] else [*steps[::stride], steps[-1]]
    series: dict[str, list[Any]] = {"step": kept}
    for name in CURVE_SERIES:
        series[name] = [by_step[step].get(name) for step in kept]
    series["unit_name"] = [by_step[kept[-1]].get("unit_name", "tokens")]
    return series


def step_record(metrics: StepMetrics) -> dict[str, Any]:
    return {"event": "step", **asdict(metrics)}


def summarize(
    *,
    config: dict[str, Any],
    history: list[StepMetrics],
    unit_name: str,
    num_skipped_steps: int,
    run_dir: Path | None,
    world_size: int,
) -> TrainResult:
    """Fold the step history into a TrainResult (the first step, which warms up, is excluded
    from timing when there are others)."""
    timed = history[1:] if len(history) > 1 else history
    median_time = statistics.median(m.step_time_s for m in timed) if timed else None
    median_units = statistics.median(m.units_per_s for m in timed) if timed else None
    mfus = [m.mfu for m in timed if m.mfu is not None]
    peaks = [m.peak_memory_bytes for m in history if m.peak_memory_bytes is not None]
    result = TrainResult(
        config=config,
        steps_done=history[-1].step if history else 0,
        losses=[m.loss for m in history],
        final_loss=history[-1].loss if history else None,
        median_step_time_s=median_time,
        units_per_s=median_units,
        unit_name=unit_name,
        mfu=statistics.median(mfus) if mfus else None,
        peak_memory_bytes=max(peaks) if peaks else None,
        num_skipped_steps=num_skipped_steps,
        run_dir=run_dir,
    )
    result.measurements = _measurements(result, config, world_size)
    return result


def _measurements(
    result: TrainResult, config: dict[str, Any], world_size: int
) -> list[Measurement]:
    model = config.get("model", {})
    name = f"{config.get('preset') or model.get('kind', 'model')} {config['precision']['dtype']}"
    params = {
        "precision": config["precision"]["dtype"],
        "parallel": config["parallel"]["mode"],
        "world_size": world_size,
        "micro_batch": config["train"]["micro_batch"],
        "grad_accum": config["train"]["grad_accum"],
    }
    per_device = result.units_per_s / world_size if result.units_per_s is not None else None
    rows: list[tuple[str, float | None, str]] = [
        (f"{result.unit_name}_per_s", result.units_per_s, f"{result.unit_name}/s"),
        (f"{result.unit_name}_per_s_per_device", per_device, f"{result.unit_name}/s"),
        ("step_time", result.median_step_time_s, "s"),
        ("mfu", None if result.mfu is None else 100.0 * result.mfu, UNITS["mfu"]),
        ("peak_memory", result.peak_memory_bytes, "bytes"),
        ("final_loss", result.final_loss, "nats"),
        ("skipped_steps", float(result.num_skipped_steps), "steps"),
    ]
    return [
        Measurement(
            suite=SUITE,
            name=name,
            metric=metric,
            value=None if value is None else float(value),
            unit=unit,
            params=params,
        )
        for metric, value, unit in rows
    ]


def run_result(
    result: TrainResult, platform: Platform, device_type: str | None = None
) -> RunResult:
    """The result.json document of a run (environment record, config, measurements).

    `device_type` is the device the run used ("cpu" on a GPU machine when pinned to the CPU).
    """
    environment = platform.record()
    if device_type is not None:
        environment["torch_device"] = device_type
    return RunResult(
        kind="train",
        environment=environment,
        config=result.config,
        measurements=result.measurements,
    )
