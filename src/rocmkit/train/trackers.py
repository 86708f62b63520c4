"""Metric trackers: TensorBoard, Weights & Biases and MLflow, fed at the loop's sync points.

The loop hands every `StepMetrics` to its callbacks once the StepWindow has read the steps since
the last sync point, so trackers see host floats only and add no device reads to a step. Only the
main process (rank 0) logs. Everything stays on this machine unless the user configured the
library otherwise: TensorBoard writes `RUN_DIR/tensorboard/`, W&B runs offline (WANDB_MODE
overrides), MLflow writes a file store in `RUN_DIR/mlruns` (MLFLOW_TRACKING_URI overrides).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from rocmkit.config import flatten_dotted
from rocmkit.errors import UserError

if TYPE_CHECKING:
    from rocmkit.train.metrics import StepMetrics

WandbMode = Literal["online", "offline", "disabled", "shared"]
WANDB_MODES: tuple[WandbMode, ...] = ("online", "offline", "disabled", "shared")

__all__ = ["MetricTrackers", "Tracker", "check_installed", "open_trackers", "tracker_scalars"]


class Tracker(Protocol):
    """One destination for scalars; `log` is called at sync points only."""

    def log(self, step: int, scalars: dict[str, float]) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class _Backend:
    package: str  # the import that must succeed
    extra: str  # pip install 'rocmkit[extra]'
    open: Callable[[Path, dict[str, Any]], Tracker]


def tracker_scalars(metrics: StepMetrics) -> dict[str, float]:
    """The scalars every tracker logs for one step, named as in TensorBoard (`train/...`)."""
    scalars = {
        "train/loss": metrics.loss,
        "train/lr": metrics.lr,
        "train/step_time_s": metrics.step_time_s,
        f"train/throughput_{metrics.unit_name}_per_s": metrics.units_per_s,
        "train/skipped": float(metrics.skipped),
    }
    if metrics.grad_norm is not None:
        scalars["train/grad_norm"] = metrics.grad_norm
    if metrics.mfu is not None:
        # StepMetrics holds a fraction; results and reports show mfu in percent (one unit).
        scalars["train/mfu_pct"] = 100.0 * metrics.mfu
    if metrics.loss_scale is not None:
        scalars["train/loss_scale"] = metrics.loss_scale
    return scalars


class _TensorBoard:
    def __init__(self, run_dir: Path, config: dict[str, Any]) -> None:
        del config
        from tensorboard.compat.proto.summary_pb2 import Summary
        from torch.utils.tensorboard import SummaryWriter

        self.summary = Summary
        self.writer = SummaryWriter(log_dir=str(run_dir / "tensorboard"))

    def log(self, step: int, scalars: dict[str, float]) -> None:
        # One Summary holding all of a step's scalars: about 2.4x less host time than one
        # add_scalar per value (benchmarks/tracker_overhead.py), and the GPU idles meanwhile.
        values = [self.summary.Value(tag=tag, simple_value=v) for tag, v in scalars.items()]
        file_writer = self.writer.file_writer
        assert file_writer is not None  # SummaryWriter opens it in __init__
        file_writer.add_summary(self.summary(value=values), global_step=step)
        file_writer.flush()  # ~10 us: TensorBoard shows the step now, not in 2 minutes

    def close(self) -> None:
        self.writer.close()  # flushes the event file


class _Wandb:
    def __init__(self, run_dir: Path, config: dict[str, Any]) -> None:
        import wandb

        mode = os.environ.get("WANDB_MODE", "offline")  # nothing leaves the machine unasked
        if mode not in WANDB_MODES:
            raise UserError(f"WANDB_MODE={mode!r}: use one of {', '.join(WANDB_MODES)}")
        self.run = wandb.init(
            project=os.environ.get("WANDB_PROJECT", "rocmkit"),
            dir=str(run_dir),
            mode=cast(WandbMode, mode),
            config=config,
        )

    def log(self, step: int, scalars: dict[str, float]) -> None:
        self.run.log(scalars, step=step)

    def close(self) -> None:
        self.run.finish()


class _Mlflow:
    def __init__(self, run_dir: Path, config: dict[str, Any]) -> None:
        import mlflow

        self.mlflow = mlflow
        uri = os.environ.get("MLFLOW_TRACKING_URI") or (run_dir / "mlruns").resolve().as_uri()
        mlflow.set_tracking_uri(uri)
        mlflow.set_experiment(os.environ.get("MLFLOW_EXPERIMENT_NAME", "rocmkit"))
        mlflow.start_run()
        mlflow.log_params({k: str(v) for k, v in flatten_dotted(config).items()})

    def log(self, step: int, scalars: dict[str, float]) -> None:
        self.mlflow.log_metrics(scalars, step=step)

    def close(self) -> None:
        self.mlflow.end_run()


_BACKENDS: dict[str, _Backend] = {
    "tensorboard": _Backend("tensorboard", "tensorboard", _TensorBoard),
    "wandb": _Backend("wandb", "wandb", _Wandb),
    "mlflow": _Backend("mlflow", "mlflow", _Mlflow),
}


def check_installed(enabled: dict[str, bool]) -> None:
    """UserError naming the install when a tracker switched on has no library here."""
    for name, on in enabled.items():
        backend = _BACKENDS[name]
        if on and importlib.util.find_spec(backend.package) is None:
            raise UserError(
                f"logging.{name} needs the {backend.package} package: "
                f"pip install 'rocmkit[{backend.extra}]'"
            )


class MetricTrackers:
    """The trackers of one run, used as a training callback: `trackers(metrics)`."""

    def __init__(self, trackers: list[Tracker]) -> None:
        self.trackers = trackers

    def __call__(self, metrics: StepMetrics) -> None:
        if not self.trackers:
            return
        scalars = tracker_scalars(metrics)
        for tracker in self.trackers:
            tracker.log(metrics.step, scalars)

    def close(self) -> None:
        for tracker in self.trackers:
            tracker.close()
        self.trackers = []


def open_trackers(
    enabled: dict[str, bool], run_dir: Path, *, is_main: bool, config: dict[str, Any]
) -> MetricTrackers:
    """Open the trackers switched on in `enabled` ({"tensorboard": True, ...}); none off rank 0."""
    if not is_main:
        return MetricTrackers([])
    check_installed(enabled)
    return MetricTrackers(
        [_BACKENDS[name].open(run_dir, config) for name, on in enabled.items() if on]
    )
