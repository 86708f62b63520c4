"""`rocmkit bench`: run benchmark suites, write result.json + report.html + report.md into a run dir.

With no arguments: the quick default suite (gemm, bandwidth, train-precision) sized for the device;
`--full` adds attention and uses more sizes.
Any suite setting can be overridden with dotted flags, e.g. `--gemm.sizes 256,512 --gemm.dtypes fp32`.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from rocmkit.bench import BenchConfig
    from rocmkit.platform import Platform
    from rocmkit.results import RunResult

# --full without --suite adds attention; collectives need torchrun and are always asked for by name.
FULL_SUITES = ("gemm", "bandwidth", "attention", "train-precision")
HELP = "benchmark this machine (gemm, bandwidth, collectives, attention, train-precision) and write a report"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
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
        "--json", action="store_true", help="print result.json to stdout instead of tables"
    )
    parser.add_argument(
        "--out", metavar="DIR", help="run directory (default: runs/<UTC timestamp>)"
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
    parser.add_argument(
        "--monitor-memory",
        action="store_true",
        help="sample memory during the run (GPU allocator, or process RSS on CPU); write "
        "memory.json to the run dir and the peak to result.json (suite memory)",
    )
    parser.set_defaults(handler=run, accepts_overrides=True, mode="quick")


def _config(args: argparse.Namespace, platform: Platform) -> BenchConfig:
    """Device-sized defaults <- flags <- dotted overrides (`--gemm.sizes 256,512`)."""
    from rocmkit.bench import BenchConfig
    from rocmkit.bench.suites import device_defaults
    from rocmkit.config import load_config, parse_overrides

    base: dict[str, object] = {
        "mode": args.mode,
        "power": not args.no_power,
        "device": args.device,
    }
    base.update(device_defaults(platform, args.mode))
    if args.suite:
        base["suites"] = [s.strip() for item in args.suite for s in item.split(",") if s.strip()]
    elif args.mode == "full":
        base["suites"] = list(FULL_SUITES)
    if args.label:
        base["label"] = args.label
    if args.threads is not None:
        base["threads"] = args.threads
    return load_config(
        BenchConfig, base=base, overrides=parse_overrides(getattr(args, "overrides", []) or [])
    )


def default_out_dir() -> Path:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    out, n = Path("runs") / stamp, 2
    while out.exists():
        out, n = Path("runs") / f"{stamp}-{n}", n + 1
    return out


def run(args: argparse.Namespace) -> int:
    from rocmkit.measure.noise import use_passive_wait_policy

    use_passive_wait_policy()  # before anything imports torch and starts its OpenMP pool
    from rocmkit.atomic import check_writable_dir
    from rocmkit.cli.console import make_console
    from rocmkit.platform import Platform

    # Bad suites, flags and overrides fail here in a fraction of a second, before torch loads; the
    # real config is sized once the device is known.
    _config(args, Platform(backend="cpu", torch_version=None))
    is_writer = int(os.environ.get("RANK", "0")) == 0  # under torchrun only rank 0 reports
    out = Path(args.out) if args.out else default_out_dir()
    created = not out.exists()
    if is_writer:  # refuse an unwritable --out before any suite runs, not after
        check_writable_dir(out, what="--out directory")
    try:
        result, monitor = _measure(args, out, is_writer)
    except BaseException:
        if created and is_writer and out.is_dir() and not any(out.iterdir()):
            out.rmdir()  # nothing was measured: leave no empty run directory behind
        raise
    if not is_writer:
        return 0
    if monitor is not None:
        from rocmkit.measure.memory import timeline_measurements

        result.measurements.extend(timeline_measurements(monitor.timeline, name="bench run"))
    _write_run(result, out)
    if args.json:
        sys.stdout.write(json.dumps(result.to_dict(), indent=2) + "\n")
    else:
        _print(result, out, make_console())
        if monitor is not None:
            _print_memory_peak(monitor.timeline, out)
    if result.partial:
        make_console(stderr=True).print(
            f"[yellow]partial:[/yellow] {result.partial}; finished suites saved in {out}"
        )
        return 130
    return 0


def _measure(args: argparse.Namespace, out: Path, is_writer: bool) -> tuple[RunResult, Any]:
    """Detect the platform, build the config and run the suites (under the memory monitor)."""
    from rocmkit.bench import run_bench
    from rocmkit.bench.suites import on_device
    from rocmkit.cli.console import make_console, progress
    from rocmkit.platform import detect

    platform = on_device(detect(), args.device)
    config = _config(args, platform)
    quiet = args.json or not is_writer
    console = make_console(stderr=True, quiet=quiet)
    monitoring = bool(getattr(args, "monitor_memory", False)) and is_writer
    with contextlib.ExitStack() as stack:
        monitor = stack.enter_context(_memory_monitor(out, platform)) if monitoring else None
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


def _print_memory_peak(line: Any, out: Path) -> None:
    from rocmkit.cli.console import make_console

    peak = (
        "n/a"
        if line.peak_allocated_bytes is None
        else f"{line.peak_allocated_bytes / 2**20:,.1f} MiB"
    )
    make_console().print(f"memory peak {peak} ({line.source}); timeline {out / 'memory.json'}")


def _memory_monitor(out: Path, platform: Platform) -> contextlib.AbstractContextManager[Any]:
    from rocmkit.measure.memory import monitor_run

    return monitor_run(out, device=platform.torch_device)


def _write_run(result: RunResult, out: Path) -> None:
    import importlib.util

    from rocmkit.atomic import atomic_write_text
    from rocmkit.errors import warn_once
    from rocmkit.report import render

    result.save(out)
    with_plots = importlib.util.find_spec("matplotlib") is not None
    if not with_plots:
        warn_once(
            "matplotlib is not installed: report.html has no plots (pip install 'rocmkit[plot]')"
        )
    atomic_write_text(out / "report.html", render([result], "html", with_plots=with_plots))
    atomic_write_text(out / "report.md", render([result], "md"))


def _print(result: RunResult, out: Path, console: Console) -> None:
    from rocmkit.report.document import build_document
    from rocmkit.report.render_console import render_console

    render_console(build_document([result]), console)
    console.print(f"\nwrote {out / 'result.json'}, {out / 'report.html'}, {out / 'report.md'}")
