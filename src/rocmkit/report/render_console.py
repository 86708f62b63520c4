"""Console rendering with rich: a summary panel per run, notes, one table per suite."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table as RichTable

from rocmkit.report.document import ReportDocument
from rocmkit.report.tables import Table


def rich_table(table: Table) -> RichTable:
    out = RichTable(title=table.title, title_justify="left", show_lines=False)
    for i, column in enumerate(table.columns):
        if i == 0:
            out.add_column(column, justify="left", no_wrap=True)
        else:
            out.add_column(column, justify="right", overflow="fold")
    for row in table.rows:
        out.add_row(*row)
    return out


def print_summary(
    summary: list[tuple[str, str]], console: Console, heading: str = "Environment"
) -> None:
    grid = RichTable.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    for key, value in summary:
        grid.add_row(key, value)
    console.print(f"[bold]{heading}[/bold]")
    console.print(grid)


def render_console(doc: ReportDocument, console: Console) -> None:
    console.print(f"[bold underline]{doc.title}[/bold underline]")
    for label, summary in zip(doc.labels, doc.summaries, strict=True):
        print_summary(summary, console, f"Environment: {label}")
    for note in doc.notes:
        console.print(f"[yellow]note:[/yellow] {note}")
    for table in doc.tables:
        console.print()
        console.print(rich_table(table))
        for note in table.notes:
            console.print(f"  [dim]{note}[/dim]")
