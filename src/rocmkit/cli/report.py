"""`rocmkit report RUN [RUN...]`: render one run, or several side by side with ratios."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit.cli.pipeline import add_output_options, print_json
from rocmkit.errors import UserError
from rocmkit.runs import prepare_out

if TYPE_CHECKING:
    from rocmkit.results import RunResult

HELP = "render result.json files as console tables, Markdown or a self-contained HTML page"
OUT_HELP = "write report.md and report.html into DIR (created if needed)"


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    add_output_options(parser, "report", out_help=OUT_HELP)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rocmkit.atomic import check_writable_file
    from rocmkit.report.files import output_format
    from rocmkit.report.load import load_runs

    fmt = output_format(args.format, args.output)
    if args.out and (args.output or args.format):
        raise UserError("--out DIR writes report.md and report.html: drop -o/--format")
    if args.output:
        check_writable_file(args.output, what="report file")
    out = prepare_out(Path(args.out)) if args.out else None
    runs = load_runs(args.runs)
    if out is not None or args.output:
        _write_files(runs, out, args.output, fmt)
    if args.json:
        from rocmkit.report.files import runs_document

        print_json(runs_document(runs))
    elif out is None and not args.output:
        _print_report(runs, fmt)
    return 0


def _write_files(runs: list[RunResult], out: Path | None, output: str | None, fmt: str) -> None:
    from rocmkit.atomic import atomic_write_text
    from rocmkit.console import make_console
    from rocmkit.report import render
    from rocmkit.report.files import write_reports

    written: tuple[Path | str, ...] = write_reports(runs, out) if out is not None else ()
    if output:
        atomic_write_text(output, render(runs, "md" if fmt == "md" else "html"))
        written = (*written, output)
    make_console(stderr=True).print(f"wrote {', '.join(map(str, written))}")


def _print_report(runs: list[RunResult], fmt: str) -> None:
    from rocmkit.console import make_console
    from rocmkit.report import build_document, render

    if fmt == "console":
        from rocmkit.report.render_console import render_console

        render_console(build_document(runs), make_console())
        return
    print(render(runs, "md" if fmt == "md" else "html"), end="")
