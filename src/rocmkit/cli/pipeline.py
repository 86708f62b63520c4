"""The options and output every command shares: `--out`, `--json`, `--monitor-memory`, and the one
way a result is printed (the report layouts on a console, or the result document as JSON).

A command module parses its own arguments, calls its capability, and hands the result here.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from rocmkit.results import RunResult

Renderer = Callable[["RunResult", "Console"], None]


def add_output_options(
    parser: argparse.ArgumentParser,
    command: str,
    *,
    monitor_memory: bool = False,
    out_help: str | None = None,
) -> None:
    """`--out DIR` (default `runs/<command>-<UTC stamp>`), `--json` and optionally `--monitor-memory`."""
    parser.add_argument(
        "--out",
        metavar="DIR",
        help=out_help or f"run directory for result.json (default: runs/{command}-<UTC stamp>)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the result document (JSON) instead of tables"
    )
    if monitor_memory:
        parser.add_argument(
            "--monitor-memory",
            action="store_true",
            help="sample memory during the run (GPU allocator, or process RSS on CPU); write "
            "memory.json to the run directory and the peak to result.json",
        )


def print_json(document: Any) -> None:
    """The one JSON printer: indented, NaN as null, a trailing newline."""
    from rocmkit.results import jsonable

    sys.stdout.write(json.dumps(jsonable(document), indent=2) + "\n")


def render_run(result: RunResult, console: Console) -> None:
    """The standard layout of a run: the report's tables, as `rocmkit report` prints them."""
    from rocmkit.report.document import build_document
    from rocmkit.report.render_console import render_console

    render_console(build_document([result]), console)


def emit(result: RunResult, *, as_json: bool, render: Renderer = render_run) -> None:
    """Print a finished run: its result document with `--json`, else `render` on the console."""
    if as_json:
        print_json(result.to_dict())
        return
    from rocmkit.cli.console import make_console

    render(result, make_console())
