"""The rich consoles every command prints through."""

from __future__ import annotations

import os
import sys
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
