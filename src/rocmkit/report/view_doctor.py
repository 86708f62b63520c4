"""Console view of a `rocmkit doctor` run (kind "doctor"): the findings table of a machine (here
or pasted with --from), or the explanations of a log (--explain), read from the saved document."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from rich.console import Console

    from rocmkit.report.views import ViewOptions
    from rocmkit.results import RunResult

STATUS_STYLE = {"ok": "green", "note": "cyan", "warn": "yellow", "fail": "bold red", "skip": "dim"}
EXPLAIN_SCHEMA = "rocmkit.doctor.explain"


def render(result: RunResult, console: Console, options: ViewOptions) -> None:
    if result.data.get("schema") == EXPLAIN_SCHEMA:
        _explanations(result.data, console)
    else:
        _findings(result.data, console, verbose=options.verbose)


def render_checks(result: RunResult, console: Console, options: ViewOptions) -> None:
    for check in result.data.get("checks", []):
        console.print(f"{check['id']:16} {check['title']}", markup=False)


def _findings(data: dict[str, Any], console: Console, *, verbose: bool) -> None:
    env = data.get("environment", {})
    if env.get("source") == "pasted":
        files = ", ".join(env.get("files", []))
        console.print(f"[bold]rocmkit doctor --from[/bold]  pasted from another machine: {files}")
    else:
        gpus = [d for d in env.get("devices", []) if d.get("vendor") in ("amd", "nvidia")]
        console.print(
            f"[bold]rocmkit doctor[/bold]  torch {env.get('torch_version')} "
            f"({env.get('backend')} build), {len(gpus)} GPU(s), running on {env.get('torch_device')}"
        )
    findings: list[dict[str, Any]] = data.get("findings", [])
    fixes = any(f.get("fix") and f["status"] != "ok" for f in findings)
    table = Table()
    for column in ("status", "check", "finding", *(["fix"] if fixes else [])):
        table.add_column(column, overflow="fold")
    for f in findings:
        detail = f"\n[dim]{escape(f['detail'])}[/dim]" if verbose and f.get("detail") else ""
        style = STATUS_STYLE.get(f["status"], "")
        fix = [escape(f.get("fix", "")) if f["status"] != "ok" else ""] if fixes else []
        table.add_row(
            f"[{style}]{f['status']}[/{style}]", f["id"], escape(f["summary"]) + detail, *fix
        )
    console.print(table)
    counts = data.get("counts", {})
    hint = "" if verbose else "  (--verbose for details)"
    console.print(", ".join(f"{n} {s}" for s, n in counts.items() if n) + hint)


def _explanations(data: dict[str, Any], console: Console) -> None:
    source = data.get("source", "")
    name = "stdin" if source == "-" else source
    matches: list[dict[str, Any]] = data.get("matches", [])
    if not matches:
        console.print(f"no known failure signature in {name} ({data.get('num_lines', 0)} lines)")
        return
    for m in matches:
        seen = f" (x{m['count']})" if m.get("count", 1) > 1 else ""
        level = "" if m.get("level", "error") == "error" else f" ({m['level']})"
        # Explain schema 3: how sure, and which line is the cause (the rest follow from it).
        if m.get("confidence"):
            level += escape(f" [{m['confidence']}]")
        if m.get("first_failure") and len(matches) > 1:
            level += " first failure"
        # soft_wrap: a long path:line stays one token (copyable, greppable) instead of being cut.
        console.print(
            f"[bold]{m['id']}[/bold]{level}  {name}:{m['line_number']}{seen}", soft_wrap=True
        )
        console.print(f"  [dim]{escape(m['line'])}[/dim]", soft_wrap=True)
        for number, line in m.get("evidence", []):
            where = "this machine" if number == 0 else f"{name}:{number}"
            console.print(f"  [dim]{where}: {escape(line)}[/dim]", soft_wrap=True)
        if m.get("code"):
            console.print(f"  code:  {escape(m['code'])}", soft_wrap=True)
        deciding = ", ".join(f"{k}={v}" for k, v in (m.get("deciding") or {}).items())
        if deciding:
            console.print(f"  facts: {escape(deciding)}", soft_wrap=True)
        console.print(f"  cause: {escape(m['cause'])}")
        if m.get("candidates"):
            console.print(f"  candidates: {escape('; '.join(m['candidates']))}")
        if m.get("fix"):
            console.print(f"  fix:   {escape(m['fix'])}")
        if m.get("ask"):
            console.print(f"  run:   {escape(m['ask'])}", soft_wrap=True)
        console.print("")
