"""`rocmkit profile train|infer|memory`: what dominated a run, and what memory a config needs.

Argument parsing and console output only; `rocmkit.profile.commands` builds the configs and the
result documents. `--json` prints the result document (the summary and hints are in its `data`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmkit import runs
from rocmkit.cli.pipeline import add_output_options
from rocmkit.cli.train_options import add_train_shortcuts, train_overrides
from rocmkit.errors import UserError

if TYPE_CHECKING:
    from rich.console import Console

    from rocmkit.profile.estimator import MemoryEstimate
    from rocmkit.profile.hints import Hint
    from rocmkit.profile.summary import TraceSummary

_PARALLEL_CHOICES = ["none", "ddp", "zero1", "zero2", "zero3", "fsdp"]
# A profile runs --wait + --warmup + --active steps: every short train flag but --steps.
PROFILE_SHORTCUTS = ("precision", "micro_batch", "grad_accum", "data", "parallel", "seed")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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


def _add_schedule(parser: argparse.ArgumentParser) -> None:
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


def _add_train(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "train",
        help="profile a few steps of a rocmkit training config",
        description="Runs wait+warmup+active steps of a rocmkit.train config under torch.profiler. "
        "Short flags as in rocmkit train (--precision bf16 --micro-batch 4); extra "
        "--section.key value pairs override any setting (e.g. --train.lr 1e-3).",
    )
    parser.add_argument("--preset", help="a rocmkit.train preset (gpt-tiny, gpt2-124m, ...)")
    parser.add_argument("--config", help="TOML file with [model] [data] [train] ... sections")
    add_train_shortcuts(parser, PROFILE_SHORTCUTS)
    _add_schedule(parser)
    add_output_options(parser, "profile-train", monitor_memory=True, out_help=_out_help("train"))
    parser.set_defaults(handler=run_train, accepts_overrides=True)


def _out_help(what: str) -> str:
    return f"directory for trace.json and result.json (default: runs/profile-{what}-<UTC stamp>)"


def _add_infer(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "infer", help="profile generate() calls of a local Hugging Face model"
    )
    parser.add_argument("model_dir", help="local directory with config.json and weights")
    parser.add_argument("--prompt", default="The quick brown fox", help="prompt text")
    parser.add_argument(
        "--max-new-tokens", type=int, default=16, help="tokens per call (default 16)"
    )
    _add_schedule(parser)
    add_output_options(parser, "profile-infer", out_help=_out_help("infer"))
    parser.set_defaults(handler=run_infer)


def _add_memory(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    add_output_options(
        parser,
        "profile-memory",
        out_help="save the estimate as DIR/result.json (default: write no file; an estimate "
        "takes a moment to make again)",
    )
    parser.set_defaults(handler=run_memory)


def _missing_subcommand(args: argparse.Namespace) -> int:
    raise UserError(
        "profile needs a subcommand: train, infer or memory (see rocmkit profile --help)"
    )


def _schedule(args: argparse.Namespace) -> Any:
    from rocmkit.profile.commands import make_schedule

    return make_schedule(wait=args.wait, warmup=args.warmup, active=args.active, top=args.top)


def run_train(args: argparse.Namespace) -> int:
    from rocmkit.cli.pipeline import emit
    from rocmkit.config import parse_overrides
    from rocmkit.console import progress
    from rocmkit.platform import detect
    from rocmkit.profile.commands import profile_train_config, run_profile_train
    from rocmkit.runs import resolve_out

    schedule = _schedule(args)
    overrides: dict[str, Any] = train_overrides(args, PROFILE_SHORTCUTS)
    overrides.update(parse_overrides(getattr(args, "overrides", None) or []))
    config = profile_train_config(preset=args.preset, path=args.config, overrides=overrides)
    out = resolve_out(args.out, "profile-train")
    with progress("profile train", total=schedule.num_steps, enabled=not args.json) as bar:
        profile, record = run_profile_train(
            config,
            detect(),
            out=out,
            schedule=schedule,
            monitor_memory=args.monitor_memory,
            top_k=args.top,
            on_step=lambda metrics: bar.advance(info=f"step {metrics.step}"),
        )
    runs.save(record, out)
    name = args.preset or Path(args.config).stem

    def render(_: Any, console: Console) -> None:
        _render_summary(console, profile.summary, profile.hints, title=f"profile train {name}")
        if profile.memory is not None:
            peak = _gib(profile.memory.peak_allocated_bytes)
            console.print(f"memory peak {peak} ({profile.memory.source})")
        console.print(f"trace: {profile.trace_path} (open in https://ui.perfetto.dev)")
        console.print(f"wrote {out / 'result.json'}")

    emit(record, as_json=args.json, render=render)
    return 0


def run_infer(args: argparse.Namespace) -> int:
    from rocmkit.cli.pipeline import emit
    from rocmkit.platform import detect
    from rocmkit.profile.commands import check_model_dir, run_profile_infer
    from rocmkit.runs import resolve_out

    schedule = _schedule(args)
    model_dir = Path(args.model_dir)
    check_model_dir(model_dir)  # a wrong path is answered before torch loads
    out = resolve_out(args.out, "profile-infer")
    profile, record = run_profile_infer(
        model_dir,
        detect(),
        out=out,
        schedule=schedule,
        prompt=args.prompt,
        max_new_tokens=args.max_new_tokens,
        top_k=args.top,
    )
    runs.save(record, out)

    def render(_: Any, console: Console) -> None:
        title = f"profile infer {model_dir.name}"
        _render_summary(console, profile.summary, profile.hints, title=title)
        console.print(f"trace: {profile.trace_path} (open in https://ui.perfetto.dev)")

    emit(record, as_json=args.json, render=render)
    return 0


def _render_summary(
    console: Console, summary: TraceSummary, hints: list[Hint], *, title: str
) -> None:
    from rich.table import Table

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
    if summary.data_share is not None and summary.data_time_us is not None:
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


def _render_hints(console: Console, hints: list[Hint]) -> None:
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
    from rocmkit.atomic import check_writable_file
    from rocmkit.cli.pipeline import emit
    from rocmkit.profile.commands import (
        EstimateRequest,
        chart_estimates,
        estimate_config,
        estimate_record,
        measure_device,
    )
    from rocmkit.profile.estimator import estimate
    from rocmkit.report.memory_chart import render_memory_chart

    config = estimate_config(
        EstimateRequest(
            preset=args.preset,
            n_layer=args.n_layer,
            d_model=args.d_model,
            n_head=args.n_head,
            seq_len=args.seq_len,
            vocab_size=args.vocab_size,
            precision=args.precision,
            parallel=args.parallel,
            world_size=args.world_size,
            micro_batch=args.micro_batch,
            activation_checkpointing=args.activation_checkpointing,
            master_weights=args.master_weights,
            mode=args.mode,
        )
    )
    if args.plot:
        check_writable_file(Path(args.plot), what="plot file")
    if args.out:
        from rocmkit.runs import prepare_out

        prepare_out(Path(args.out))
    predicted = estimate(config)
    comparison, environment = None, None
    if args.measure:
        from rocmkit.platform import detect
        from rocmkit.profile.runs import compare_with_measurement

        platform = detect()
        device = measure_device(platform, args.device)
        comparison = compare_with_measurement(config, preset=args.preset, device=device)
        environment = platform.record()
    if args.plot:
        title = f"{args.preset or 'GPT'}: memory per device, micro-batch {config.micro_batch}"
        render_memory_chart(chart_estimates(config, predicted), args.plot, title=title)
    record = estimate_record(predicted, comparison, environment)
    if args.out:
        runs.save(record, Path(args.out))

    def render(_: Any, console: Console) -> None:
        _render_estimate(console, predicted, record.data["measured"])
        if args.plot:
            console.print(f"chart: {args.plot}")

    emit(record, as_json=args.json, render=render)
    return 0


def _render_estimate(
    console: Console, predicted: MemoryEstimate, comparison: dict[str, Any] | None
) -> None:
    from rich.table import Table

    from rocmkit.report.memory_chart import memory_unit

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


def _render_comparison(console: Console, comparison: dict[str, Any]) -> None:
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
