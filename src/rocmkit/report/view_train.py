"""Console view of a `rocmkit train` run (kind "train") and of a weights export ("train-export"),
read from the saved document: the standard report tables, then where the run's files are and, for
a run stopped by a signal, how to continue it (all from `result.data`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from rocmkit.report.views import standard

if TYPE_CHECKING:
    from rich.console import Console

    from rocmkit.report.views import ViewOptions
    from rocmkit.results import RunResult


def render(result: RunResult, console: Console, options: ViewOptions) -> None:
    standard(result, console, options)
    data = result.data
    console.print(f"checkpoint: {escape(str(data.get('checkpoint') or 'none'))}", soft_wrap=True)
    console.print(f"run dir: {escape(str(data.get('run_dir')))}", soft_wrap=True)
    note = stop_note(result)
    if note:
        console.print(escape(note), soft_wrap=True)


def stop_note(result: RunResult) -> str | None:
    """How to continue a run that a signal stopped (None for a run that finished)."""
    data = result.data
    if not data.get("stop_signal"):
        return None
    return (
        f"stopped by {data['stop_signal']} at step {data.get('steps_done')}; checkpoint saved in "
        f"{data.get('checkpoint')}; continue with the same command, --out {data.get('run_dir')} "
        "and --resume auto"
    )


def render_export(result: RunResult, console: Console, options: ViewOptions) -> None:
    console.print(f"wrote {escape(str(result.data.get('written')))}", soft_wrap=True)
