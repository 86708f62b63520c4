"""Console view of a `rocmkit port` run (kind "port") and of its rule list ("port-rules"), read
from the saved report document (schema `rocmkit.port` v1)."""

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
            table.add_row(
                f"[{style}]{f['severity']}[/{style}]", _where(f), f["rule_id"], finding, fix
            )
        console.print(table)
    counts = data.get("counts", {})
    said = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no findings"
    issues = data.get("issues", [])
    unreadable = f", {len(issues)} files not scanned" if issues else ""
    hint = "" if options.verbose or not findings else "  (--verbose for the sources)"
    console.print(f"{said}{unreadable} in {data.get('elapsed_s', 0):.2f}s{hint}")


def _where(finding: dict[str, Any]) -> str:
    column = f":{finding['column']}" if finding.get("column") else ""
    return f"{finding['path']}:{finding['line']}{column}"


def render_rules(result: RunResult, console: Console, options: ViewOptions) -> None:
    for rule in result.data.get("rules", []):
        console.print(f"{rule['id']:22} {rule['severity']:5}  {rule['title']}", markup=False)
