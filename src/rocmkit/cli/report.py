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


SUFFIX_FORMATS = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html"}


def output_format(fmt: str | None, output: str | None) -> str:
    """The format from -o's suffix (.md, .html); --format must agree with it; no -o -> console."""
    from rocmkit.errors import UserError

    if output is None:
        return fmt or "console"
    if fmt == "console":
        raise UserError("--format console prints to the terminal; drop -o or pick --format html|md")
    implied = SUFFIX_FORMATS.get(Path(output).suffix.lower())
    if implied is None:
        if fmt:
            return fmt  # a name without a known suffix (report.txt, /dev/stdout): --format decides
        raise UserError(f"cannot tell the format of {output}: use a .html or .md name, or --format")
    if fmt and fmt != implied:
        raise UserError(
            f"--format {fmt} does not match {output} ({implied}); "
            f"rename the file or use --format {implied}"
        )
    return implied


def run(args: argparse.Namespace) -> int:
    from rocmkit.atomic import atomic_write_text, check_writable_file
    from rocmkit.cli.console import make_console
    from rocmkit.report import build_document, render
    from rocmkit.report.load import load_runs

    fmt = output_format(args.format, args.output)
    if args.output:
        check_writable_file(args.output, what="report file")
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
