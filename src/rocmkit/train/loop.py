"""The training loop: set up model, parallelism, precision and optimizer; step; checkpoint; log.

One optimizer step = `grad_accum` micro-batches of `micro_batch` samples on each of `world_size`
ranks. Each micro-batch loss is divided by grad_accum so the summed gradients equal the gradient
of the mean loss over the whole global batch (and DDP/FSDP average over ranks on top of that).

The step never waits for the host: batches are made on the device or prefetched into pinned
memory, and the loss, gradient norm and fp16 skip flag stay on the device until a sync point
(every logging.log_every steps, a checkpoint, the last step), where one read brings them all to
the host, NaN/inf is checked and metrics are made (rocmkit.train.window).
"""

from __future__ import annotations

import contextlib
import math
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import torch

from rocmkit.config import to_dict
from rocmkit.errors import UserError
from rocmkit.platform import Platform, detect
from rocmkit.train import checkpoint as ckpt
from rocmkit.train.batches import BatchFeeder
from rocmkit.train.config import TrainConfig, TrainSection, check_world_size
from rocmkit.train.data import build_data
from rocmkit.train.device import device_settings, use_channels_last
from rocmkit.train.failures import count_bad_step, on_stop_signals, oom_advice, stop_notice
from rocmkit.train.metrics import (
    JsonlLog,
    MemoryMeter,
    StepMetrics,
    TrainResult,
    mfu,
    peak_flops_per_device,
    run_result,
    step_record,
    summarize,
)
from rocmkit.train.models import BuiltModel, build_model
from rocmkit.train.parallel import (
    DistEnv,
    agree_on,
    init_distributed,
    on_main_first,
    shutdown,
    sync_context,
    wrap_model,
)
from rocmkit.train.precision import PrecisionPolicy, build_precision, peak_dtype_name
from rocmkit.train.trackers import open_trackers
from rocmkit.train.window import StepRecord, StepWindow

Callback = Callable[[StepMetrics], None]


@dataclass(kw_only=True)
class Session:
    """Everything a running training job holds."""

    config: TrainConfig
    platform: Platform
    env: DistEnv
    device: torch.device
    built: BuiltModel
    model: torch.nn.Module  # wrapped (DDP/FSDP) but not compiled: what state dicts come from
    optimizer: torch.optim.Optimizer
    precision: PrecisionPolicy
    feeder: BatchFeeder
    meter: MemoryMeter
    state: ckpt.TrainingState = field(default_factory=ckpt.TrainingState)
    peak_flops: float | None = None
    signal_received: bool = False  # set by the SIGTERM/SIGINT handler on this rank
    signal_name: str | None = None
    stop_requested: bool = False  # agreed by all ranks at the last sync point
    last_saved_step: int = -1
    start_step: int = 0  # the step this run started from (after a resume)
    consecutive_skips: int = 0
    params: list[torch.nn.Parameter] = field(default_factory=list)  # trainable, for clipping
    # Told at once what a first stop signal will do (the step printer's `stopping`).
    notices: list[Callable[[str], None]] = field(default_factory=list)
    step_time_s: float | None = None  # the last measured step, for the stop estimate
    save_time_s: float = 0.0  # the last checkpoint save

    def __post_init__(self) -> None:
        self.params = [p for p in self.model.parameters() if p.requires_grad]

    def receive_signal(self, name: str) -> None:
        first = not self.signal_received
        self.signal_received, self.signal_name = True, name
        if first and self.env.is_main:
            text = self.stop_notice(name)
            for notify in self.notices:
                notify(text)

    def stop_notice(self, name: str) -> str:
        """Where a stop signal received now ends the run, and about when (see `_sync_due`)."""
        train, every = self.config.train, self.config.checkpoint.every
        last = min(train.steps, train.stop_at_step or train.steps)
        stop = min(self.state.step + 1, last)
        if self.env.world_size > 1:  # the ranks agree at their next sync point
            log_every = self.config.logging.log_every
            while stop < last and stop % log_every and not (every and stop % every == 0):
                stop += 1
        remaining_s = None
        if self.step_time_s is not None:
            remaining_s = self.step_time_s * (stop - self.state.step) + self.save_time_s
        return stop_notice(name, stop_step=stop, total_steps=train.steps, remaining_s=remaining_s)


def lr_at(step: int, train: TrainSection) -> float:
    """Linear warmup to train.lr, then cosine decay to lr * min_lr_ratio at the last step."""
    if step < train.warmup:
        return train.lr * (step + 1) / train.warmup
    min_lr = train.lr * train.min_lr_ratio
    decay_steps = max(1, train.steps - train.warmup)
    progress = min(1.0, (step - train.warmup) / decay_steps)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (train.lr - min_lr)


def train(
    config: TrainConfig,
    platform: Platform | None = None,
    callbacks: Sequence[Callback] = (),
    *,
    handle_signals: bool = True,
) -> TrainResult:
    """Train as `config` says; resume when asked; return the metrics of this run.

    With `handle_signals`, SIGTERM and Ctrl-C end the run cleanly with a checkpoint; a caller
    that owns the signals (a benchmark that must stop as a whole) passes False. The result.json
    document is `result.run`; the loop writes metrics.jsonl and checkpoints but not result.json
    (`rocmkit train` saves it through the driver: `rocmkit.train.command`).
    """
    platform = platform or detect()
    device_type = resolve_device_type(config.train, platform)
    env = init_distributed(config.parallel, device_type)
    try:
        check_world_size(config, env.world_size)
        config.logging.run_dir = agree_on(config.logging.run_dir, env)
        with device_settings(config, device_type):
            session = _setup(config, platform, env, device_type)
            signals = on_stop_signals(session.receive_signal) if handle_signals else None
            with signals or contextlib.nullcontext():
                result = _run(session, callbacks)
    finally:
        shutdown(env)
    return result


def resolve_device_type(train: TrainSection, platform: Platform) -> str:
    """ "cuda" or "cpu" for train.device on this platform; a GPU asked for on a box without one
    is a UserError."""
    if train.device == "cuda" and not platform.gpu_available:
        raise UserError("train.device cuda was asked for but torch sees no GPU (use cpu or auto)")
    if train.device == "auto":
        return platform.torch_device
    return train.device


def _setup(config: TrainConfig, platform: Platform, env: DistEnv, device_type: str) -> Session:
    device = (
        torch.device(device_type, env.local_rank) if device_type == "cuda" else torch.device("cpu")
    )
    _check_compile(config.train, device_type)
    torch.manual_seed(config.train.seed)  # identical initial weights on every rank
    built = build_model(config.model)
    with on_main_first(env):  # rank 0 tokenizes/caches a corpus once, the others reuse it
        data = build_data(config.data, config.model)
    precision = build_precision(config.precision, device_type)
    built.module = precision.prepare_model(built.module).to(device)
    channels_last = use_channels_last(built, config, device_type)
    if channels_last:
        built.module = built.module.to(memory_format=torch.channels_last)
    blocks = checkpoint_blocks(built) if config.train.activation_checkpointing else built.blocks
    model = wrap_model(built.module, blocks, config.parallel, config.precision, device)
    optimizer = build_optimizer(model, config.train, device_type)
    built.module = model
    if config.train.compile:
        built.module = cast(torch.nn.Module, torch.compile(model))
    torch.manual_seed(config.train.seed + env.rank)  # dropout masks differ between ranks
    feeder = BatchFeeder(
        data,
        device=device,
        micro_batch_size=config.train.micro_batch,
        grad_accum=config.train.grad_accum,
        rank=env.rank,
        world_size=env.world_size,
        channels_last=channels_last,
    )
    dtype = peak_dtype_name(config.precision)
    return Session(
        config=config,
        platform=platform,
        env=env,
        device=device,
        built=built,
        model=model,
        optimizer=optimizer,
        precision=precision,
        feeder=feeder,
        meter=MemoryMeter(device.type),
        # A CPU run on a GPU box has no peak: the hardware facts are the GPUs'.
        peak_flops=(
            peak_flops_per_device(platform, dtype, device.index or 0)
            if device.type == "cuda"
            else None
        ),
    )


def _check_compile(train: TrainSection, device_type: str) -> None:
    if not train.compile:
        return
    if not hasattr(torch, "compile"):
        raise UserError("train.compile needs torch.compile (torch >= 2.0)")
    if device_type == "cpu" and not any(shutil.which(cc) for cc in ("c++", "g++", "clang++")):
        raise UserError(
            "train.compile on CPU needs a C++ compiler (install g++) or --train.compile false"
        )


def checkpoint_blocks(built: BuiltModel) -> list[torch.nn.Module]:
    """Wrap every block so its activations are recomputed in backward instead of stored."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

    for index, block in enumerate(list(built.blocks)):
        built.set_block(index, checkpoint_wrapper(block))
    return built.blocks


def build_optimizer(
    model: torch.nn.Module, train: TrainSection, device_type: str
) -> torch.optim.Optimizer:
    """AdamW with decay on matrices only (nanoGPT's split); fused kernel where available."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": train.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    impl = train.optimizer_impl
    if impl == "auto":
        impl = "fused" if device_type == "cuda" else "foreach"
    return torch.optim.AdamW(
        groups,
        lr=train.lr,
        betas=(train.beta1, train.beta2),
        fused=impl == "fused",
        foreach=impl == "foreach",
    )


def _run(session: Session, callbacks: Sequence[Callback]) -> TrainResult:
    config, env = session.config, session.env
    ckpt_dir = config.checkpoint_dir
    _maybe_resume(session, ckpt_dir)
    run_dir = Path(config.logging.run_dir)
    log = JsonlLog(run_dir) if env.is_main else None
    # Metric trackers (TensorBoard, W&B, MLflow) are callbacks: fed at sync points, rank 0 only.
    trackers = open_trackers(
        config.logging.trackers(), run_dir, is_main=env.is_main, config=to_dict(config)
    )
    callbacks = [*callbacks, trackers]
    session.notices = [f for f in (getattr(c, "stopping", None) for c in callbacks) if f]
    window = StepWindow(session.device)
    history: list[StepMetrics] = []
    try:
        last_step = min(config.train.steps, config.train.stop_at_step or config.train.steps)
        while session.state.step < last_step and not session.stop_requested:
            with oom_advice(config.train):
                _train_step(session, window)
            if not _sync_due(session, last_step):
                continue
            for metrics in _drain(session, window):
                history.append(metrics)
                session.step_time_s = metrics.step_time_s
                logged = metrics.step % config.logging.log_every == 0 or metrics.step == last_step
                if log is not None and logged:
                    log.write(step_record(metrics))
                for callback in callbacks:
                    callback(metrics)
            if _checkpoint_due(session):
                _save(session, ckpt_dir)
                window.restart_clock()
    finally:
        session.feeder.close()
        trackers.close()
        if log is not None:
            log.close()
    if config.checkpoint.save_final and session.last_saved_step != session.state.step:
        _save(session, ckpt_dir)
    return _finish(session, history, run_dir)


def _maybe_resume(session: Session, ckpt_dir: Path) -> None:
    if session.env.is_main:
        ckpt.clean_partial(ckpt_dir)
    path = ckpt.resolve_resume(session.config.checkpoint.resume, ckpt_dir)
    if path is None:
        return
    session.state = ckpt.load_checkpoint(
        path,
        model=session.model,
        optimizer=session.optimizer,
        precision=session.precision,
        env=session.env,
        config=to_dict(session.config),
    )
    session.last_saved_step = session.state.step
    session.start_step = session.state.step


def _sync_due(session: Session, last_step: int) -> bool:
    """Steps at which the host reads the device: log steps, checkpoints, the end, a signal.

    Every rank decides from the same step number, except on a signal, which a single process acts
    on at once; several ranks agree on it at their next sync point (within log_every steps).
    """
    step, config = session.state.step, session.config
    every = config.checkpoint.every
    return (
        step == session.start_step + 1  # the first step: an early estimate of the run's length
        or step % config.logging.log_every == 0
        or step >= last_step
        or bool(every and step % every == 0)
        or (session.signal_received and session.env.world_size == 1)
    )


def _checkpoint_due(session: Session) -> bool:
    every = session.config.checkpoint.every
    return session.stop_requested or bool(every and session.state.step % every == 0)


def _save(session: Session, ckpt_dir: Path) -> None:
    started = time.perf_counter()
    ckpt.save_checkpoint(
        ckpt_dir,
        model=session.model,
        optimizer=session.optimizer,
        precision=session.precision,
        state=session.state,
        env=session.env,
        config=to_dict(session.config),
        keep=session.config.checkpoint.keep,
    )
    session.last_saved_step = session.state.step
    session.save_time_s = time.perf_counter() - started


def _train_step(session: Session, window: StepWindow) -> None:
    """Forward/backward over the micro-batches, then clip and step (or skip, under fp16).

    Nothing here waits for the device: the loss, the grad norm and the fp16 skip flag stay
    device tensors in `window` until the next sync point (`_drain`).
    """
    config, precision = session.config, session.precision
    train, step = config.train, session.state.step
    lr = lr_at(step, train)
    for group in session.optimizer.param_groups:
        group["lr"] = lr
    total = torch.zeros((), device=session.device)
    for micro_step in range(train.grad_accum):
        batch = session.feeder.get(step, micro_step)
        with sync_context(session.model, sync=micro_step == train.grad_accum - 1):
            with precision.autocast():
                loss = session.built.loss(batch) / train.grad_accum
            precision.backward(loss)
        total += loss.detach()
    precision.unscale(session.optimizer)
    grad_norm = _clip(session)
    skipped = precision.step(session.optimizer)
    session.optimizer.zero_grad(set_to_none=True)
    session.state.step += 1
    window.add(
        step=session.state.step,
        lr=lr,
        loss=total,
        grad_norm=grad_norm,
        skipped=skipped,
        loss_scale=precision.scale_tensor(),
    )


def _drain(session: Session, window: StepWindow) -> list[StepMetrics]:
    """Read the steps since the last sync point (one host read), check them, make their metrics."""
    signal_flag = torch.tensor([float(session.signal_received)])
    values = window.read(session.env, signal_flag)
    session.stop_requested = values.extra[0] > 0
    peak_memory = session.meter.sample()
    metrics: list[StepMetrics] = []
    for record in values.steps:
        _check_finite(session, record)
        session.state.num_skipped_steps += int(record.skipped)
        metrics.append(_step_metrics(session, record, peak_memory))
    return metrics


def _check_finite(session: Session, record: StepRecord) -> None:
    """NaN/inf loss: stop (exit 3); under fp16 the scaler skips the step, stop only if it persists."""
    session.consecutive_skips = count_bad_step(
        not math.isfinite(record.loss),
        record.loss,
        step=record.step,
        consecutive_skips=session.consecutive_skips,
        uses_loss_scaling=session.precision.uses_loss_scaling,
        max_consecutive_skips=session.config.precision.max_consecutive_skips,
        last_saved_step=session.last_saved_step,
    )


def _clip(session: Session) -> torch.Tensor:
    # clip_grad_norm_ skips parameters without gradients; with grad_clip 0 it only measures.
    # It returns the norm as a device tensor without waiting (error_if_nonfinite is off).
    max_norm = session.config.train.grad_clip or math.inf
    norm = torch.nn.utils.clip_grad_norm_(session.params, max_norm)
    full = getattr(norm, "full_tensor", None)  # FSDP2: a DTensor holding the global norm
    return full() if full is not None else norm


def _step_metrics(session: Session, record: StepRecord, peak_memory: int | None) -> StepMetrics:
    train, built = session.config.train, session.built
    samples_per_device = train.micro_batch * train.grad_accum
    step_time_s = max(record.step_time_s, 1e-9)
    per_device = samples_per_device * built.units_per_sample / step_time_s
    return StepMetrics(
        step=record.step,
        loss=record.loss,
        lr=record.lr,
        grad_norm=record.grad_norm if math.isfinite(record.grad_norm) else None,
        step_time_s=step_time_s,
        units_per_s=per_device * session.env.world_size,
        units_per_s_per_device=per_device,
        mfu=mfu(built.flops_per_sample, samples_per_device, step_time_s, session.peak_flops),
        peak_memory_bytes=peak_memory,
        skipped=record.skipped,
        loss_scale=record.loss_scale,
        unit_name=built.unit_name,
    )


def _finish(session: Session, history: list[StepMetrics], run_dir: Path) -> TrainResult:
    config_dict = to_dict(session.config)
    result = summarize(
        config=config_dict,
        history=history,
        unit_name=session.built.unit_name,
        num_skipped_steps=session.state.num_skipped_steps,
        run_dir=run_dir,
        world_size=session.env.world_size,
    )
    result.steps_done = session.state.step
    result.stopped_by_signal = session.stop_requested
    result.stop_signal = session.signal_name or ("SIGTERM" if session.stop_requested else None)
    if session.last_saved_step >= 0:
        result.checkpoint = session.config.checkpoint_dir / ckpt.checkpoint_name(
            session.last_saved_step
        )
    result.run = run_result(result, session.platform, session.device.type)
    return result
