"""`rocmkit report RUN [RUN...]` as a command of the one driver: read result files, write report
files when asked, and return a result of kind "report" whose `data` is the runs document
(schema `rocmkit.report` v1) plus what was written; its view prints one run the way its own
command printed it, or several side by side."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from rocmkit.atomic import atomic_write_text, check_writable_dir, check_writable_file
from rocmkit.driver import Command, Context
from rocmkit.errors import UserError
from rocmkit.report.files import output_format, runs_document, text_format, write_reports
from rocmkit.report.load import expand_run_paths, load_runs
from rocmkit.results import RunResult


@dataclass(frozen=True, kw_only=True)
class ReportConfig:
    """Which runs to render and where: `output` one file (.md/.html/.sarif), `out` a directory that
    gets report.md and report.html, neither: the console (or md/html on stdout)."""

    runs: tuple[str, ...]
    format: str = "console"
    output: str | None = None
    out: str | None = None


def build(args: argparse.Namespace) -> ReportConfig:
    fmt = output_format(args.format, args.output)
    if args.out and (args.output or args.format):
        raise UserError("--out DIR writes report.md and report.html: drop -o/--format")
    if args.output:
        check_writable_file(args.output, what="report file")
    if args.out:
        check_writable_dir(Path(args.out), what="--out directory")
    return ReportConfig(runs=tuple(args.runs), format=fmt, output=args.output, out=args.out)


def run(config: ReportConfig, ctx: Context | None = None) -> RunResult:
    """Load the runs and write the report files asked for."""
    from rocmkit.report import render

    ctx = ctx or Context()
    paths, notes = expand_run_paths(config.runs)
    for note in notes:
        ctx.note(note)
    runs = load_runs(paths)
    written: list[str] = []
    if config.out is not None:
        written += map(str, write_reports(runs, Path(config.out)))
    if config.output is not None:
        atomic_write_text(config.output, render(runs, text_format(config.format)))
        written.append(config.output)
    if written:
        ctx.note(f"wrote {', '.join(written)}")
    data = dict(runs_document(runs), format=config.format, written=written)
    return RunResult(kind="report", environment={}, config=vars(config).copy(), data=data)


COMMAND = Command(name="report", build=build, run=run, saves="never")
