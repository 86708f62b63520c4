"""Markdown rendering of a ReportDocument (tables only; plots live in the HTML report)."""

from __future__ import annotations

from rocmkit.report.document import ReportDocument
from rocmkit.report.tables import Table


def _escape(cell: str) -> str:
    return cell.replace("|", "\\|").replace("\n", " ")


def markdown_table(table: Table) -> str:
    lines = [
        "| " + " | ".join(_escape(c) for c in table.columns) + " |",
        "|" + "|".join("---" if i == 0 else "---:" for i in range(len(table.columns))) + "|",
    ]
    lines += ["| " + " | ".join(_escape(c) for c in row) + " |" for row in table.rows]
    return "\n".join(lines)


def render_markdown(doc: ReportDocument) -> str:
    parts = [f"# {doc.title}", ""]
    for label, summary in zip(doc.labels, doc.summaries, strict=True):
        parts += [f"## Environment: {label}", ""]
        parts += [f"- **{key}**: {_escape(value)}" for key, value in summary]
        parts.append("")
    if doc.notes:
        parts += ["## Notes", ""] + [f"- {note}" for note in doc.notes] + [""]
    for table in doc.tables:
        parts += [f"## {table.title}", "", markdown_table(table), ""]
        parts += [f"- {note}" for note in table.notes]
        if table.notes:
            parts.append("")
    return "\n".join(parts).rstrip() + "\n"
