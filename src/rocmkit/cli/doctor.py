"""`rocmkit doctor`: check this machine's GPU/torch setup, or explain an error log."""

from __future__ import annotations

import argparse

from rocmkit.cli.pipeline import add_output_options, handler

# Non-measuring commands print their answer and save a run only when asked (they run often, in CI).
OUT_HELP = "also save the answer as DIR/result.json (nothing is saved without --out)"


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="check the GPU, driver, ROCm/CUDA and torch setup; explain error logs",
        description="Run environment checks (exit 0: nothing failed, 1: a check failed, 2: usage "
        "error), or match a log against known ROCm/CUDA failure signatures with --explain.",
    )
    add_output_options(parser, "doctor", out_help=OUT_HELP)
    parser.add_argument(
        "--check",
        action="append",
        metavar="ID",
        help="run only this check (repeatable; see --list)",
    )
    parser.add_argument("--list", action="store_true", help="list the checks and exit")
    parser.add_argument(
        "--explain", metavar="FILE", help="explain the errors in a log file ('-' reads stdin)"
    )
    parser.add_argument(
        "--here",
        action="store_true",
        help="with --explain: the log came from this machine; add what detection sees "
        "(the GPU's gfx target) where the log does not say",
    )
    parser.add_argument(
        "--from",
        dest="from_files",
        nargs="+",
        metavar="FILE",
        help="diagnose another machine from pasted outputs (rocminfo, rocm-smi, amd-smi, "
        "nvidia-smi in any format) and logs",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="seconds the device probe (smoke/sdpa/dtypes) may take before it counts as hung",
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="show each finding's detail")
    parser.set_defaults(handler=handler("rocmkit.doctor.command"))
