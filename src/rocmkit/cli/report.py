"""`rocmkit report RUN [RUN...]`: render one run, or several side by side with ratios."""

from __future__ import annotations

import argparse

from rocmkit.cli.pipeline import add_output_options, handler

HELP = (
    "render result.json files as console tables, Markdown or a self-contained HTML page "
    "(port scans also as SARIF for code scanning)"
)
OUT_HELP = "write report.md and report.html into DIR (created if needed)"


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("report", help=HELP, description=HELP)
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="run directory, result.json, or a folder of runs (e.g. runs/: every run below it, "
        "sorted by name); the first is the baseline of ratios",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the report here (format from the suffix unless --format)",
    )
    parser.add_argument(
        "--format",
        choices=("html", "md", "sarif", "console"),
        help="default: from -o's suffix, else console",
    )
    add_output_options(parser, "report", out_help=OUT_HELP)
    parser.set_defaults(handler=handler("rocmkit.report.command"))
