"""A self-contained HTML report: inline CSS, plots embedded as base64 PNG, no external requests."""

from __future__ import annotations

import base64
from html import escape

from rocmkit.report.document import ReportDocument
from rocmkit.report.tables import Table

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 3px 8px; } th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.notes { color: #555; font-size: 0.85em; } .warn { color: #9a5b00; }
.envs { display: flex; gap: 2em; flex-wrap: wrap; } img.plot { max-width: 100%; display: block; }
"""


def _table_html(table: Table) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in table.columns)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td{'' if i == 0 else ' class=num'}>{escape(c)}</td>" for i, c in enumerate(row)
        )
        + "</tr>"
        for row in table.rows
    )
    notes = "".join(f"<li>{escape(n)}</li>" for n in table.notes)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>" + (
        f'<ul class="notes">{notes}</ul>' if notes else ""
    )


def _summary_html(label: str, summary: list[tuple[str, str]]) -> str:
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in summary)
    return f"<div><h3>{escape(label)}</h3><table>{rows}</table></div>"


def _plot_html(suite: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img class="plot" alt="{escape(suite)} plot" src="data:image/png;base64,{data}">'


def render_html(doc: ReportDocument, plots: dict[str, bytes] | None = None) -> str:
    """The whole report as one HTML string; `plots` maps suite name -> PNG bytes."""
    plots = plots or {}
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(doc.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(doc.title)}</h1>",
        '<div class="envs">'
        + "".join(
            _summary_html(label, s) for label, s in zip(doc.labels, doc.summaries, strict=True)
        )
        + "</div>",
    ]
    if doc.notes:
        parts.append(
            '<ul class="warn">' + "".join(f"<li>{escape(n)}</li>" for n in doc.notes) + "</ul>"
        )
    for table in doc.tables:
        parts.append(f'<section id="{escape(table.suite)}"><h2>{escape(table.title)}</h2>')
        if table.suite in plots:
            parts.append(_plot_html(table.suite, plots[table.suite]))
        parts.append(_table_html(table) + "</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
