"""`train(config)` for the JAX backend: the same TrainConfig, data, metrics and result.json as
rocmkit.train, with a Flax NNX GPT, one jitted step and data parallelism over local devices.

Data parallel: a 1-D `jax.sharding.Mesh` over the devices used ("data" axis); the state is
replicated, each micro-batch of micro_batch x num_devices samples is split on its sample axis.
Device d gets exactly the samples torch's DDP rank d would get (rocmkit.train.data numbering),
so a JAX run on D devices and a torch run on D ranks see the same tokens in the same steps.

The host never waits for a step it has just launched: synthetic batches are made inside the step
(rocmkit.jaxtrain.data), file batches are built and sent while the device works, and the steps'
scalars stay on the device until a sync point (the first step, every logging.log_every steps, a
checkpoint, the last step, a stop signal), where one read brings them all to the host, NaN/inf
is checked and their metrics are made, as in rocmkit.train.loop.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from rocmkit.config import to_dict
from rocmkit.errors import UserError, warn_once
from rocmkit.jaxtrain import checkpoint as ckpt
from rocmkit.jaxtrain.bench import XLA_MEMORY_METRIC, XLA_MEMORY_SOURCE
from rocmkit.jaxtrain.data import DeviceTokens, device_tokens
from rocmkit.jaxtrain.measure import compiled_peak_bytes, jax_environment, peak_memory_bytes
from rocmkit.jaxtrain.model import GPT
from rocmkit.jaxtrain.precision import Policy, build_policy
from rocmkit.jaxtrain.step import init_state, make_optimizer, make_train_step
from rocmkit.platform import Platform, detect
from rocmkit.results import Measurement, RunResult
from rocmkit.train.config import TrainConfig, check_world_size, env_world_size
from rocmkit.train.data import DataSource, build_data
from rocmkit.train.failures import count_bad_step, on_stop_signals
from rocmkit.train.loop import lr_at
from rocmkit.train.metrics import (
    JsonlLog,
    MemoryMeter,
    StepMetrics,
    TrainResult,
    mfu,
    peak_flops_per_device,
    step_record,
    summarize,
)
from rocmkit.train.models.gpt import gpt_flops_per_token
from rocmkit.train.precision import peak_dtype_name

__all__ = ["BACKEND", "Session", "select_devices", "setup", "train"]

BACKEND = "jax"
Callback = Callable[[StepMetrics], None]


@dataclass(kw_only=True)
class Session:
    """Everything a running JAX training job holds."""

    config: TrainConfig
    platform: Platform
    devices: list[Any]
    policy: Policy
    data: DataSource
    state: dict[str, Any]
    step_fn: Any  # the compiled step: (state, batch, lr) -> (state, metrics)
    batch_sharding: NamedSharding
    make_batch: DeviceTokens | None  # synthetic data: the step makes its own batch (batch=None)
    num_params: int
    flops_per_sample: float
    peak_flops: float | None
    checkpoints: ckpt.Checkpoints
    step_memory_bytes: int | None = None  # XLA's memory analysis of the compiled step
    last_saved_step: int = -1
    consecutive_skips: int = 0
    signal_received: bool = False
    stop_signal: str | None = None  # SIGTERM or SIGINT: checkpoint after this step and stop
    history: list[StepMetrics] = field(default_factory=list)
    host_step: int = 0  # state["step"] as the host counts it: reading the device would wait
    start_step: int = 0

    def receive_signal(self, name: str) -> None:
        self.signal_received, self.stop_signal = True, name

    @property
    def step(self) -> int:
        return self.host_step

    @property
    def num_devices(self) -> int:
        return len(self.devices)


def train(
    config: TrainConfig,
    platform: Platform | None = None,
    callbacks: Sequence[Callback] = (),
    *,
    handle_signals: bool = True,
) -> TrainResult:
    """Train the GPT of `config` with JAX; resume when asked; return this run's metrics.

    `handle_signals`: SIGTERM/Ctrl-C end the run with a checkpoint (False: the caller's).
    The result.json document is `result.run`; the driver saves it, not the loop."""
    session = setup(config, platform or detect())
    try:
        signals = on_stop_signals(session.receive_signal) if handle_signals else None
        # XLA multiplies fp32 in TF32 on GPUs by default, as torch does under train.device
        precision = "highest" if config.precision.strict_fp32 else None
        with signals or contextlib.nullcontext(), jax.default_matmul_precision(precision):
            result = _run(session, callbacks)
    finally:
        session.checkpoints.close()
    return result


def check_config(config: TrainConfig) -> None:
    """Refuse settings the JAX backend cannot honour; warn once for those it ignores."""
    if config.model.kind != "gpt":
        raise UserError(
            f"--backend jax trains the GPT models only (model.kind gpt, e.g. --preset gpt-tiny); "
            f"got model.kind {config.model.kind}: use --backend torch"
        )
    if config.model.dropout > 0:
        raise UserError("--backend jax has no dropout yet: set --model.dropout 0")
    if config.parallel.mode == "fsdp":
        raise UserError(
            "--backend jax is data parallel only: use --parallel ddp (all local devices) or none"
        )
    if env_world_size() > 1:
        raise UserError(
            "--backend jax runs one process over this machine's devices: start it without "
            "torchrun and use --parallel ddp"
        )
    if config.train.compile:
        warn_once("train.compile has no effect with --backend jax (the step is always jitted)")
    if config.precision.param_dtype is not None:
        warn_once("precision.param_dtype has no effect with --backend jax (fp32 master weights)")


def select_devices(config: TrainConfig) -> list[Any]:
    """The devices to train on: one, or (parallel.mode ddp) all local devices of the backend."""
    if config.train.device == "cpu":
        devices = jax.local_devices(backend="cpu")
    else:
        devices = jax.local_devices()
        if config.train.device == "cuda" and devices[0].platform == "cpu":
            raise UserError(
                "train.device cuda was asked for but JAX sees no GPU: install the JAX ROCm or "
                "CUDA plugin (see `rocmkit doctor`) or use --train.device cpu"
            )
    return list(devices) if config.parallel.mode == "ddp" else [devices[0]]


def setup(config: TrainConfig, platform: Platform) -> Session:
    """Build model, state, compiled step and data; restore a checkpoint when asked."""
    check_config(config)
    devices = select_devices(config)
    check_world_size(config, len(devices))
    policy = build_policy(config.precision)
    mesh = Mesh(np.array(devices), ("data",))
    replicated = NamedSharding(mesh, PartitionSpec())
    graphdef, params = init_model(config, policy, replicated, devices[0].platform)
    optimizer = make_optimizer(config.train)
    state = jax.device_put(init_state(params, optimizer, policy), replicated)
    num_params = sum(int(leaf.size) for leaf in jax.tree.leaves(params))
    data = build_data(config.data, config.model)
    batch_sharding = NamedSharding(mesh, PartitionSpec(None, "data"))
    make_batch = device_tokens(
        data,
        micro_batch_size=config.train.micro_batch * len(devices),
        grad_accum=config.train.grad_accum,
    )
    session = Session(
        config=config,
        platform=platform,
        devices=devices,
        policy=policy,
        data=data,
        state=state,
        step_fn=None,
        batch_sharding=batch_sharding,
        make_batch=make_batch,
        num_params=num_params,
        flops_per_sample=gpt_flops_per_token(config.model, num_params) * config.model.seq_len,
        peak_flops=_peak_flops(platform, devices, peak_dtype_name(config.precision)),
        checkpoints=ckpt.Checkpoints(
            config.checkpoint_dir / ckpt.SUBDIR, keep=config.checkpoint.keep
        ),
    )
    jitted = make_train_step(
        graphdef,
        optimizer,
        policy,
        grad_clip=config.train.grad_clip,
        replicated=replicated,
        make_batch=make_batch,
        batch_sharding=batch_sharding,
    )
    lr = np.float32(config.train.lr)
    session.step_fn = jitted.lower(session.state, step_input(session, 0), lr).compile()
    session.step_memory_bytes = compiled_peak_bytes(session.step_fn)
    _maybe_resume(session)
    return session


def init_model(
    config: TrainConfig, policy: Policy, sharding: NamedSharding, platform_name: str
) -> tuple[Any, Any]:
    """(graphdef, fp32 parameters) of the GPT, seeded by train.seed, made on the devices.

    Initialising under one jit compiles one program instead of one per parameter (seconds on
    a CPU) and writes the weights straight into their sharding.
    """
    fused_attention = not (policy.name == "fp16" and platform_name == "cpu")

    def build() -> GPT:
        return GPT(
            config.model,
            dtype=policy.compute_dtype,
            remat=config.train.activation_checkpointing,
            fused_attention=fused_attention,
            rngs=nnx.Rngs(config.train.seed),
        )

    graphdef = nnx.graphdef(nnx.eval_shape(build))
    params = jax.jit(lambda: nnx.state(build()), out_shardings=sharding)()
    return graphdef, params


def _peak_flops(platform: Platform, devices: list[Any], dtype: str) -> float | None:
    # The hardware facts are found through torch's view of the GPUs; a CPU run has no peak.
    if devices[0].platform == "cpu":
        return None
    return peak_flops_per_device(platform, dtype, 0)


def host_batch(session: Session, step: int) -> dict[str, np.ndarray]:
    """Step `step`'s tokens, [grad_accum, micro_batch x num_devices, seq_len] int32."""
    train = session.config.train
    micro = [
        session.data.get_batch(
            step=step,
            micro_step=i,
            micro_batch_size=train.micro_batch * session.num_devices,
            grad_accum=train.grad_accum,
            rank=0,
            world_size=1,
        )
        for i in range(train.grad_accum)
    ]
    return {
        key: np.stack([m[key].numpy() for m in micro]).astype(np.int32)
        for key in ("input_ids", "labels")
    }


def device_batch(session: Session, step: int) -> dict[str, jax.Array]:
    """Step `step`'s batch, split over the devices on its sample axis."""
    if session.make_batch is not None:
        made = jax.jit(session.make_batch, out_shardings=session.batch_sharding)(jnp.int32(step))
        return made  # type: ignore[no-any-return]
    return jax.device_put(host_batch(session, step), session.batch_sharding)  # type: ignore[no-any-return]


def step_input(session: Session, step: int) -> dict[str, jax.Array] | None:
    """What the compiled step takes as its batch: None where it makes the batch itself."""
    return None if session.make_batch is not None else device_batch(session, step)


def _maybe_resume(session: Session) -> None:
    config = session.config
    found = ckpt.resolve_resume(config.checkpoint.resume, session.checkpoints.directory)
    if found is None:
        return
    directory, step = found
    source = session.checkpoints
    if directory != source.directory:
        source = ckpt.Checkpoints(directory, keep=config.checkpoint.keep)
    saved_model = source.record(step).get("config", {}).get("model")
    if saved_model is not None and saved_model != to_dict(config)["model"]:
        raise UserError(
            f"checkpoint {directory / str(step)} is of a different model ({saved_model}); "
            "resume it with the same [model] settings"
        )
    session.state = source.restore(step, session.state)
    session.last_saved_step = step
    session.host_step = session.start_step = int(jax.device_get(session.state["step"]))


@dataclass(kw_only=True)
class _Pending:
    """A launched step whose scalars are still on the device."""

    step: int
    lr: float
    values: dict[str, jax.Array]


def _run(session: Session, callbacks: Sequence[Callback]) -> TrainResult:
    config = session.config
    run_dir = Path(config.logging.run_dir)
    log = JsonlLog(run_dir)
    meter = MemoryMeter("cpu")
    last_step = min(config.train.steps, config.train.stop_at_step or config.train.steps)
    pending: list[_Pending] = []
    window_start = time.perf_counter()
    try:
        batch = step_input(session, session.step) if session.step < last_step else None
        while session.step < last_step:
            lr = lr_at(session.step, config.train)
            session.state, values = session.step_fn(session.state, batch, np.float32(lr))
            session.host_step += 1
            pending.append(_Pending(step=session.step, lr=lr, values=values))
            if session.step < last_step:
                # Host-made batches are built and sent while the device runs this step.
                batch = step_input(session, session.step)
            if not _sync_due(session, last_step):
                continue
            for metrics in _drain(session, pending, window_start, meter):
                session.history.append(metrics)
                if metrics.step % config.logging.log_every == 0 or metrics.step == last_step:
                    log.write(step_record(metrics))
                for callback in callbacks:
                    callback(metrics)
            pending = []
            if _checkpoint_due(session):
                _save(session)
                if session.signal_received:
                    break
            window_start = time.perf_counter()
    finally:
        log.close()
    if config.checkpoint.save_final and session.last_saved_step != session.step:
        _save(session)
    return _finish(session, run_dir)


def _sync_due(session: Session, last_step: int) -> bool:
    """Steps at which the host reads the device (the same points as the torch loop's)."""
    step, config = session.step, session.config
    every = config.checkpoint.every
    return (
        step == session.start_step + 1  # the first step: an early estimate of the run's length
        or step % config.logging.log_every == 0
        or step >= last_step
        or bool(every and step % every == 0)
        or session.signal_received
    )


def read_device(values: Any) -> Any:
    """The one device-to-host read of a sync point (waits for the steps that made `values`)."""
    return jax.device_get(values)


def _drain(
    session: Session, pending: list[_Pending], window_start: float, meter: MemoryMeter
) -> list[StepMetrics]:
    """Read the pending steps' scalars at once, check them, make their metrics.

    The device ran the window's steps back to back, so each is given the window's mean time
    (from the end of the previous sync point to the end of this read)."""
    values = read_device([p.values for p in pending])
    step_time_s = max(time.perf_counter() - window_start, 1e-9) / len(pending)
    peak_memory = peak_memory_bytes(session.devices[0], meter)
    metrics = []
    for record, host in zip(pending, values, strict=True):
        metrics.append(_step_metrics(session, record, host, step_time_s, peak_memory))
        _check_finite(session, metrics[-1])
    return metrics


def _step_metrics(
    session: Session,
    record: _Pending,
    values: dict[str, Any],
    step_time_s: float,
    peak_memory: int | None,
) -> StepMetrics:
    train, seq_len = session.config.train, session.config.model.seq_len
    samples_per_device = train.micro_batch * train.grad_accum
    per_device = samples_per_device * seq_len / step_time_s
    norm = float(values["grad_norm"])
    scaling = session.policy.uses_loss_scaling
    return StepMetrics(
        step=record.step,
        loss=float(values["loss"]),
        lr=record.lr,
        grad_norm=norm if math.isfinite(norm) else None,
        step_time_s=step_time_s,
        units_per_s=per_device * session.num_devices,
        units_per_s_per_device=per_device,
        mfu=mfu(session.flops_per_sample, samples_per_device, step_time_s, session.peak_flops),
        peak_memory_bytes=peak_memory,
        skipped=bool(values["skipped"]) if scaling else False,
        loss_scale=float(values["loss_scale"]) if scaling else None,
        unit_name="tokens",
    )


def _check_finite(session: Session, metrics: StepMetrics) -> None:
    """NaN/inf loss: stop (exit 3); under fp16 the step skipped itself, stop only if it persists."""
    scaling = session.policy.uses_loss_scaling
    session.consecutive_skips = count_bad_step(
        metrics.skipped if scaling else not math.isfinite(metrics.loss),
        metrics.loss,
        step=metrics.step,
        consecutive_skips=session.consecutive_skips,
        uses_loss_scaling=scaling,
        max_consecutive_skips=session.config.precision.max_consecutive_skips,
        last_saved_step=session.last_saved_step,
    )


def _checkpoint_due(session: Session) -> bool:
    every = session.config.checkpoint.every
    return session.signal_received or bool(every and session.step % every == 0)


def _save(session: Session) -> None:
    record = {"step": session.step, "backend": BACKEND, "config": to_dict(session.config)}
    session.checkpoints.save(session.step, session.state, record)
    session.last_saved_step = session.step


def _finish(session: Session, run_dir: Path) -> TrainResult:
    config_dict = {**to_dict(session.config), "backend": BACKEND}
    result = summarize(
        config=config_dict,
        history=session.history,
        unit_name="tokens",
        num_skipped_steps=int(read_device(session.state["num_skipped_steps"])),
        run_dir=run_dir,
        world_size=session.num_devices,
    )
    for measurement in result.measurements:
        measurement.name = f"{measurement.name} {BACKEND}"
        measurement.params["backend"] = BACKEND
    first = result.measurements[0]
    result.measurements.append(
        Measurement(
            suite=first.suite,
            name=first.name,
            metric=XLA_MEMORY_METRIC,
            value=None if session.step_memory_bytes is None else float(session.step_memory_bytes),
            unit="bytes",
            params=dict(first.params),
            extra={"source": XLA_MEMORY_SOURCE},
        )
    )
    result.steps_done = session.step
    result.stopped_by_signal = session.signal_received
    result.stop_signal = session.stop_signal
    if session.last_saved_step >= 0:
        result.checkpoint = session.checkpoints.directory / str(session.last_saved_step)
    environment = {**session.platform.record(), "jax": jax_environment(session.devices)}
    result.run = RunResult(
        kind="train", environment=environment, config=config_dict, measurements=result.measurements
    )
    return result
