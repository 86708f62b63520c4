"""`rocmkit train`: train a preset or a config file; `rocmkit train export CKPT OUT` exports weights.

Works the same under torchrun (`torchrun --nproc-per-node 2 -m rocmkit train ...`): every rank
runs this, only rank 0 prints. This module parses; `rocmkit.train.run` chooses the run directory,
trains and saves.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, TextIO

from rocmkit.cli.pipeline import add_output_options
from rocmkit.cli.train_options import add_train_shortcuts, train_overrides
from rocmkit.errors import UserError

if TYPE_CHECKING:
    from rich.console import Console

    from rocmkit.train.metrics import StepMetrics, TrainResult
    from rocmkit.train.run import TrainRun


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    add_train_shortcuts(parser)
    parser.add_argument(
        "--resume",
        help="auto: the latest checkpoint of --out DIR (without --out: of the newest "
        "runs/train-* run), or a checkpoint path",
    )
    add_output_options(
        parser,
        "train",
        monitor_memory=True,
        out_help="run directory for metrics.jsonl, result.json and checkpoints "
        "(default: runs/train-<UTC stamp>; sets logging.run_dir)",
    )
    parser.add_argument("--run-dir", help="deprecated: use --out DIR (same meaning)")
    parser.add_argument(
        "--backend",
        choices=["torch", "jax"],
        default="torch",
        help="jax: the GPT presets with JAX/Flax (pip install 'rocmkit[jax]'), see docs/train-jax.md",
    )
    parser.set_defaults(handler=run, accepts_overrides=True)


def run(args: argparse.Namespace) -> int:
    extra = list(getattr(args, "overrides", None) or [])
    if extra and extra[0] == "export":
        return _export(extra[1:])
    if args.preset is None and args.config is None:
        from rocmkit.train.config import available_presets

        raise UserError(
            "rocmkit train needs --preset NAME or --config FILE (presets: "
            f"{', '.join(available_presets())}); try: rocmkit train --preset gpt-tiny"
        )
    from rocmkit.config import parse_overrides
    from rocmkit.runs import is_main_process
    from rocmkit.train import load_train_config
    from rocmkit.train.run import choose_run_dir, configured_run_dir

    out = _out_argument(args)
    overrides: dict[str, Any] = train_overrides(args)
    if args.resume is not None:
        overrides["checkpoint.resume"] = args.resume
    overrides.update(parse_overrides(extra))
    config = load_train_config(preset=args.preset, path=args.config, overrides=overrides)
    is_main = is_main_process()
    chosen = choose_run_dir(
        out or configured_run_dir(args.config, overrides), resume=config.checkpoint.resume
    )
    config.logging.run_dir = str(chosen.path)
    if chosen.note and is_main:
        print(chosen.note, file=sys.stderr, flush=True)
    return _train(args, config, is_main)


def _out_argument(args: argparse.Namespace) -> str | None:
    """`--out`, or the deprecated `--run-dir` (with a note); both at once is a mistake."""
    if args.run_dir is None:
        return args.out  # type: ignore[no-any-return]
    if args.out is not None and args.out != args.run_dir:
        raise UserError("--run-dir is the old name of --out: give only --out DIR")
    print(
        "rocmkit train: --run-dir is deprecated and will be removed; use --out DIR",
        file=sys.stderr,
        flush=True,
    )
    return args.run_dir  # type: ignore[no-any-return]


def _train(args: argparse.Namespace, config: Any, is_main: bool) -> int:
    # torch is imported from here on: a bad config was answered before (well under a second).
    from rocmkit.cli.pipeline import emit
    from rocmkit.platform import detect
    from rocmkit.profile.fit import fit_warning
    from rocmkit.train.run import run as run_training

    if args.backend == "jax":
        from rocmkit.jaxtrain import train as trainer
    else:
        from rocmkit.train import train as trainer
    platform = detect()
    if is_main:
        print(_start_line(config, platform), file=sys.stderr, flush=True)
        warning = fit_warning(config, platform)
        if warning:
            print(warning, file=sys.stderr, flush=True)
    steps_to = sys.stderr if args.json else sys.stdout  # --json: stdout holds the document only
    progress = _Progress(
        config.train.steps, enabled=is_main, log_every=config.logging.log_every, stream=steps_to
    )
    with progress:
        done = run_training(
            config,
            platform,
            trainer=trainer,
            callbacks=[progress],
            monitor_memory=bool(args.monitor_memory),
        )
    if is_main:
        emit(done.record, as_json=args.json, render=lambda _, console: _summary(done, console))
        _stop_note(done.result)
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
    """A rich progress bar on a terminal (stderr), plain step lines otherwise (logs, CI,
    torchrun) on `stream`: stdout, or stderr when stdout carries the --json document."""

    def __init__(
        self, total: int, *, enabled: bool, log_every: int = 1, stream: TextIO = sys.stdout
    ) -> None:
        self.total = total
        self.enabled = enabled
        self.log_every = log_every
        self.stream = stream
        self.first_step: int | None = None
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> _Progress:
        if self.enabled and sys.stderr.isatty():
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            from rocmkit.console import make_console

            self.bar = Progress(
                TextColumn("train"),
                BarColumn(),
                TextColumn("{task.completed}/{task.total}"),
                TextColumn("{task.fields[info]}"),
                TimeRemainingColumn(),
                console=make_console(stderr=True),
            )
            self.bar.start()
            self.task = self.bar.add_task("train", total=self.total, info="")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def __call__(self, m: StepMetrics) -> None:
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
            print(f"step {m.step}/{self.total} {text}", file=self.stream, flush=True)


def _estimate_line(m: StepMetrics, total: int) -> str:
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


def _step_line(m: StepMetrics) -> str:
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


def _fmt(value: float | None, pattern: str) -> str:
    return "n/a" if value is None else pattern.format(value)


def _summary(done: TrainRun, console: Console) -> None:
    """The end-of-run table: what the run did, and where its files are."""
    from rich.table import Table

    result, memory = done.result, done.memory
    table = Table(title="rocmkit train")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("steps", str(result.steps_done))
    table.add_row("final loss", _fmt(result.final_loss, "{:.4f}"))
    table.add_row("median step time", _fmt(result.median_step_time_s, "{:.4f} s"))
    table.add_row(f"{result.unit_name}/s (all ranks)", _fmt(result.units_per_s, "{:,.0f}"))
    table.add_row("MFU", _fmt(result.mfu, "{:.1%}"))
    peak = None if result.peak_memory_bytes is None else result.peak_memory_bytes / 2**20
    table.add_row("peak memory", _fmt(peak, "{:,.0f} MiB"))
    if memory is not None:
        monitored = memory.peak_allocated_bytes
        mib = None if monitored is None else monitored / 2**20
        table.add_row(f"monitored peak ({memory.source})", _fmt(mib, "{:,.1f} MiB"))
        if memory.peak_reserved_bytes is not None:
            table.add_row(
                "monitored peak reserved", f"{memory.peak_reserved_bytes / 2**20:,.1f} MiB"
            )
    table.add_row("skipped steps (fp16)", str(result.num_skipped_steps))
    table.add_row("checkpoint", str(result.checkpoint or "none"))
    table.add_row("run dir", str(result.run_dir))
    console.print(table)


def _stop_note(result: TrainResult) -> None:
    if result.stopped_by_signal:
        print(
            f"stopped by {result.stop_signal or 'a signal'} at step {result.steps_done}; "
            f"checkpoint saved in {result.checkpoint}; continue with the same command, "
            f"--out {result.run_dir} and --resume auto",
            file=sys.stderr,
        )
