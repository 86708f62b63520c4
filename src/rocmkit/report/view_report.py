"""Console view of `rocmkit report`: one run as its own command printed it, several side by side
with ratios, or the Markdown/HTML text when that format was asked for without a file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocmkit.results import result_from_dict

if TYPE_CHECKING:
    from rich.console import Console

    from rocmkit.report.views import ViewOptions
    from rocmkit.results import RunResult


def render(result: RunResult, console: Console, options: ViewOptions) -> None:
    data = result.data
    if data.get("written"):
        return  # the report went to files; the driver said where
    runs = [result_from_dict(doc, source="report") for doc in data.get("runs", [])]
    fmt = data.get("format", "console")
    if fmt != "console":
        from rocmkit.report import render as render_text
        from rocmkit.report.files import text_format

        console.file.write(render_text(runs, text_format(fmt)))
        return
    if len(runs) == 1:
        from rocmkit.report.views import render_view

        render_view(runs[0], console, options)
        return
    from rocmkit.report.document import build_document
    from rocmkit.report.render_console import render_console

    render_console(build_document(runs), console)
