"""`rocmkit bench`: run benchmark suites, write result.json + report.html + report.md into a run dir.

With no arguments: the quick default suite (gemm, bandwidth, train-precision) sized for the device;
`--full` adds attention and uses more sizes.
Any suite setting can be overridden with dotted flags, e.g. `--gemm.sizes 256,512 --gemm.dtypes fp32`.
"""

from __future__ import annotations

import argparse
from typing import Any

from rocmkit.cli.pipeline import add_output_options, handler
from rocmkit.cli.train_options import add_train_shortcuts
from rocmkit.errors import UserError
from rocmkit.extensions import LazyText
from rocmkit.options import parse_duration

# The train-precision suite trains each model in each dtype: these short train flags apply to it
# (`rocmkit.bench.command.build` reads the ones given from the `train_shortcuts` default).
TRAIN_SHORTCUTS = ("micro_batch", "grad_accum", "steps")
HELP = "benchmark this machine (gemm, bandwidth, collectives, attention, train-precision) and write a report"


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("bench", help=HELP, description=HELP)
    parser.add_argument(
        "--suite",
        action="append",
        metavar="NAME",
        help=LazyText(_suite_help),
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
    parser.add_argument(
        "--burn-in",
        action=BurnInAction,
        metavar="DURATION",
        help="sustained GEMM + memory pattern test on every device for DURATION (60s, 5m), "
        "results checked throughout; flags a device that errs, decays or throttles",
    )
    parser.add_argument(
        "--expect",
        metavar="FRACTION|FILE",
        help="fail (exit 1) when a figure is under its floor: a fraction of peak every %% of peak "
        "must reach (0.5), or a TOML file of floors, '\"suite/name/metric\" = value' per line",
    )
    parser.add_argument(
        "--outlier-threshold",
        type=float,
        metavar="FRACTION",
        help="under torchrun: flag a rank's figure this much worse than the fleet median "
        "(default 0.2)",
    )
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
    parser.set_defaults(
        handler=handler("rocmkit.bench.command"),
        accepts_overrides=True,
        mode="quick",
        train_shortcuts=TRAIN_SHORTCUTS,
    )


def _suite_help() -> str:
    from rocmkit.bench.suites import suite_help  # the registry loads only when help is shown

    return suite_help()


class BurnInAction(argparse.Action):
    """`--burn-in DURATION`: adds the burn-in suite and its duration (a dotted override)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        try:
            seconds = parse_duration(str(values), "--burn-in")
        except UserError as exc:
            parser.error(str(exc))
        namespace.suite = [*(getattr(namespace, "suite", None) or []), "burn-in"]
        overrides = list(getattr(namespace, "overrides", None) or [])
        namespace.overrides = [*overrides, f"suite_configs.burn_in.duration_s={seconds:g}"]
