"""`rocmkit profile train|infer|memory` as commands of the one driver (`rocmkit.driver`).

Each `build_*` turns the parsed flags into a job and `run(job, ctx)` returns the `RunResult` the
driver saves and renders (`rocmkit.report.view_profile`): "profile-train" and "profile-infer"
(a trace.json in the run directory, the summary and hints in `data`), "profile-memory" (an
estimate, saved only with --out; `--plot` draws its chart). From Python:

    from rocmkit.profile.command import run
    from rocmkit.profile.commands import EstimateRequest
    result = run(EstimateRequest(preset="gpt2-124m"))
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmkit import runs
from rocmkit.driver import Command, Context
from rocmkit.errors import UserError
from rocmkit.profile.commands import EstimateRequest
from rocmkit.results import RunResult

if TYPE_CHECKING:
    from rocmkit.profile.commands import ScheduleOptions
    from rocmkit.profile.trace import ProfileSchedule
    from rocmkit.train import TrainConfig


@dataclass(kw_only=True)
class TrainProfileJob:
    """`profile train`: a few steps of a training config under torch.profiler."""

    config: TrainConfig
    schedule: ProfileSchedule
    name: str  # what the run is called in its title (the preset or the config file's stem)
    top: int = 10
    threads: int | None = None  # --threads: torch CPU threads on CPU


@dataclass(kw_only=True)
class InferProfileJob:
    """`profile infer`: a few greedy generate() calls of a local Hugging Face model."""

    model_dir: Path
    schedule: ProfileSchedule
    prompt: str = "The quick brown fox"
    max_new_tokens: int = 16
    top: int = 10
    threads: int | None = None  # --threads: torch CPU threads on CPU


MemoryJob = EstimateRequest  # `profile memory`'s job is its request (kept for library users)

Job = TrainProfileJob | InferProfileJob | MemoryJob


def _schedule(args: argparse.Namespace) -> ScheduleOptions:
    from rocmkit.measure.noise import use_passive_wait_policy
    from rocmkit.options import from_args
    from rocmkit.profile.commands import ScheduleOptions

    # Before torch starts its OpenMP pool (see rocmkit.measure.noise); profile train and infer
    # both come through here.
    use_passive_wait_policy()
    return from_args(ScheduleOptions, args)


def build_train(args: argparse.Namespace) -> TrainProfileJob:
    from rocmkit.config import parse_overrides
    from rocmkit.profile.commands import profile_train_config
    from rocmkit.train.shortcuts import shortcut_overrides

    options = _schedule(args)
    overrides: dict[str, Any] = dict(shortcut_overrides(vars(args)))
    overrides.update(parse_overrides(getattr(args, "overrides", None) or []))
    config = profile_train_config(preset=args.preset, path=args.config, overrides=overrides)
    name = args.preset or Path(args.config).stem
    return TrainProfileJob(
        config=config,
        schedule=options.schedule(),
        name=name,
        top=options.top,
        threads=options.threads,
    )


def build_infer(args: argparse.Namespace) -> InferProfileJob:
    from rocmkit.profile.commands import check_model_dir

    options = _schedule(args)
    model_dir = Path(args.model_dir)
    check_model_dir(model_dir)  # a wrong path is answered before torch loads
    if args.max_new_tokens < 1:
        raise UserError(f"--max-new-tokens must be at least 1 (got {args.max_new_tokens})")
    return InferProfileJob(
        model_dir=model_dir,
        schedule=options.schedule(),
        prompt=args.prompt,
        max_new_tokens=args.max_new_tokens,
        top=options.top,
        threads=options.threads,
    )


def build_memory(args: argparse.Namespace) -> EstimateRequest:
    """The estimate the flags ask for (generated from `EstimateRequest`), resolved against the
    preset here so a bad combination fails before any work; an unwritable --plot file too."""
    from rocmkit.atomic import check_writable_file
    from rocmkit.options import from_args

    request = from_args(EstimateRequest, args)
    if request.plot is not None:
        check_writable_file(request.plot, what="plot file")
    return memory_job(request)


def memory_job(request: EstimateRequest) -> EstimateRequest:
    """`request` with its estimate config resolved (checked): what `run` takes."""
    _ = request.config
    return request


def build_missing(args: argparse.Namespace) -> Job:
    raise UserError(
        "profile needs a subcommand: train, infer or memory (see rocmkit profile --help)"
    )


def run(job: Job, ctx: Context | None = None) -> RunResult:
    """Profile (or estimate) and return the result document; quiet with the default Context."""
    ctx = ctx or Context()
    if isinstance(job, EstimateRequest):
        return _memory(job, ctx)
    out = ctx.out or runs.default_out(
        "profile-train" if isinstance(job, TrainProfileJob) else "profile-infer"
    )
    if isinstance(job, TrainProfileJob):
        return _train(job, ctx, out)
    return _infer(job, out)


def _train(job: TrainProfileJob, ctx: Context, out: Path) -> RunResult:
    from rocmkit.platform import detect
    from rocmkit.profile.commands import run_profile_train

    platform = detect()
    device = job.config.train.device
    cpu = _prepare_cpu(job.threads, on_cpu=device == "cpu" or not platform.gpu_available)
    with ctx.progress("profile train", total=job.schedule.num_steps) as bar:
        profile, record = run_profile_train(
            job.config,
            platform,
            out=out,
            schedule=job.schedule,
            # memory.json goes to the run directory: rank 0 of a run that has one
            monitor_memory=ctx.monitor_memory and ctx.is_main and ctx.out is not None,
            top_k=job.top,
            on_step=lambda metrics: bar.advance(info=f"step {metrics.step}"),
        )
    record.data["name"] = job.name
    record.data["cpu"] = cpu
    if profile.memory is not None:
        peak = profile.memory.peak_allocated_bytes
        record.data["memory"] = {"peak_bytes": peak, "source": profile.memory.source}
    return record


def _infer(job: InferProfileJob, out: Path) -> RunResult:
    from rocmkit.platform import detect
    from rocmkit.profile.commands import run_profile_infer

    platform = detect()
    cpu = _prepare_cpu(job.threads, on_cpu=not platform.gpu_available)
    _, record = run_profile_infer(
        job.model_dir,
        platform,
        out=out,
        schedule=job.schedule,
        prompt=job.prompt,
        max_new_tokens=job.max_new_tokens,
        top_k=job.top,
    )
    record.data["name"] = job.model_dir.name
    record.data["cpu"] = cpu
    return record


def _prepare_cpu(threads: int | None, *, on_cpu: bool) -> dict[str, Any]:
    """Torch threads as `rocmkit bench` and `train` choose them (--threads, OMP_NUM_THREADS,
    else the free cores); what it saw and chose, for result.json."""
    from rocmkit.measure.noise import prepare_cpu

    return prepare_cpu(threads, on_cpu=on_cpu, flag="--threads")


def _memory(job: EstimateRequest, ctx: Context) -> RunResult:
    from rocmkit.profile.commands import chart_estimates, estimate_record, measure_device
    from rocmkit.profile.estimator import estimate

    predicted = estimate(job.config)
    comparison, environment = None, None
    if job.measure:
        from rocmkit.platform import detect
        from rocmkit.profile.runs import compare_with_measurement

        platform = detect()
        device = measure_device(platform, job.device)
        ctx.say(f"measuring one training step on {device} ...")
        comparison = compare_with_measurement(job.config, preset=job.preset, device=device)
        environment = platform.record()
    record = estimate_record(predicted, comparison, environment)
    if job.plot is not None:
        from rocmkit.report.memory_chart import render_memory_chart

        micro_batch = job.config.micro_batch
        title = f"{job.preset or 'GPT'}: memory per device, micro-batch {micro_batch}"
        render_memory_chart(chart_estimates(job.config, predicted), job.plot, title=title)
        record.data["chart"] = str(job.plot)
    return record


TRAIN = Command(name="profile-train", build=build_train, run=run)
INFER = Command(name="profile-infer", build=build_infer, run=run)
MEMORY = Command(name="profile-memory", build=build_memory, run=run, saves="with-out")
MISSING = Command(name="profile", build=build_missing, run=run, saves="with-out")
