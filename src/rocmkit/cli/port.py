"""`rocmkit port PATH`: what in a Python project breaks or silently degrades on ROCm, and the fix."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit.cli.pipeline import add_output_options, print_json
from rocmkit.errors import UserError
from rocmkit.runs import prepare_out, save

if TYPE_CHECKING:
    from rocmkit.port import PortReport

SEVERITY_STYLE = {"error": "bold red", "warn": "yellow", "info": "cyan"}
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
        default="info",
        help="leave findings below this severity out of the report (default: info)",
    )
    parser.add_argument(
        "--exclude", action="append", default=[], metavar="GLOB", help="skip matching paths"
    )
    parser.add_argument(
        "--max-bytes", type=int, default=4 * 1024 * 1024, help="skip larger files (reported)"
    )
    parser.add_argument("--list-rules", action="store_true", help="list the rules and exit")
    parser.add_argument("--verbose", "-v", action="store_true", help="show each fix's source URL")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rocmkit.port import PortConfig, load_rules, scan_project
    from rocmkit.port.findings import to_run_result

    if args.list_rules:
        for rule in load_rules().rules:
            print(f"{rule.id:22} {rule.severity:5}  {rule.title}")
        return 0
    if args.path is None:
        raise UserError("give the project directory (or one file) to scan: rocmkit port PATH")
    config = PortConfig(
        path=args.path,
        fail_on=args.fail_on,
        min_severity=args.min_severity,
        exclude=tuple(args.exclude),
        max_bytes=args.max_bytes,
    )
    out = prepare_out(Path(args.out)) if args.out else None
    report = scan_project(config)
    result = to_run_result(report, config)
    if out is not None:
        print(f"wrote {save(result, out)}", file=sys.stderr)
    if args.json:
        print_json(result.data)
    else:
        _render(report, verbose=args.verbose)
    return report.exit_code(config.fail_on)


def _render(report: PortReport, *, verbose: bool) -> None:
    from rich.markup import escape
    from rich.table import Table

    from rocmkit.cli.console import make_console

    console = make_console()
    err = make_console(stderr=True, highlight=False, soft_wrap=True)
    for issue in report.issues:
        err.print(f"{issue.path}: {issue.reason}", markup=False)
    files = sum(report.num_files.values())
    console.print(f"[bold]rocmkit port[/bold]  {escape(report.root)}: {files} files scanned")
    if report.findings:
        table = Table()
        for column in ("severity", "where", "rule", "finding", "fix"):
            table.add_column(column, overflow="fold")
        for f in report.findings:
            style = SEVERITY_STYLE[f.severity]
            fix = escape(f.fix) + (f"\n[dim]{escape(f.source)}[/dim]" if verbose else "")
            finding = f"{escape(f.title)}\n[dim]{escape(f.evidence)}[/dim]"
            table.add_row(f"[{style}]{f.severity}[/{style}]", f.location(), f.rule_id, finding, fix)
        console.print(table)
    counts = ", ".join(f"{n} {s}" for s, n in report.counts().items() if n) or "no findings"
    unreadable = f", {len(report.issues)} files not scanned" if report.issues else ""
    hint = "" if verbose or not report.findings else "  (--verbose for the sources)"
    console.print(f"{counts}{unreadable} in {report.elapsed_s:.2f}s{hint}")
