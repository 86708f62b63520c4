"""`rocmkit report RUN [RUN...]`: render one run, or several side by side with ratios."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "render result.json files as console tables, Markdown or a self-contained HTML page"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help=HELP, description=HELP)
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="run directory or result.json (the first is the baseline of ratios)",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the report here (format from the suffix unless --format)",
    )
    parser.add_argument(
        "--format",
        choices=("html", "md", "console"),
        help="default: from -o's suffix, else console",
    )
    parser.set_defaults(handler=run)


def output_format(fmt: str | None, output: str | None) -> str:
    """--format wins; else .md -> md, .html/.htm -> html; no -o -> console."""
    from rocmkit.errors import UserError

    if fmt:
        if fmt == "console" and output:
            raise UserError(
                "--format console prints to the terminal; drop -o or pick --format html|md"
            )
        return fmt
    if output is None:
        return "console"
    suffix = Path(output).suffix.lower()
    if suffix in (".md", ".markdown"):
        return "md"
    if suffix in (".html", ".htm"):
        return "html"
    raise UserError(f"cannot tell the format of {output}: use a .html or .md name, or --format")


def run(args: argparse.Namespace) -> int:
    from rocmkit.atomic import atomic_write_text
    from rocmkit.cli.console import make_console
    from rocmkit.report import build_document, render
    from rocmkit.report.load import load_runs

    fmt = output_format(args.format, args.output)
    runs = load_runs(args.runs)
    if fmt == "console":
        from rocmkit.report.render_console import render_console

        render_console(build_document(runs), make_console())
        return 0
    text = render(runs, "md" if fmt == "md" else "html")
    if args.output:
        atomic_write_text(args.output, text)
        make_console(stderr=True).print(f"wrote {args.output}")
    else:
        print(text, end="")
    return 0
