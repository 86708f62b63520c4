"""`rocmkit doctor`: check this machine's GPU/torch setup, or explain an error log.

Argument declarations only: the flags are generated from `rocmkit.doctor.diagnose.DoctorConfig`.
"""

from __future__ import annotations

import argparse

from rocmkit.cli.pipeline import add_config_flags, add_output_options, handler

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
    add_config_flags(parser, "rocmkit.doctor.diagnose", "DoctorConfig")
    parser.add_argument("--list", action="store_true", help="list the checks and exit")
    parser.add_argument("--verbose", "-v", action="store_true", help="show each finding's detail")
    parser.set_defaults(handler=handler("rocmkit.doctor.command"))
