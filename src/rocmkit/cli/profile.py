"""`rocmkit profile train|infer|memory`: what dominated a run, and what memory a config needs."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from rocmkit.errors import UserError, warn_once

_PARALLEL_CHOICES = ["none", "ddp", "zero1", "zero2", "zero3", "fsdp"]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "profile", help="profile training/inference steps; estimate training memory"
    )
    parser.set_defaults(handler=_missing_subcommand)
    commands = parser.add_subparsers(
        dest="profile_command", metavar="SUBCOMMAND", parser_class=type(parser)
    )
    _add_train(commands)
    _add_infer(commands)
    _add_memory(commands)


def _add_schedule(parser: argparse.ArgumentParser, out: str) -> None:
    parser.add_argument(
        "--out", default=out, help=f"directory for trace.json and result.json (default {out})"
    )
    parser.add_argument(
        "--wait", type=int, default=1, help="steps run before profiling (default 1)"
    )
    parser.add_argument(
        "--warmup", type=int, default=1, help="profiled but discarded steps (default 1)"
    )
    parser.add_argument("--active", type=int, default=3, help="recorded steps (default 3)")
    parser.add_argument(
        "--top", type=int, default=10, help="operators/kernels to list (default 10)"
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def _add_train(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "train",
        help="profile a few steps of a rocmkit training config",
        description="Runs wait+warmup+active steps of a rocmkit.train config under torch.profiler. "
        "Extra --section.key value pairs override the config (e.g. --train.micro_batch 4).",
    )
    parser.add_argument("--preset", help="a rocmkit.train preset (gpt-tiny, gpt2-124m, ...)")
    parser.add_argument("--config", help="TOML file with [model] [data] [train] ... sections")
    parser.add_argument(
        "--monitor-memory", action="store_true", help="sample memory; write memory.json"
    )
    _add_schedule(parser, "runs/profile-train")
    parser.set_defaults(handler=run_train, accepts_overrides=True)


def _add_infer(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "infer", help="profile generate() calls of a local Hugging Face model"
    )
    parser.add_argument("model_dir", help="local directory with config.json and weights")
    parser.add_argument("--prompt", default="The quick brown fox", help="prompt text")
    parser.add_argument(
        "--max-new-tokens", type=int, default=16, help="tokens per call (default 16)"
    )
    _add_schedule(parser, "runs/profile-infer")
    parser.set_defaults(handler=run_infer)


def _add_memory(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "memory",
        help="estimate parameters/gradients/optimizer/activations memory per device",
        description="Give --preset or all of --n-layer --d-model --n-head --seq-len --vocab-size.",
    )
    parser.add_argument("--preset", help="a GPT preset of rocmkit.train (gpt-tiny, gpt2-124m, ...)")
    for name in ("n-layer", "d-model", "n-head", "seq-len", "vocab-size"):
        parser.add_argument(f"--{name}", type=int, help="model shape (overrides the preset)")
    parser.add_argument("--precision", choices=["fp32", "fp16", "bf16", "int8"], default=None)
    parser.add_argument("--parallel", choices=_PARALLEL_CHOICES, default="none", help="sharding")
    parser.add_argument("--world-size", type=int, default=1, help="data-parallel ranks")
    parser.add_argument("--micro-batch", type=int, help="samples per device (default: preset's)")
    parser.add_argument("--activation-checkpointing", action="store_true")
    parser.add_argument(
        "--master-weights", action="store_true", help="16-bit params + fp32 master copy"
    )
    parser.add_argument(
        "--mode", choices=["train", "infer"], help="default: infer for int8, else train"
    )
    parser.add_argument("--measure", action="store_true", help="run one step here and compare")
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "gpu"),
        default="auto",
        help="where --measure runs its step (auto: the GPU when there is one)",
    )
    parser.add_argument("--plot", help="write the breakdown chart (PNG) here")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(handler=run_memory)


def _missing_subcommand(args: argparse.Namespace) -> int:
    raise UserError(
        "profile needs a subcommand: train, infer or memory (see rocmkit profile --help)"
    )


def _schedule(args: argparse.Namespace) -> Any:
    from rocmkit.profile.trace import ProfileSchedule

    if args.top < 1:
        raise UserError(f"--top must be at least 1 (got {args.top})")
    return ProfileSchedule(wait=args.wait, warmup=args.warmup, active=args.active)


def run_train(args: argparse.Namespace) -> int:
    from rocmkit.config import parse_overrides
    from rocmkit.platform import detect
    from rocmkit.profile.runs import profile_training
    from rocmkit.profile.trace import check_writable
    from rocmkit.train import load_train_config

    if not args.preset and not args.config:
        raise UserError("profile train needs --preset NAME or --config FILE")
    schedule = _schedule(args)
    overrides = parse_overrides(getattr(args, "overrides", None) or [])
    if overrides.pop("train.steps", None) is not None:
        warn_once(
            "--train.steps has no effect here: the profile runs --wait + --warmup + --active steps"
        )
    config = load_train_config(preset=args.preset, path=args.config, overrides=overrides)
    out = Path(args.out)
    check_writable(out / "trace.json")
    platform = detect()
    if config.train.device == "cpu":  # the profile follows the config's device, as train does
        platform = dataclasses.replace(platform, gpu_available=False)
    from rocmkit.cli.console import progress

    with progress("profile train", total=schedule.num_steps, enabled=not args.json) as bar:
        profile = profile_training(
            config,
            out_dir=out,
            schedule=schedule,
            platform=platform,
            monitor_memory=args.monitor_memory,
            top_k=args.top,
            on_step=lambda metrics: bar.advance(info=f"step {metrics.step}"),
        )
    name = args.preset or Path(args.config).stem
    _save_result("profile-train", name, profile.summary, config_dict(config), platform, out)
    if args.json:
        print(json.dumps(_summary_json(profile.summary, profile.hints), indent=2))
        return 0
    _render_summary(profile.summary, profile.hints, title=f"profile train {name}")
    if profile.memory is not None:
        print(f"memory peak {_gib(profile.memory.peak_allocated_bytes)} ({profile.memory.source})")
    print(f"trace: {profile.trace_path} (open in https://ui.perfetto.dev)")
    return 0


def config_dict(config: Any) -> dict[str, Any]:
    from rocmkit.config import to_dict

    return to_dict(config)


def run_infer(args: argparse.Namespace) -> int:
    from rocmkit.platform import detect
    from rocmkit.profile.runs import profile_inference
    from rocmkit.profile.trace import check_writable

    schedule = _schedule(args)
    if args.max_new_tokens < 1:
        raise UserError(f"--max-new-tokens must be at least 1 (got {args.max_new_tokens})")
    model_dir = Path(args.model_dir)
    if not model_dir.is_dir():
        raise UserError(f"model directory not found: {model_dir}")
    if not (model_dir / "config.json").is_file():  # before the output directory is created
        raise UserError(f"{model_dir} is not a Hugging Face model directory (no config.json)")
    out = Path(args.out)
    check_writable(out / "trace.json")
    platform = detect()
    profile = profile_inference(
        model_dir,
        out_dir=out,
        schedule=schedule,
        platform=platform,
        prompt=args.prompt,
        max_new_tokens=args.max_new_tokens,
        top_k=args.top,
    )
    config = {"model_dir": str(model_dir), "max_new_tokens": args.max_new_tokens}
    _save_result("profile-infer", model_dir.name, profile.summary, config, platform, out)
    if args.json:
        print(json.dumps(_summary_json(profile.summary, profile.hints), indent=2))
        return 0
    _render_summary(profile.summary, profile.hints, title=f"profile infer {model_dir.name}")
    print(f"trace: {profile.trace_path} (open in https://ui.perfetto.dev)")
    return 0


def _save_result(
    kind: str, name: str, summary: Any, config: dict[str, Any], platform: Any, out: Path
) -> None:
    from rocmkit.results import RunResult

    result = RunResult(
        kind=kind,
        environment=platform.record(),
        config=config,
        measurements=summary.measurements(name=name),
    )
    try:
        result.save(out)
    except OSError as exc:
        raise UserError(f"cannot write {out}/result.json: {exc.strerror or exc}") from None


def _summary_json(summary: Any, hints: list[Any]) -> dict[str, Any]:
    import dataclasses

    data = dataclasses.asdict(summary)
    data["category_share"] = summary.category_share
    data["data_share"] = summary.data_share
    data["hints"] = [dataclasses.asdict(h) for h in hints]
    return data


def _render_summary(summary: Any, hints: list[Any], *, title: str) -> None:
    from rich.table import Table

    from rocmkit.cli.console import make_console

    console = make_console()
    per_step = f"{summary.step_time_us / 1e3:.2f} ms/step over {summary.num_steps} steps"
    launches = (
        f", {summary.kernels_per_step:.0f} kernel launches/step"
        if summary.kernels_per_step is not None
        else f", {summary.ops_per_step:.0f} top-level host ops/step (no GPU kernels)"
    )
    console.print(f"[bold]{title}[/bold]: {summary.timeline} timeline, {per_step}{launches}")
    shares = Table(title="where the step time went")
    for column in ("category", "ms/step", "share"):
        shares.add_column(column, justify="right" if column != "category" else "left")
    for category, share in sorted(summary.category_share.items(), key=lambda kv: -kv[1]):
        time_ms = summary.category_time_us[category] / 1e3
        shares.add_row(category, f"{time_ms:.3f}", f"{100 * share:.1f}%")
    console.print(shares)
    if summary.data_share is not None:
        console.print(
            f"data loading (batch fetch, overlaps the shares above): "
            f"{summary.data_time_us / 1e3:.3f} ms/step, {100 * summary.data_share:.1f}%"
        )
    top = Table(title="top operators/kernels by self time")
    for column in ("name", "category", "ms/step", "calls/step"):
        top.add_column(column, overflow="fold")
    for op in summary.top_ops:
        top.add_row(op.short_name, op.category, f"{op.self_time_us / 1e3:.3f}", str(op.count))
    console.print(top)
    _render_hints(console, hints)


def _render_hints(console: Any, hints: list[Any]) -> None:
    if not hints:
        console.print("hints: none (no rule found its evidence)")
        return
    for hint in hints:
        console.print(
            f"[yellow]hint[/yellow] {hint.rule}: {hint.change} [dim]({hint.evidence})[/dim]"
        )


def _gib(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 2**30:.2f} GiB"


def run_memory(args: argparse.Namespace) -> int:
    from rocmkit.profile.estimator import chart_configs, estimate
    from rocmkit.profile.trace import check_writable
    from rocmkit.report.memory_chart import render_memory_chart

    config = _estimate_config(args)
    if args.plot:
        check_writable(Path(args.plot))
    predicted = estimate(config)
    comparison = None
    if args.measure:
        from rocmkit.platform import detect
        from rocmkit.profile.runs import compare_with_measurement

        device = _measure_device(detect(), args.device)
        comparison = compare_with_measurement(config, preset=args.preset, device=device).to_dict()
    if args.plot:
        estimates = [
            estimate(c) for c in chart_configs(config, world_size=max(config.world_size, 8))
        ]
        if predicted.label not in {e.label for e in estimates}:
            estimates.append(predicted)
        render_memory_chart(estimates, args.plot, title=_chart_title(args, config))
    if args.json:
        print(json.dumps(_estimate_json(predicted, comparison), indent=2))
    else:
        _render_estimate(predicted, comparison)
        if args.plot:
            print(f"chart: {args.plot}")
    return 0


def _measure_device(platform: Any, choice: str) -> str:
    if choice == "cpu":
        return "cpu"
    if choice == "gpu" and not platform.gpu_available:
        raise UserError("--device gpu: torch sees no usable GPU here; use cpu or auto")
    return str(platform.torch_device)


def _chart_title(args: argparse.Namespace, config: Any) -> str:
    name = args.preset or "GPT"
    return f"{name}: memory per device, micro-batch {config.micro_batch}"


def _estimate_config(args: argparse.Namespace) -> Any:
    """The EstimateConfig the flags ask for (a preset's shape, batch and precision as defaults)."""
    from rocmkit.profile.estimator import EstimateConfig, ModelShape, normalise_sharding
    from rocmkit.profile.runs import shape_from_model_config

    train_config = _train_config(args.preset) if args.preset else None
    if train_config is not None:
        shape = shape_from_model_config(train_config.model)
    else:
        missing = [
            n
            for n in ("n_layer", "d_model", "n_head", "seq_len", "vocab_size")
            if getattr(args, n) is None
        ]
        if missing:
            raise UserError(
                f"give --preset NAME or the model shape (missing --{missing[0].replace('_', '-')})"
            )
        shape = ModelShape(n_layer=1, d_model=1, n_head=1, seq_len=1, vocab_size=1)
    shape = _override_shape(shape, args)
    default_batch = train_config.train.micro_batch if train_config else 1
    default_precision = train_config.precision.dtype if train_config else "bf16"
    mode: Any = args.mode or ("infer" if args.precision == "int8" else "train")
    precision: Any = args.precision or default_precision
    config = EstimateConfig(
        shape=shape,
        precision=precision,
        sharding=normalise_sharding(args.parallel),  # type: ignore[arg-type]
        world_size=args.world_size,
        micro_batch=args.micro_batch if args.micro_batch is not None else default_batch,
        activation_checkpointing=args.activation_checkpointing,
        master_weights=args.master_weights,
        mode=mode,
        chunked_loss=_chunked_loss(train_config, precision, args.master_weights),
    )
    return config


def _chunked_loss(train_config: Any, precision: str, master_weights: bool) -> bool:
    """Whether rocmkit's training runs this configuration with the chunked head + loss."""
    from rocmkit.train.models.loss import resolve_loss_impl

    setting = train_config.model.loss_impl if train_config is not None else "auto"
    compiled = bool(train_config.train.compile) if train_config is not None else False
    mixed = precision in ("bf16", "fp16") and not master_weights
    return resolve_loss_impl(setting, compiled=compiled, mixed_precision=mixed) == "chunked"


def _train_config(preset: str) -> Any:
    from rocmkit.train import load_train_config

    return load_train_config(preset=preset, world_size=1)


def _override_shape(shape: Any, args: argparse.Namespace) -> Any:
    from dataclasses import replace

    given = {n: getattr(args, n) for n in ("n_layer", "d_model", "n_head", "seq_len", "vocab_size")}
    return replace(shape, **{k: v for k, v in given.items() if v is not None})


def _estimate_json(predicted: Any, comparison: dict[str, Any] | None) -> dict[str, Any]:
    import dataclasses

    config = dataclasses.asdict(predicted.config)
    return {
        "config": config,
        "label": predicted.label,
        "num_params": predicted.num_params,
        "bytes": predicted.categories()
        | {"total": predicted.total_bytes, "peak": predicted.peak_bytes},
        "notes": list(predicted.notes),
        "measured": comparison,
    }


def _render_estimate(predicted: Any, comparison: dict[str, Any] | None) -> None:
    from rich.table import Table

    from rocmkit.cli.console import make_console
    from rocmkit.report.memory_chart import memory_unit

    console = make_console()
    cfg = predicted.config
    console.print(
        f"[bold]{predicted.label}[/bold]: {predicted.num_params / 1e6:.1f}M parameters, micro-batch "
        f"{cfg.micro_batch} x {cfg.shape.seq_len} tokens, per device"
    )
    unit, scale = memory_unit(predicted.total_bytes)
    table = Table()
    table.add_column("category")
    table.add_column(unit, justify="right")
    for name, value in predicted.categories().items():
        table.add_row(name, f"{value / scale:.3f}")
    table.add_row("[bold]total[/bold]", f"[bold]{predicted.total_bytes / scale:.3f}[/bold]")
    if predicted.peak_bytes is not None:
        table.add_row("peak in time", f"{predicted.peak_bytes / scale:.3f}")
    console.print(table)
    for note in predicted.notes:
        console.print(f"[dim]note: {note}[/dim]")
    if comparison is not None:
        _render_comparison(console, comparison)


def _render_comparison(console: Any, comparison: dict[str, Any]) -> None:
    from rich.table import Table

    title = f"estimate vs measured on {comparison['device']} ({comparison['source']})"
    table = Table(title=title)
    for column in ("category", "estimated MiB", "measured MiB", "error"):
        table.add_column(column, justify="left" if column == "category" else "right")
    for name, row in comparison["rows"].items():
        error = "n/a" if row["error"] is None else f"{100 * row['error']:+.1f}%"
        table.add_row(
            name, f"{row['estimated'] / 2**20:.2f}", f"{row['measured'] / 2**20:.2f}", error
        )
    console.print(table)
    if comparison["note"]:
        console.print(f"[dim]measured: {comparison['note']}[/dim]")
