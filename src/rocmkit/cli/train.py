"""`rocmkit train`: train a preset or a config file; `rocmkit train export CKPT OUT` exports weights.

Works the same under torchrun (`torchrun --nproc-per-node 2 -m rocmkit train ...`): every rank
runs this, only rank 0 prints.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any

# Short flags and the dotted setting each one sets.
_SHORTCUTS = {
    "precision": "precision.dtype",
    "micro_batch": "train.micro_batch",
    "grad_accum": "train.grad_accum",
    "steps": "train.steps",
    "parallel": "parallel.mode",
    "resume": "checkpoint.resume",
    "run_dir": "logging.run_dir",
    "seed": "train.seed",
}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train a model (GPT, ResNet, local HF causal LM) with fp32/fp16/bf16, DDP or FSDP2",
        description=(
            "Train from a preset and/or a TOML config; any setting can be overridden as "
            "--SECTION.KEY VALUE (e.g. --train.lr 3e-4; every setting is listed in docs/train.md). "
            "'rocmkit train export CKPT OUT.safetensors|OUT.pt' writes a checkpoint's weights."
        ),
    )
    parser.add_argument(
        "--preset", help="gpt-tiny, gpt2-124m, gpt2-350m, resnet18, resnet50, hf-causal-lm"
    )
    parser.add_argument("--config", help="TOML file with [model] [data] [train] ... sections")
    parser.add_argument("--precision", choices=["fp32", "fp16", "bf16"], help="compute dtype")
    parser.add_argument("--micro-batch", type=int, help="samples per device per forward")
    parser.add_argument("--grad-accum", type=int, help="micro-batches per optimizer step")
    parser.add_argument("--steps", type=int, help="optimizer steps")
    parser.add_argument("--data", help="text file (byte-level tokens) or image folder")
    parser.add_argument("--parallel", choices=["none", "ddp", "fsdp"], help="data parallel mode")
    parser.add_argument("--resume", help="auto (latest checkpoint of the run, if any) or a path")
    parser.add_argument("--run-dir", help="where metrics.jsonl, result.json, checkpoints go")
    parser.add_argument("--seed", type=int)
    parser.add_argument(
        "--backend",
        choices=["torch", "jax"],
        default="torch",
        help="jax: the GPT presets with JAX/Flax (pip install 'rocmkit[jax]'), see docs/train-jax.md",
    )
    parser.add_argument(
        "--monitor-memory",
        action="store_true",
        help="sample memory during the run (GPU allocator, or process RSS on CPU); write "
        "memory.json to the run dir and the peak to result.json",
    )
    parser.set_defaults(handler=run, accepts_overrides=True)


def run(args: argparse.Namespace) -> int:
    extra = list(getattr(args, "overrides", None) or [])
    if extra and extra[0] == "export":
        return _export(extra[1:])
    if args.preset is None and args.config is None:
        from rocmkit.errors import UserError
        from rocmkit.train.config import available_presets

        raise UserError(
            "rocmkit train needs --preset NAME or --config FILE (presets: "
            f"{', '.join(available_presets())}); try: rocmkit train --preset gpt-tiny"
        )
    from rocmkit.config import parse_overrides
    from rocmkit.train import load_train_config

    overrides: dict[str, Any] = _shortcut_overrides(args)
    overrides.update(parse_overrides(extra))
    config = load_train_config(preset=args.preset, path=args.config, overrides=overrides)
    # torch is imported from here on: a bad config was answered before (well under a second).
    from rocmkit.platform import detect

    if getattr(args, "backend", "torch") == "jax":
        from rocmkit.jaxtrain import train
    else:
        from rocmkit.train import train

    is_main = os.environ.get("RANK", "0") == "0"
    platform = detect()
    monitoring = bool(getattr(args, "monitor_memory", False)) and is_main
    if is_main:
        print(_start_line(config, platform), file=sys.stderr, flush=True)
        warning = _memory_warning(config, platform)
        if warning:
            print(warning, file=sys.stderr, flush=True)
    with contextlib.ExitStack() as stack:
        monitor = stack.enter_context(_memory_monitor(config, platform)) if monitoring else None
        with _Progress(
            config.train.steps, enabled=is_main, log_every=config.logging.log_every
        ) as report:
            result = train(config, platform=platform, callbacks=[report])
    if monitor is not None and result.run_dir is not None:
        _add_memory_to_result(monitor.timeline, result.run_dir, config)
    if is_main:
        _print_summary(result, monitor.timeline if monitor is not None else None)
    return 0


def _start_line(config: Any, platform: Any) -> str:
    """Say at once what is starting: a first step can take minutes (compilation, a big model)."""
    device = platform.torch_device if config.train.device == "auto" else config.train.device
    name = config.preset or config.model.kind
    first = "; the first step compiles the model" if config.train.compile else ""
    return (
        f"rocmkit train: {name} {config.precision.dtype} on {device}, {config.train.steps} steps, "
        f"loss read every {config.logging.log_every} steps{first}"
    )


def _memory_warning(config: Any, platform: Any) -> str | None:
    """Warn before a run whose estimated memory (GPT models) exceeds what the device has."""
    from rocmkit.profile.runs import estimate_for_train_config

    estimate = estimate_for_train_config(config)
    if estimate is None:
        return None
    on_gpu = config.train.device != "cpu" and platform.gpu_available
    available = _available_bytes(platform, on_gpu)
    return memory_warning(estimate.peak_bytes or estimate.total_bytes, available, on_gpu=on_gpu)


def _available_bytes(platform: Any, on_gpu: bool) -> int | None:
    if on_gpu:
        devices = platform.devices
        return devices[0].total_memory_bytes if devices else None
    import psutil

    return int(psutil.virtual_memory().available)


def memory_warning(needed: int, available: int | None, *, on_gpu: bool) -> str | None:
    """The warning line when `needed` bytes (estimate) exceed `available`; None otherwise."""
    if not available or needed <= available:
        return None
    where = "GPU memory" if on_gpu else "free RAM"
    return (
        f"warning: this run needs about {needed / 2**30:.1f} GiB (estimate) but the machine has "
        f"{available / 2**30:.1f} GiB {where}: lower --micro-batch, use "
        "--train.activation_checkpointing true, or a smaller preset"
    )


def _memory_monitor(config: Any, platform: Any) -> contextlib.AbstractContextManager[Any]:
    """Rank 0's memory: the GPU allocator when training runs on the GPU, else the process RSS."""
    from rocmkit.measure.memory import monitor_run

    device = "cuda" if config.train.device != "cpu" and platform.gpu_available else "cpu"
    return monitor_run(config.logging.run_dir, device=device)


def _add_memory_to_result(timeline: Any, run_dir: Any, config: Any) -> None:
    """Append the monitor's peak to the result.json the training loop wrote."""
    from rocmkit.measure.memory import timeline_measurements
    from rocmkit.results import load_result

    result = load_result(run_dir)
    name = f"{config.preset or config.model.kind} {config.precision.dtype}"
    result.measurements.extend(timeline_measurements(timeline, name=name))
    result.save(run_dir)


def _shortcut_overrides(args: argparse.Namespace) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    for name, key in _SHORTCUTS.items():
        value = getattr(args, name, None)
        if value is not None:
            overrides[key] = str(value)
    if args.data is not None:
        overrides["data.path"] = args.data
        overrides["data.kind"] = "images" if os.path.isdir(args.data) else "text"
    return overrides


def _export(tokens: list[str]) -> int:
    from rocmkit.cli.main import _Parser

    parser = _Parser(prog="rocmkit train export", description="export checkpoint weights")
    parser.add_argument("checkpoint", help="a checkpoint directory or a checkpoints directory")
    parser.add_argument("out", help="OUT.safetensors or OUT.pt")
    ns = parser.parse_args(tokens)
    from rocmkit.train import export_checkpoint  # torch: only once the arguments are good

    target = export_checkpoint(ns.checkpoint, ns.out)
    print(f"wrote {target}")
    return 0


class _Progress:
    """A rich progress bar on a terminal, plain lines otherwise (logs, CI, torchrun)."""

    def __init__(self, total: int, enabled: bool, log_every: int = 1) -> None:
        self.total = total
        self.enabled = enabled
        self.log_every = log_every
        self.first_step: int | None = None
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> _Progress:
        if self.enabled and sys.stderr.isatty():
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(
                TextColumn("train"),
                BarColumn(),
                TextColumn("{task.completed}/{task.total}"),
                TextColumn("{task.fields[info]}"),
                TimeRemainingColumn(),
            )
            self.bar.start()
            self.task = self.bar.add_task("train", total=self.total, info="")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def __call__(self, m: Any) -> None:
        if not self.enabled:
            return
        text = _step_line(m)
        if self.first_step is None:
            self.first_step = m.step
            print(_estimate_line(m, self.total), file=sys.stderr, flush=True)
        if self.bar is not None:
            self.bar.update(self.task, completed=m.step, info=text)
        elif m.step % self.log_every == 0 or m.step == self.total:
            # Steps reach the host in groups at each sync point (logging.log_every): one line each.
            print(f"step {m.step}/{self.total} {text}", flush=True)


def _estimate_line(m: Any, total: int) -> str:
    """After the first step: how long the rest will take at that pace (an upper bound, since the
    first step also compiles and warms up)."""
    remaining_s = m.step_time_s * max(0, total - m.step)
    return (
        f"first step {_duration(m.step_time_s)}; {total - m.step} more steps at that pace: "
        f"at most {_duration(remaining_s)} (later steps are faster once warmed up)"
    )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _step_line(m: Any) -> str:
    parts = [f"loss {m.loss:.4f}", f"lr {m.lr:.2e}"]
    if m.grad_norm is not None:
        parts.append(f"gnorm {m.grad_norm:.3f}")
    parts.append(f"{m.step_time_s * 1000:.1f} ms")
    parts.append(f"{m.units_per_s:,.0f} {m.unit_name}/s")
    if m.mfu is not None:
        parts.append(f"mfu {m.mfu:.1%}")
    if m.skipped:
        parts.append("skipped (fp16 overflow)")
    return "  ".join(parts)


def _print_summary(result: Any, memory: Any = None) -> None:
    from rich.table import Table

    from rocmkit.cli.console import make_console

    table = Table(title="rocmkit train")
    table.add_column("metric")
    table.add_column("value", justify="right")

    def fmt(value: float | None, pattern: str) -> str:
        return "n/a" if value is None else pattern.format(value)

    table.add_row("steps", str(result.steps_done))
    table.add_row("final loss", fmt(result.final_loss, "{:.4f}"))
    table.add_row("median step time", fmt(result.median_step_time_s, "{:.4f} s"))
    table.add_row(f"{result.unit_name}/s (all ranks)", fmt(result.units_per_s, "{:,.0f}"))
    table.add_row("MFU", fmt(result.mfu, "{:.1%}"))
    peak = None if result.peak_memory_bytes is None else result.peak_memory_bytes / 2**20
    table.add_row("peak memory", fmt(peak, "{:,.0f} MiB"))
    if memory is not None:
        monitored = memory.peak_allocated_bytes / 2**20
        table.add_row(f"monitored peak ({memory.source})", f"{monitored:,.1f} MiB")
        if memory.peak_reserved_bytes is not None:
            table.add_row(
                "monitored peak reserved", f"{memory.peak_reserved_bytes / 2**20:,.1f} MiB"
            )
    table.add_row("skipped steps (fp16)", str(result.num_skipped_steps))
    table.add_row("checkpoint", str(result.checkpoint or "none"))
    table.add_row("run dir", str(result.run_dir))
    make_console().print(table)
    if result.stopped_by_signal:
        print(
            f"stopped by {result.stop_signal or 'a signal'} at step {result.steps_done}; "
            f"checkpoint saved in {result.checkpoint}; continue with the same command and "
            "--resume auto",
            file=sys.stderr,
        )
