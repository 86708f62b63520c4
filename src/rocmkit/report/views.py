"""Console views of one run, keyed by the result's kind: what `rocmkit X` prints at the end of a run
and what `rocmkit report RUN` prints for that run, from the same saved document.

A view is `(RunResult, Console) -> None` and reads only the result (its measurements, `data` and
`config`), never live objects, so a result.json written yesterday renders the same cells. Kinds
without a view get the standard report: a table per suite (`report.document`). A new kind is one
module with a view function and one `register_view(kind, view)` call. The views live in the one
layout registry (`report.layouts.LAYOUTS`, keyed by kind), beside the suites' tables and plots.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocmkit.report.layouts import LAYOUTS, SuiteLayout

if TYPE_CHECKING:
    from rich.console import Console

    from rocmkit.results import RunResult


@dataclass(frozen=True, kw_only=True)
class ViewOptions:
    """How much a view shows; the same options give the same cells from any command."""

    verbose: bool = False  # each finding's detail or source


View = Callable[["RunResult", "Console", ViewOptions], None]


def register_view(kind: str, view: View) -> None:
    """Render results of `kind` with `view` from now on (replaces a built-in one)."""
    LAYOUTS[kind] = dataclasses.replace(LAYOUTS.get(kind) or SuiteLayout(), view=view)


def view_for(kind: str) -> View:
    """The view of a kind: the one in its layout, else the standard report. Only the layouts
    registered in report are read: a kind is never a bench suite."""
    layout = LAYOUTS.get(kind)
    view = layout.view_function() if layout is not None else None
    return view or standard


def render_view(result: RunResult, console: Console, options: ViewOptions | None = None) -> None:
    """Print one run the way its command prints it."""
    view_for(result.kind)(result, console, options or ViewOptions())


def standard(result: RunResult, console: Console, options: ViewOptions | None = None) -> None:
    """The standard layout of a run: the report's tables, as `rocmkit report` prints them."""
    from rocmkit.report.document import build_document
    from rocmkit.report.render_console import render_console

    render_console(build_document([result]), console)
