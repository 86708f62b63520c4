"""`rocmkit train` as a command of the one driver (`rocmkit.driver`).

`build` turns the parsed flags into a `TrainJob` (a preset and/or TOML config with overrides, the
backend, where to write) or an `ExportJob` (`rocmkit train export CKPT OUT`); `choose_out` picks
the run directory (`--out`, else with `--resume auto` the newest `runs/train-*` run, else a new
`runs/train-<UTC stamp>`); `run(job, ctx)` trains and returns the `RunResult` (kind "train") that
the driver saves as result.json and renders (`rocmkit.report.view_train`). The training loops
save nothing themselves. From Python:

    from rocmkit.train import load_train_config
    from rocmkit.train.command import run
    result = run(load_train_config(preset="gpt-tiny"))  # quiet; writes logging.run_dir's files
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rocmkit import runs
from rocmkit.config import load_toml, to_dict
from rocmkit.driver import Command, Context
from rocmkit.errors import UserError
from rocmkit.results import RESULT_FILENAME, RunResult, load_result
from rocmkit.train import integrity
from rocmkit.train.config import TrainConfig

if TYPE_CHECKING:
    from rocmkit.platform import Platform
    from rocmkit.train.metrics import TrainResult

NAME = "train"
Backend = Literal["torch", "jax"]
# How a run stopped by a signal ends (RunResult.outcome -> exit 130 or 143).
STOP_OUTCOMES = {"SIGINT": "interrupted", "SIGTERM": "terminated"}


@dataclass(kw_only=True)
class TrainJob:
    """A training run: the config, the backend, and the run directory the user named (if any)."""

    config: TrainConfig
    backend: Backend = "torch"
    out: str | None = None  # --out (or --run-dir), else logging.run_dir when the user set it
    notes: tuple[str, ...] = ()  # said before the run (a deprecated flag)
    threads: int | None = None  # --threads: torch CPU threads of a CPU run


@dataclass(frozen=True, kw_only=True)
class ExportJob:
    """`rocmkit train export CKPT OUT`: a checkpoint's weights as OUT.safetensors or OUT.pt."""

    checkpoint: Path
    target: Path


def build(args: argparse.Namespace) -> TrainJob | ExportJob:
    """The job the command line asks for; a bad flag or config is a UserError before torch loads."""
    extra = list(getattr(args, "overrides", None) or [])
    if extra and extra[0] == "export":
        return _export_job(extra[1:])
    if args.preset is None and args.config is None:
        from rocmkit.train.config import available_presets

        raise UserError(
            "rocmkit train needs --preset NAME or --config FILE (presets: "
            f"{', '.join(available_presets())}); try: rocmkit train --preset gpt-tiny"
        )
    from rocmkit.config import parse_overrides
    from rocmkit.measure.noise import use_passive_wait_policy
    from rocmkit.train import load_train_config
    from rocmkit.train.shortcuts import shortcut_overrides

    # Before torch starts its OpenMP pool: spinning threads make a CPU run on a shared machine
    # ~12x slower (benchmarks/results/train_threads.json).
    use_passive_wait_policy()
    threads = getattr(args, "threads", None)
    if threads is not None and threads < 1:
        raise UserError(f"--threads must be a positive integer (got {threads})")

    overrides: dict[str, Any] = dict(shortcut_overrides(vars(args)))
    if args.resume is not None:
        overrides["checkpoint.resume"] = args.resume
    overrides.update(parse_overrides(extra))
    # The --config file is read once: the config and the run-directory choice both use it.
    file_data = load_toml(args.config) if args.config is not None else None
    config = load_train_config(preset=args.preset, file_data=file_data, overrides=overrides)
    out, notes = out_argument(args.out, args.run_dir, configured_run_dir(file_data, overrides))
    return TrainJob(config=config, backend=args.backend, out=out, notes=notes, threads=threads)


# The one name of the run directory is --out; the old spellings keep working with a note.
RUN_DIR_NOTE = "rocmkit train: --run-dir is deprecated and will be removed; use --out DIR"
LOGGING_RUN_DIR_NOTE = (
    "rocmkit train: logging.run_dir names the run directory the old way; use --out DIR"
)


def out_argument(
    out: str | None, run_dir: str | None, configured: str | None
) -> tuple[str | None, tuple[str, ...]]:
    """The run directory the user named and what to tell them: `--out`; else the old `--run-dir`
    flag or the config's `logging.run_dir`, each with a note naming --out. `--out` and a different
    `--run-dir` at once is a mistake; `--out` wins over `logging.run_dir`."""
    if run_dir is not None:
        if out is not None and out != run_dir:
            raise UserError("--run-dir is the old name of --out: give only --out DIR")
        return run_dir, (RUN_DIR_NOTE,)
    if out is not None or configured is None:
        return out, ()
    return configured, (LOGGING_RUN_DIR_NOTE,)


class _ExportParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UserError(f"{message} (see {self.prog} --help)")


def _export_job(tokens: list[str]) -> ExportJob:
    parser = _ExportParser(prog="rocmkit train export", description="export checkpoint weights")
    parser.add_argument("checkpoint", help="a checkpoint directory or a checkpoints directory")
    parser.add_argument("out", help="OUT.safetensors or OUT.pt")
    ns = parser.parse_args(tokens)
    return ExportJob(checkpoint=Path(ns.checkpoint), target=Path(ns.out))


def configured_run_dir(
    file_data: Mapping[str, Any] | None, overrides: Mapping[str, Any]
) -> str | None:
    """`logging.run_dir` when the user set it: a dotted override, else the --config file's
    contents (already read; presets' own run_dir is for library calls and is not the user's)."""
    if "logging.run_dir" in overrides:
        return str(overrides["logging.run_dir"])
    logging = (file_data or {}).get("logging", {})
    value = logging.get("run_dir") if isinstance(logging, Mapping) else None
    return None if value is None else str(value)


def choose_run_dir(
    out: str | None, *, resume: str | None, root: Path = runs.RUNS_ROOT, backend: Backend = "torch"
) -> tuple[Path, str | None]:
    """The run directory and what to tell the user about it: `out` when given; else with
    `resume` "auto" the newest `runs/train-*` run that has a whole checkpoint (to continue it;
    runs rejected at start or never checkpointed are passed over); else a new
    `runs/train-<UTC stamp>`."""
    if out is not None:
        return Path(out), None
    if resume != "auto":
        return runs.default_out(NAME, root=root), None
    for candidate in runs.runs_newest_first(NAME, root=root):
        step = _resumable_step(candidate / "checkpoints", backend)
        if step is not None:
            return candidate, f"--resume auto: continuing {candidate} from step {step}"
    fresh = runs.default_out(NAME, root=root)
    return fresh, (
        f"--resume auto: no run in {root}/{NAME}-* has a valid checkpoint; "
        f"starting fresh in {fresh}"
    )


def _resumable_step(checkpoints: Path, backend: Backend) -> int | None:
    """The step a resume in this checkpoints directory would start from, None when none."""
    if backend == "jax":  # Orbax's step directories, checked by Orbax when restoring
        jax_dir = checkpoints / "jax"
        steps = (
            [int(p.name) for p in jax_dir.iterdir() if p.name.isdigit()] if jax_dir.is_dir() else []
        )
        return max(steps, default=None)
    return integrity.choose(checkpoints).step


def choose_out(job: TrainJob | ExportJob, out: str | None) -> tuple[Path | None, str | None]:
    """The driver's out-directory rule for train: an export saves only with --out."""
    if isinstance(job, ExportJob):
        return (None if out is None else Path(out)), None
    path, note = choose_run_dir(job.out, resume=job.config.checkpoint.resume, backend=job.backend)
    notes = [*job.notes, *([note] if note else [])]
    return path, "\n".join(notes) or None


def run(job: TrainJob | ExportJob | TrainConfig, ctx: Context | None = None) -> RunResult:
    """Train (or export) and return the result document; nothing is printed with the default
    quiet `Context()`, and nothing writes result.json here (the driver saves it)."""
    ctx = ctx or Context()
    if isinstance(job, ExportJob):
        return _export(job)
    if isinstance(job, TrainConfig):
        job = TrainJob(config=job)
    return _train(job, ctx)


def memory_device(config: TrainConfig, platform: Platform) -> str:
    """What the memory monitor watches: the GPU allocator when training runs on the GPU."""
    return "cuda" if config.train.device != "cpu" and platform.gpu_available else "cpu"


def _train(job: TrainJob, ctx: Context) -> RunResult:
    # torch is imported from here on: a bad config was answered before (well under a second).
    from rich.markup import escape

    from rocmkit.platform import detect
    from rocmkit.train.progress import StepPrinter, start_line

    config = job.config
    if ctx.out is not None:
        config.logging.run_dir = str(ctx.out)
    finished = _check_resume(job, ctx)
    if finished is not None:
        return finished
    trainer = _trainer(job.backend)
    platform = detect()
    if job.backend == "torch":  # a GPU asked for on a box without one: before the start line
        from rocmkit.train.loop import resolve_device_type

        resolve_device_type(config.train, platform)
    if ctx.is_main and not ctx.quiet:
        from rocmkit.profile.fit import fit_warning

        ctx.say(escape(start_line(config, platform)))
        warning = fit_warning(config, platform)
        if warning:
            ctx.say(escape(warning))
        if config.logging.tensorboard:
            logdir = Path(config.logging.run_dir) / "tensorboard"
            ctx.say(escape(f"TensorBoard: tensorboard --logdir {logdir}"))
    cpu = _prepare_cpu(job, memory_device(config, platform) == "cpu", ctx)
    printer = StepPrinter(ctx, config.train.steps, log_every=config.logging.log_every)
    name = f"{config.preset or config.model.kind} {config.precision.dtype}"
    with ctx.memory(device=memory_device(config, platform), name=name), printer.running():
        result = trainer(config, platform=platform, callbacks=[printer])
    record = result.run
    assert record is not None, "the training loop returns its result document"
    record.data.update(run_data(result, job))
    record.data["cpu"] = cpu
    if result.stopped_by_signal:
        signal = result.stop_signal or "SIGTERM"
        record.outcome = STOP_OUTCOMES.get(signal, "terminated")
        record.partial = f"stopped by {signal} at step {result.steps_done} of {config.train.steps}"
    return record


def _check_resume(job: TrainJob, ctx: Context) -> RunResult | None:
    """Say which checkpoint a resume starts from (and which damaged ones it passed over), before
    torch loads; a run whose checkpoint is already its last step returns its saved result
    unchanged (None: train)."""
    config, spec = job.config, job.config.checkpoint.resume
    if spec is None:
        return None
    if job.backend == "jax":  # Orbax checks its own checkpoints; only "already complete" here
        step = _resumable_step(config.checkpoint_dir, "jax") if spec == "auto" else None
    else:
        step = _torch_resume_step(job, ctx)
    saved = Path(config.logging.run_dir) / RESULT_FILENAME
    if step is None or step < config.train.steps or not saved.is_file():
        return None
    ctx.note(
        f"already complete (step {step} of {config.train.steps}): "
        f"{config.logging.run_dir} is left as it was (--steps N continues it)"
    )
    return load_result(saved)


def _torch_resume_step(job: TrainJob, ctx: Context) -> int | None:
    """The step of the whole checkpoint a torch run resumes from (None: starts fresh); damaged
    ones passed over are said, one line each; another model or precision is a UserError."""
    config, spec = job.config, job.config.checkpoint.resume
    choice = integrity.resolve(spec, config.checkpoint_dir)
    for line in integrity.damaged_note(choice):
        ctx.note(line)
    if choice.path is None:
        if spec == "auto" and job.out is not None:  # else choose_run_dir said so
            ctx.note(f"--resume auto: no checkpoint in {config.checkpoint_dir}; starting fresh")
        return None
    integrity.check_config(choice.path, to_dict(config))
    return choice.step


def _prepare_cpu(job: TrainJob, on_cpu: bool, ctx: Context) -> dict[str, Any]:
    """A CPU run uses as many torch threads as cores are free (--threads, then OMP_NUM_THREADS
    win), like `rocmkit bench`; what it saw and chose goes to result.json's data["cpu"]."""
    from rich.markup import escape

    from rocmkit.measure.noise import prepare_cpu

    if job.backend != "torch":
        return {}
    return prepare_cpu(
        job.threads, on_cpu=on_cpu, on_note=lambda text: ctx.say(escape(text)), flag="--threads"
    )


def _trainer(backend: Backend) -> Callable[..., TrainResult]:
    if backend == "jax":
        from rocmkit.jaxtrain import train as jax_train

        return jax_train
    from rocmkit.train.loop import train as torch_train

    return torch_train


def run_data(result: TrainResult, job: TrainJob) -> dict[str, Any]:
    """What the end of a run tells beyond its measurements (read by the console view), and its
    thinned curve from metrics.jsonl (read by the report plots)."""
    from rocmkit.train.metrics import curve

    return {
        "backend": job.backend,
        "steps": job.config.train.steps,
        "steps_done": result.steps_done,
        "checkpoint": None if result.checkpoint is None else str(result.checkpoint),
        "run_dir": None if result.run_dir is None else str(result.run_dir),
        "stop_signal": result.stop_signal if result.stopped_by_signal else None,
        "curve": None if result.run_dir is None else curve(result.run_dir),
    }


def _export(job: ExportJob) -> RunResult:
    from rocmkit.train import export_checkpoint  # torch: only once the arguments are good

    target = export_checkpoint(job.checkpoint, job.target)
    config = {"checkpoint": str(job.checkpoint), "out": str(job.target)}
    return RunResult(
        kind="train-export", environment={}, config=config, data={"written": str(target)}
    )


COMMAND = Command(name=NAME, build=build, run=run, choose_out=choose_out)
