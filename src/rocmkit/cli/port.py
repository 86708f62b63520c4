"""`rocmkit port PATH`: what in a Python project breaks or silently degrades on ROCm, and the fix.

Argument declarations only: the flags are generated from `rocmkit.port.project.PortConfig`.
"""

from __future__ import annotations

import argparse

from rocmkit.cli.pipeline import add_config_flags, add_output_options, handler

# Non-measuring commands print their answer and save a run only when asked (they run often, in CI).
OUT_HELP = "also save the report as DIR/result.json (nothing is saved without --out)"


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "port",
        help="find what breaks or degrades on ROCm in a Python project, with the fix",
        description="Scan Python sources (with ast), requirements/pyproject/setup.py/"
        "environment.yml, Dockerfiles, compose files, shell scripts and .cu files for CUDA-only "
        "packages and assumptions. Exit 0: nothing at or above --fail-on; 1: findings at or "
        "above it; 2: usage error.",
    )
    add_config_flags(parser, "rocmkit.port.project", "PortConfig")
    add_output_options(parser, "port", out_help=OUT_HELP)
    parser.add_argument("--list-rules", action="store_true", help="list the rules and exit")
    parser.add_argument("--verbose", "-v", action="store_true", help="show each fix's source URL")
    parser.set_defaults(handler=handler("rocmkit.port.command"))
