"""Console view of a `rocmkit port` run (kind "port") and of its rule list ("port-rules"), read
from the saved report document (schema `rocmkit.port` v2: one finding per rule and file, with
every line, and a per-rule summary; v1 documents still render)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from rich.console import Console

    from rocmkit.report.views import ViewOptions
    from rocmkit.results import RunResult

SEVERITY_STYLE = {"error": "bold red", "warn": "yellow", "info": "cyan"}


def render(result: RunResult, console: Console, options: ViewOptions) -> None:
    data = result.data
    for issue in data.get("issues", []):
        console.print(f"[dim]not scanned: {escape(issue['path'])}: {escape(issue['reason'])}[/dim]")
    files = sum(data.get("num_files", {}).values())
    console.print(
        f"[bold]rocmkit port[/bold]  {escape(str(data.get('root')))}: {files} files scanned"
    )
    findings: list[dict[str, Any]] = data.get("findings", [])
    if findings:
        table = Table()
        for column in ("severity", "where", "rule", "finding", "fix"):
            table.add_column(column, overflow="fold")
        for f in findings:
            style = SEVERITY_STYLE.get(f["severity"], "")
            fix = escape(f["fix"]) + (
                f"\n[dim]{escape(f['source'])}[/dim]" if options.verbose else ""
            )
            finding = f"{escape(f['title'])}\n[dim]{escape(f['evidence'])}[/dim]"
            if f.get("note"):
                finding += f"\n[dim italic]{escape(f['note'])}[/dim italic]"
            table.add_row(
                f"[{style}]{f['severity']}[/{style}]", _where(f), f["rule_id"], finding, fix
            )
        console.print(table)
    _summary(data.get("summary", []), console)
    counts = data.get("counts", {})
    said = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no findings"
    issues = data.get("issues", [])
    unreadable = f", {len(issues)} files not scanned" if issues else ""
    hidden = data.get("num_below_floor", 0)
    suppressed = data.get("num_suppressed", 0)
    extra = (f", {hidden} info hidden (--show-info)" if hidden else "") + (
        f", {suppressed} suppressed (ignore comments / baseline)" if suppressed else ""
    )
    ignored = data.get("git_ignored", [])
    if ignored:
        extra += f", {len(ignored)} git-ignored paths skipped (--no-gitignore)"
    hint = "" if options.verbose or not findings else "  (--verbose for the sources)"
    console.print(f"{said}{unreadable}{extra} in {data.get('elapsed_s', 0):.2f}s{hint}")


def _summary(rows: list[dict[str, Any]], console: Console) -> None:
    """One line per rule: what a maintainer reads first (only worth it past a few findings)."""
    if len(rows) < 2:
        return
    console.print("[bold]by rule[/bold]")
    for row in rows:
        style = SEVERITY_STYLE.get(row["severity"], "")
        where = ", ".join(row["where"]) + (" ..." if row["files"] > len(row["where"]) else "")
        console.print(
            f"  [{style}]{row['severity']:5}[/{style}] {escape(row['rule_id']):22} "
            f"{row['places']} places in {row['files']} files: {escape(where)}"
        )


def _where(finding: dict[str, Any]) -> str:
    column = f":{finding['column']}" if finding.get("column") else ""
    lines = finding.get("lines") or []
    more = ""
    if len(lines) > 1:
        shown = ",".join(str(n) for n in lines[1:6])
        more = f"\n(+{len(lines) - 1}: {shown}{',...' if len(lines) > 6 else ''})"
    return f"{finding['path']}:{finding['line']}{column}{more}"


def render_rules(result: RunResult, console: Console, options: ViewOptions) -> None:
    for rule in result.data.get("rules", []):
        console.print(f"{rule['id']:22} {rule['severity']:5}  {rule['title']}", markup=False)
