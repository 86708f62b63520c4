"""Console views of one run, keyed by the result's kind: what `rocmkit X` prints at the end of a run
and what `rocmkit report RUN` prints for that run, from the same saved document.

A view is `(RunResult, Console) -> None` and reads only the result (its measurements, `data` and
`config`), never live objects, so a result.json written yesterday renders the same cells. Kinds
without a view get the standard report: a table per suite (`report.document`). A new kind is one
module with a view function and one `register_view(kind, view)` call, or an entry in `BUILTIN`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from rocmkit.results import RunResult


@dataclass(frozen=True, kw_only=True)
class ViewOptions:
    """How much a view shows; the same options give the same cells from any command."""

    verbose: bool = False  # each finding's detail or source


View = Callable[["RunResult", "Console", ViewOptions], None]

# Built-in views, imported when first needed: kind -> "module:function".
BUILTIN: dict[str, str] = {
    "doctor": "rocmkit.report.view_doctor:render",
    "doctor-checks": "rocmkit.report.view_doctor:render_checks",
    "port": "rocmkit.report.view_port:render",
    "port-rules": "rocmkit.report.view_port:render_rules",
    "hipify": "rocmkit.report.view_hipify:render",
    "train": "rocmkit.report.view_train:render",
    "train-export": "rocmkit.report.view_train:render_export",
    "profile-train": "rocmkit.report.view_profile:render_trace",
    "profile-infer": "rocmkit.report.view_profile:render_trace",
    "profile-memory": "rocmkit.report.view_profile:render_estimate",
    "report": "rocmkit.report.view_report:render",
}
_REGISTERED: dict[str, View] = {}


def register_view(kind: str, view: View) -> None:
    """Render results of `kind` with `view` from now on (replaces a built-in one)."""
    _REGISTERED[kind] = view


def view_for(kind: str) -> View:
    """The view of a kind: a registered one, else a built-in one, else the standard report."""
    if kind in _REGISTERED:
        return _REGISTERED[kind]
    if kind in BUILTIN:
        module, _, name = BUILTIN[kind].partition(":")
        view: View = getattr(importlib.import_module(module), name)
        return view
    return standard


def render_view(result: RunResult, console: Console, options: ViewOptions | None = None) -> None:
    """Print one run the way its command prints it."""
    view_for(result.kind)(result, console, options or ViewOptions())


def standard(result: RunResult, console: Console, options: ViewOptions | None = None) -> None:
    """The standard layout of a run: the report's tables, as `rocmkit report` prints them."""
    from rocmkit.report.document import build_document
    from rocmkit.report.render_console import render_console

    render_console(build_document([result]), console)
