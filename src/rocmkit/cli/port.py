"""`rocmkit port PATH`: what in a Python project breaks or silently degrades on ROCm, and the fix."""

from __future__ import annotations

import argparse
from pathlib import Path

from rocmkit.cli.pipeline import add_output_options, handler

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
    parser.add_argument(
        "path", type=Path, nargs="?", metavar="PATH", help="project directory or one file"
    )
    add_output_options(parser, "port", out_help=OUT_HELP)
    parser.add_argument(
        "--fail-on",
        choices=("info", "warn", "error", "never"),
        default="error",
        help="exit 1 when a finding is at or above this severity (default: error)",
    )
    parser.add_argument(
        "--min-severity",
        choices=("info", "warn", "error"),
        default="warn",
        help="leave findings below this severity out of the report (default: warn; info "
        "findings are shown only when asked)",
    )
    parser.add_argument(
        "--show-info", action="store_true", help="also show info findings (= --min-severity info)"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="FILE",
        help="accepted findings to leave out (a file written by --write-baseline)",
    )
    parser.add_argument(
        "--write-baseline",
        type=Path,
        metavar="FILE",
        help="write this scan's findings there as the accepted baseline",
    )
    parser.add_argument(
        "--exclude", action="append", default=[], metavar="GLOB", help="skip matching paths"
    )
    parser.add_argument(
        "--max-bytes", type=int, default=4 * 1024 * 1024, help="skip larger files (reported)"
    )
    parser.add_argument("--list-rules", action="store_true", help="list the rules and exit")
    parser.add_argument("--verbose", "-v", action="store_true", help="show each fix's source URL")
    parser.set_defaults(handler=handler("rocmkit.port.command"))
