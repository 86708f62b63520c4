"""The rich consoles every command prints through, and the progress bar of long commands."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

from rich.console import Console

# Piped or redirected output (logs, CI) has no terminal width; rich would wrap at 80 columns and
# break findings and table cells mid-sentence. 120 keeps them readable; COLUMNS still wins.
PIPE_WIDTH = 120


def make_console(*, stderr: bool = False, **kwargs: Any) -> Console:
    """A Console on stdout (or stderr) that is wide enough when the output is not a terminal."""
    stream = sys.stderr if stderr else sys.stdout
    if "width" not in kwargs and "COLUMNS" not in os.environ and not stream.isatty():
        kwargs["width"] = PIPE_WIDTH
    return Console(stderr=stderr, **kwargs)


class ProgressHandle:
    """What a long command reports to while it works; see `progress`."""

    def __init__(self, bar: Any = None, task: Any = None) -> None:
        self._bar, self._task = bar, task

    @property
    def live(self) -> bool:
        """True when a bar is drawn (a terminal); False when progress is silent."""
        return self._bar is not None

    def print(self, text: str) -> None:
        """Print a line above the bar (only while it is drawn; otherwise print it yourself)."""
        if self._bar is not None:
            self._bar.console.print(text)

    def stage(self, description: str, total: float | None) -> None:
        """Start a new stage on the same bar: position, clock and ETA start again."""
        if self._bar is not None:
            self._bar.reset(self._task, total=total, description=description, info="")

    def advance(self, amount: float = 1, *, info: str | None = None) -> None:
        """Count `amount` more units done; `info` replaces the text after the bar."""
        if self._bar is not None:
            fields = {} if info is None else {"info": info}
            self._bar.update(self._task, advance=amount, **fields)

    def update(
        self,
        *,
        completed: float | None = None,
        total: float | None = None,
        description: str | None = None,
        info: str | None = None,
    ) -> None:
        """Set the position, the total, the label or the text after the bar."""
        if self._bar is None:
            return
        fields: dict[str, Any] = {"completed": completed, "total": total}
        if description is not None:
            fields["description"] = description
        if info is not None:
            fields["info"] = info
        self._bar.update(self._task, **{k: v for k, v in fields.items() if v is not None})


@contextlib.contextmanager
def progress(
    description: str, total: float | None, *, enabled: bool = True
) -> Iterator[ProgressHandle]:
    """A rich progress bar with elapsed time and ETA on stderr, for commands that take a while.

    Silent (every call a no-op, `handle.live` False) when `enabled` is False (--json, a
    non-zero torchrun rank) or when stderr or stdout is not a terminal (logs, CI, pipes). The bar
    disappears when the block ends, so the command's own output follows cleanly:

        with progress("train", total=steps, enabled=not args.json) as bar:
            ... bar.advance(1, info="loss 3.21  4,845 tokens/s") ...
            bar.stage("export", total=1)  # a new phase: counts, clock and ETA restart
    """
    if not enabled or not (sys.stderr.isatty() and sys.stdout.isatty()):
        yield ProgressHandle()
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[info]}"),
    )
    with Progress(*columns, console=make_console(stderr=True), transient=True) as bar:
        yield ProgressHandle(bar, bar.add_task(description, total=total, info=""))
