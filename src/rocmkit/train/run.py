"""`rocmkit train` as a pipeline step: choose the run directory, train (optionally under the
memory monitor), and save the one result.json, with the monitored peak in it.

The command line is a thin layer over `choose_run_dir` and `run`; the same works from Python:

    config = load_train_config(preset="gpt-tiny")
    config.logging.run_dir = str(choose_run_dir(None, resume=None).path)
    done = run(config, detect(), monitor_memory=True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmkit import runs
from rocmkit.config import load_toml

if TYPE_CHECKING:
    from rocmkit.measure.memory import MemoryTimeline
    from rocmkit.platform import Platform
    from rocmkit.results import RunResult
    from rocmkit.train.config import TrainConfig
    from rocmkit.train.metrics import StepMetrics, TrainResult

COMMAND = "train"
Trainer = Callable[..., "TrainResult"]  # rocmkit.train.train or rocmkit.jaxtrain.train


@dataclass(frozen=True, kw_only=True)
class RunDir:
    """Where a run writes, and what to tell the user about that choice (None: nothing)."""

    path: Path
    note: str | None = None


def configured_run_dir(config_path: str | None, overrides: Mapping[str, Any]) -> str | None:
    """`logging.run_dir` when the user set it: a dotted override, else the --config file."""
    if "logging.run_dir" in overrides:
        return str(overrides["logging.run_dir"])
    if config_path is None:
        return None
    value = load_toml(config_path).get("logging", {}).get("run_dir")
    return None if value is None else str(value)


def choose_run_dir(out: str | None, *, resume: str | None, root: Path = runs.RUNS_ROOT) -> RunDir:
    """The run directory: `out` when given; else with `resume` "auto" the newest
    `runs/train-*` run (to continue it); else a new `runs/train-<UTC stamp>`."""
    if out is not None:
        return RunDir(path=Path(out))
    if resume != "auto":
        return RunDir(path=runs.default_out(COMMAND, root=root))
    latest = runs.latest_run(COMMAND, root=root)
    if latest is not None:
        return RunDir(path=latest, note=f"--resume auto: continuing the newest run, {latest}")
    fresh = runs.default_out(COMMAND, root=root)
    note = f"--resume auto: no earlier run in {root}/{COMMAND}-*; starting fresh in {fresh}"
    return RunDir(path=fresh, note=note)


@dataclass(kw_only=True)
class TrainRun:
    """A finished `rocmkit train`: the loop's metrics, the saved document, the memory timeline."""

    result: TrainResult
    record: RunResult
    memory: MemoryTimeline | None = None


def memory_device(config: TrainConfig, platform: Platform) -> str:
    """What the memory monitor watches: the GPU allocator when training runs on the GPU."""
    return "cuda" if config.train.device != "cpu" and platform.gpu_available else "cpu"


def run(
    config: TrainConfig,
    platform: Platform,
    *,
    trainer: Trainer | None = None,
    callbacks: Sequence[Callable[[StepMetrics], None]] = (),
    monitor_memory: bool = False,
) -> TrainRun:
    """Train `config` into `config.logging.run_dir` and save result.json once (rank 0), with
    the monitored memory peak in it when `monitor_memory`."""
    if trainer is None:
        from rocmkit.train.loop import train as torch_train

        trainer = torch_train
    out = Path(config.logging.run_dir)
    main = runs.is_main_process()
    if main:
        runs.prepare_out(out)  # an unwritable directory fails now, not after the training
    device = memory_device(config, platform)
    with runs.memory_monitoring(monitor_memory and main, out, device=device) as monitor:
        result = trainer(config, platform=platform, callbacks=callbacks, save_result=False)
    record = result.run
    assert record is not None, "the training loop returns its result document"
    name = f"{config.preset or config.model.kind} {config.precision.dtype}"
    runs.add_memory(record, monitor, name=name)
    if main:
        runs.save(record, out)
    return TrainRun(
        result=result, record=record, memory=monitor.timeline if monitor is not None else None
    )
