"""`rocmkit bench`: run benchmark suites, write result.json + report.html + report.md into a run dir.

With no arguments: the quick default suite (gemm, bandwidth, train-precision) sized for the device;
`--full` adds attention and uses more sizes.
Any suite setting can be overridden with dotted flags, e.g. `--gemm.sizes 256,512 --gemm.dtypes fp32`.
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmkit.cli.pipeline import add_output_options
from rocmkit.cli.train_options import add_train_shortcuts, train_overrides

if TYPE_CHECKING:
    from rich.console import Console

    from rocmkit.bench import BenchConfig
    from rocmkit.measure.memory import MemoryTimeline
    from rocmkit.platform import Platform
    from rocmkit.results import RunResult

# The train-precision suite trains each model in each dtype: these short train flags apply to it.
TRAIN_SHORTCUTS = ("micro_batch", "grad_accum", "steps")
HELP = "benchmark this machine (gemm, bandwidth, collectives, attention, train-precision) and write a report"


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("bench", help=HELP, description=HELP)
    parser.add_argument(
        "--suite",
        action="append",
        metavar="NAME",
        help="suite to run (repeat or comma-separate): gemm, bandwidth, collectives, attention, "
        "train-precision (default: gemm,bandwidth,train-precision; --full adds attention)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--quick",
        dest="mode",
        action="store_const",
        const="quick",
        help="small sizes, short timing (default)",
    )
    mode.add_argument(
        "--full",
        dest="mode",
        action="store_const",
        const="full",
        help="more sizes and dtypes, longer timing",
    )
    parser.add_argument(
        "--label", help="name of this run in reports (default: the device model, e.g. MI300X)"
    )
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "gpu"),
        default="auto",
        help="what to measure: the GPU when there is one (auto), or the CPU even then",
    )
    parser.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="torch CPU threads (default: OMP_NUM_THREADS, else the cores free when a suite starts)",
    )
    parser.add_argument("--no-power", action="store_true", help="do not sample GPU power")
    add_output_options(
        parser,
        "bench",
        monitor_memory=True,
        out_help="run directory for result.json, report.html and report.md "
        "(default: runs/bench-<UTC stamp>)",
    )
    suite = parser.add_argument_group(
        "train-precision suite",
        "the short flags of rocmkit train, for every model the suite trains",
    )
    add_train_shortcuts(suite, TRAIN_SHORTCUTS)
    parser.set_defaults(handler=run, accepts_overrides=True, mode="quick")


def _config(args: argparse.Namespace, platform: Platform) -> BenchConfig:
    from rocmkit.bench.command import bench_config
    from rocmkit.config import parse_overrides

    return bench_config(
        platform,
        mode=args.mode,
        suites=[s.strip() for item in args.suite or [] for s in item.split(",") if s.strip()],
        label=args.label,
        threads=args.threads,
        device=args.device,
        power=not args.no_power,
        overrides=parse_overrides(getattr(args, "overrides", None) or []),
        train_shortcuts=train_overrides(args, TRAIN_SHORTCUTS),
    )


def run(args: argparse.Namespace) -> int:
    from rocmkit.measure.noise import use_passive_wait_policy

    use_passive_wait_policy()  # before anything imports torch and starts its OpenMP pool
    from rocmkit import runs
    from rocmkit.cli.pipeline import emit
    from rocmkit.console import make_console
    from rocmkit.platform import Platform

    # Bad suites, flags and overrides fail here in a fraction of a second, before torch loads; the
    # real config is sized once the device is known.
    _config(args, Platform(backend="cpu", torch_version=None))
    is_writer = runs.is_main_process()  # under torchrun only rank 0 reports
    out = runs.resolve_out(args.out, "bench")
    # Rank 0 refuses an unwritable --out before any suite runs and leaves no empty directory.
    with runs.run_directory(out) if is_writer else contextlib.nullcontext(out):
        result, monitor = _measure(args, out, is_writer)
    if not is_writer:
        return 0
    runs.add_memory(result, monitor, name="bench run")
    runs.save(result, out, reports=True)

    def render(done: RunResult, console: Console) -> None:
        _print(done, out, console)
        if monitor is not None:
            _print_memory_peak(monitor.timeline, out, console)

    emit(result, as_json=args.json, render=render)
    if result.partial:
        make_console(stderr=True).print(
            f"[yellow]partial:[/yellow] {result.partial}; finished suites saved in {out}"
        )
        return 130
    return 0


def _measure(args: argparse.Namespace, out: Path, is_writer: bool) -> tuple[RunResult, Any]:
    """Detect the platform, build the config and run the suites (under the memory monitor)."""
    from rocmkit import runs
    from rocmkit.bench import run_bench
    from rocmkit.bench.suites import on_device
    from rocmkit.console import make_console, progress
    from rocmkit.platform import detect

    platform = on_device(detect(), args.device)
    config = _config(args, platform)
    quiet = args.json or not is_writer
    console = make_console(stderr=True, quiet=quiet)
    monitoring = bool(args.monitor_memory) and is_writer
    with contextlib.ExitStack() as stack:
        monitor = stack.enter_context(
            runs.memory_monitoring(monitoring, out, device=platform.torch_device)
        )
        bar = stack.enter_context(progress("bench", total=None, enabled=not quiet))
        say = bar.print if bar.live else console.print
        started = iter(range(1, len(config.suites) + 1))

        def on_suite(name: str, num_figures: int) -> None:
            label = f"{name} ({next(started)}/{len(config.suites)})"
            bar.stage(label, total=num_figures or None)
            if not bar.live:  # logs and CI get one line per suite instead of a bar
                say(f"[bold]running {label}...[/bold]")

        result = run_bench(
            config,
            platform,
            on_suite=on_suite,
            on_note=lambda text: say(f"[yellow]note:[/yellow] {text}"),
            on_figure=bar.advance,
        )
    return result, monitor


def _print_memory_peak(line: MemoryTimeline, out: Path, console: Console) -> None:
    peak = (
        "n/a"
        if line.peak_allocated_bytes is None
        else f"{line.peak_allocated_bytes / 2**20:,.1f} MiB"
    )
    console.print(f"memory peak {peak} ({line.source}); timeline {out / 'memory.json'}")


def _print(result: RunResult, out: Path, console: Console) -> None:
    from rocmkit.cli.pipeline import render_run

    render_run(result, console)
    console.print(f"\nwrote {out / 'result.json'}, {out / 'report.html'}, {out / 'report.md'}")
