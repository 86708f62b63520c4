"""Reports of result.json files: console tables, Markdown, self-contained HTML with plots, comparisons.

`render(runs, "html"|"md")` returns the text; `build_document(runs)` gives the tables as values.
Any suite renders generically (rows = measurement name/params, columns = metrics), unless a layout
is registered for it (`register_layout`; the inference suites have one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from rocmkit.report.compare import Comparison, compare_runs
from rocmkit.report.document import ReportDocument, build_document
from rocmkit.report.layouts import SuiteLayout, register_layout
from rocmkit.report.tables import Table
from rocmkit.results import RunResult

Format = Literal["html", "md", "sarif"]


def render(runs: Sequence[RunResult], fmt: Format = "html", *, with_plots: bool = True) -> str:
    """Markdown or self-contained HTML for one run, or side by side for several; SARIF for
    `rocmkit port` runs."""
    if fmt == "sarif":
        from rocmkit.report.render_sarif import render_sarif

        return render_sarif(runs)
    doc = build_document(runs)
    if fmt == "md":
        from rocmkit.report.render_markdown import render_markdown

        return render_markdown(doc)
    from rocmkit.report.render_html import render_html

    plots = {}
    if with_plots:
        from rocmkit.report.plots import all_plots

        plots = all_plots(runs, doc.labels)
    return render_html(doc, plots)


__all__ = [
    "Comparison",
    "ReportDocument",
    "SuiteLayout",
    "Table",
    "build_document",
    "compare_runs",
    "register_layout",
    "render",
]
