"""`rocmkit doctor`: check this machine's GPU/torch setup, or explain an error log."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmkit.errors import UserError

if TYPE_CHECKING:
    from rocmkit.doctor import DoctorReport, Explanation

STATUS_STYLE = {"ok": "green", "note": "cyan", "warn": "yellow", "fail": "bold red", "skip": "dim"}
MAX_LOG_BYTES = 64 * 2**20


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="check the GPU, driver, ROCm/CUDA and torch setup; explain error logs",
        description="Run environment checks (exit 0: nothing failed, 1: a check failed, 2: usage "
        "error), or match a log against known ROCm/CUDA failure signatures with --explain.",
    )
    parser.add_argument("--json", action="store_true", help="print a versioned JSON document")
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
    from rocmkit.doctor.registry import all_checks, select_checks

    if args.here and args.explain is None:
        raise UserError("--here goes with --explain FILE (the log of this machine)")
    if args.explain is not None or args.from_files:
        if args.check or args.list or (args.explain is not None and args.from_files):
            raise UserError("--explain and --from run alone: drop --check/--list/the other")
        if args.from_files:
            return _from(args.from_files, as_json=args.json, verbose=args.verbose)
        return _explain(args.explain, as_json=args.json, here=args.here)
    if args.list:
        for check in all_checks().values():
            print(f"{check.id:16} {check.title}")
        return 0
    if not args.timeout > 0:
        raise UserError(f"--timeout must be positive seconds, not {args.timeout}")
    report = _diagnose(select_checks(args.check), args.timeout)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        _render(report, verbose=args.verbose)
    return report.exit_code


def _diagnose(checks: list[Any], timeout_s: float) -> DoctorReport:
    import os

    from rocmkit.doctor.context import DoctorContext
    from rocmkit.doctor.probe import start_probe
    from rocmkit.doctor.registry import run_checks
    from rocmkit.platform import detect

    overrides: dict[str, Any] = {"probe_timeout_s": timeout_s}
    if any(c.uses_probe for c in checks):
        # Start the probe first: the child imports torch while this process runs detect().
        future = start_probe(os.environ, timeout_s)
        overrides["probe_runner"] = lambda env, timeout_s: future.result()
    ctx = DoctorContext.real(detect(), **overrides)
    return run_checks(ctx, [c.id for c in checks])


def _render(report: DoctorReport, *, verbose: bool) -> None:
    from rich.markup import escape
    from rich.table import Table

    from rocmkit.cli.console import make_console

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


def read_log(source: str) -> str:
    """The text of a log file or stdin ('-'); UserError for unreadable, huge or binary input."""
    try:
        if source == "-":
            data = sys.stdin.buffer.read(MAX_LOG_BYTES + 1)
        else:
            with Path(source).open("rb") as f:
                data = f.read(MAX_LOG_BYTES + 1)
    except IsADirectoryError:
        raise UserError(f"--explain {source}: is a directory, give a log file") from None
    except OSError as exc:
        raise UserError(f"--explain {source}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > MAX_LOG_BYTES:
        raise UserError(
            f"--explain {source}: larger than {MAX_LOG_BYTES // 2**20} MiB; pass the relevant part"
        )
    if b"\x00" in data[:65536]:
        raise UserError(f"--explain {source}: looks like a binary file, not a text log")
    return data.decode("utf-8", errors="replace")


def _from(sources: list[str], *, as_json: bool, verbose: bool) -> int:
    from rocmkit.doctor.pasted import diagnose_pasted

    texts = {}
    for source in sources:
        name = "stdin" if source == "-" else Path(source).name
        texts[name if name not in texts else source] = read_log(source)
    report = diagnose_pasted(texts)
    if as_json:
        print(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        _render(report, verbose=verbose)
    return report.exit_code


def _explain(source: str, *, as_json: bool, here: bool = False) -> int:
    from rocmkit.doctor.explain import explain

    text = read_log(source)
    platform = None
    if here:
        from rocmkit.platform import detect

        platform = detect()
    matches = explain(text, platform)
    if as_json:
        document = {
            "schema": "rocmkit.doctor.explain",
            "schema_version": 2,
            "source": source,
            "matches": [vars(m) for m in matches],
        }
        print(json.dumps(document, indent=2))
        return 0
    _print_explanations(source, text, matches)
    return 0


def _print_explanations(source: str, text: str, matches: list[Explanation]) -> None:
    from rich.markup import escape

    from rocmkit.cli.console import make_console

    console = make_console()
    name = "stdin" if source == "-" else source
    if not matches:
        console.print(f"no known failure signature in {name} ({len(text.splitlines())} lines)")
        return
    for m in matches:
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
