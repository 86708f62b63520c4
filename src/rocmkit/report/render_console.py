"""Console rendering with rich: a summary panel per run, notes, one table per suite.

Every text that comes from a run (cells, notes, labels, skip reasons) is escaped: rich reads
`pip install 'rocmkit[jax]'` as markup and prints `pip install 'rocmkit'`."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable

from rocmkit.report.document import ReportDocument
from rocmkit.report.tables import Table


def rich_table(table: Table, columns: int | None = None) -> RichTable:
    """The first `columns` columns of `table` (all by default); cells never wrap, so a number
    is never split over two lines."""
    count = len(table.columns) if columns is None else columns
    out = RichTable(title=escape(table.title), title_justify="left", show_lines=False)
    for i, column in enumerate(table.columns[:count]):
        out.add_column(escape(column), justify="left" if i == 0 else "right", no_wrap=True)
    for row in table.rows:
        out.add_row(*map(escape, row[:count]))
    return out


def fitted_table(table: Table, width: int, console: Console) -> tuple[RichTable, list[str]]:
    """The table as wide as fits `width`: columns are dropped from the right (the first ones
    name the row and carry the figures people compare first), and the dropped ones are named."""
    count = len(table.columns)
    unbounded = console.options.update(max_width=1_000_000)  # the natural width, not the screen's
    while (
        count > 2 and console.measure(rich_table(table, count), options=unbounded).maximum > width
    ):
        count -= 1
    return rich_table(table, count), list(table.columns[count:])


def print_summary(
    summary: list[tuple[str, str]], console: Console, heading: str = "Environment"
) -> None:
    grid = RichTable.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    for key, value in summary:
        grid.add_row(escape(key), escape(value))
    console.print(f"[bold]{escape(heading)}[/bold]")
    console.print(grid)


def render_console(doc: ReportDocument, console: Console) -> None:
    console.print(f"[bold underline]{escape(doc.title)}[/bold underline]")
    for label, summary in zip(doc.labels, doc.summaries, strict=True):
        print_summary(summary, console, f"Environment: {label}")
    for note in doc.notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")
    for table in doc.tables:
        console.print()
        fitted, dropped = fitted_table(table, console.width, console)
        console.print(fitted)
        if dropped:
            console.print(
                f"  [dim]left out at this width: {escape(', '.join(dropped))} "
                "(in result.json and report.md)[/dim]"
            )
        for note in table.notes:
            console.print(f"  [dim]{escape(note)}[/dim]")
