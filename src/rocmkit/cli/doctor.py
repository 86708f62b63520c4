"""`rocmkit doctor`: check this machine's GPU/torch setup, or explain an error log."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit.cli.pipeline import add_output_options, print_json
from rocmkit.errors import UserError
from rocmkit.runs import prepare_out, save

if TYPE_CHECKING:
    from rocmkit.doctor.findings import DoctorReport, ExplainReport

STATUS_STYLE = {"ok": "green", "note": "cyan", "warn": "yellow", "fail": "bold red", "skip": "dim"}
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
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rocmkit.doctor.diagnose import DoctorConfig, run_doctor
    from rocmkit.doctor.findings import ExplainReport, to_run_result

    if args.list:
        if args.explain is not None or args.from_files:
            raise UserError("--explain and --from run alone: drop --check/--list/the other")
        return _list_checks()
    config = DoctorConfig(
        checks=tuple(args.check or ()),
        timeout_s=args.timeout,
        explain=args.explain,
        here=args.here,
        from_files=tuple(args.from_files or ()),
    )
    out = prepare_out(Path(args.out)) if args.out else None
    report = run_doctor(config)
    result = to_run_result(report, config=dataclasses.asdict(config))
    if out is not None:
        print(f"wrote {save(result, out)}", file=sys.stderr)
    if args.json:
        print_json(result.data)
    elif isinstance(report, ExplainReport):
        _print_explanations(report)
    else:
        _render(report, verbose=args.verbose)
    return report.exit_code


def _list_checks() -> int:
    from rocmkit.doctor.registry import all_checks

    for check in all_checks().values():
        print(f"{check.id:16} {check.title}")
    return 0


def _render(report: DoctorReport, *, verbose: bool) -> None:
    from rich.markup import escape
    from rich.table import Table

    from rocmkit.console import make_console

    env = report.environment
    console = make_console()
    if env.get("source") == "pasted":
        files = ", ".join(env.get("files", []))
        console.print(f"[bold]rocmkit doctor --from[/bold]  pasted from another machine: {files}")
    else:
        gpus = [d for d in env.get("devices", []) if d.get("vendor") in ("amd", "nvidia")]
        console.print(
            f"[bold]rocmkit doctor[/bold]  torch {env.get('torch_version')} "
            f"({env.get('backend')} build), {len(gpus)} GPU(s), running on {env.get('torch_device')}"
        )
    fixes = any(f.fix and f.status != "ok" for f in report.findings)
    table = Table()
    for column in ("status", "check", "finding", *(["fix"] if fixes else [])):
        table.add_column(column, overflow="fold")
    for f in report.findings:
        summary = escape(f.summary) + (
            f"\n[dim]{escape(f.detail)}[/dim]" if verbose and f.detail else ""
        )
        style = STATUS_STYLE[f.status]
        fix = [escape(f.fix) if f.status != "ok" else ""] if fixes else []
        table.add_row(f"[{style}]{f.status}[/{style}]", f.id, summary, *fix)
    console.print(table)
    counts = report.counts()
    hint = "" if verbose else "  (--verbose for details)"
    console.print(", ".join(f"{n} {s}" for s, n in counts.items() if n) + hint)


def _print_explanations(report: ExplainReport) -> None:
    from rich.markup import escape

    from rocmkit.console import make_console

    console = make_console()
    name = "stdin" if report.source == "-" else report.source
    if not report.matches:
        console.print(f"no known failure signature in {name} ({report.num_lines} lines)")
        return
    for m in report.matches:
        seen = f" (x{m.count})" if m.count > 1 else ""
        level = "" if m.level == "error" else f" ({m.level})"
        # soft_wrap: a long path:line stays one token (copyable, greppable) instead of being cut.
        console.print(f"[bold]{m.id}[/bold]{level}  {name}:{m.line_number}{seen}", soft_wrap=True)
        console.print(f"  [dim]{escape(m.line)}[/dim]", soft_wrap=True)
        for number, line in m.evidence:
            where = "this machine" if number == 0 else f"{name}:{number}"
            console.print(f"  [dim]{where}: {escape(line)}[/dim]", soft_wrap=True)
        console.print(f"  cause: {escape(m.cause)}")
        console.print(f"  fix:   {escape(m.fix)}\n")
