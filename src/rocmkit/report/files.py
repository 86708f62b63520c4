"""Where a report goes: the format a file name asks for, the report files of a run directory, and
the JSON document of the runs a report reads."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmkit.atomic import atomic_write_text
from rocmkit.errors import UserError, warn_once
from rocmkit.results import RunResult

if TYPE_CHECKING:
    from rocmkit.report import Format

SUFFIX_FORMATS = {
    ".md": "md",
    ".markdown": "md",
    ".html": "html",
    ".htm": "html",
    ".sarif": "sarif",
}
SCHEMA = "rocmkit.report"
SCHEMA_VERSION = 1


def output_format(fmt: str | None, output: str | None) -> str:
    """The format from -o's suffix (.md, .html, .sarif); --format must agree with it; no -o ->
    console."""
    if output is None:
        return fmt or "console"
    if fmt == "console":
        raise UserError(
            "--format console prints to the terminal; drop -o or pick --format html|md|sarif"
        )
    implied = SUFFIX_FORMATS.get(Path(output).suffix.lower())
    if implied is None:
        if fmt:
            return fmt  # a name without a known suffix (report.txt, /dev/stdout): --format decides
        raise UserError(
            f"cannot tell the format of {output}: use a .html, .md or .sarif name, or --format"
        )
    if fmt and fmt != implied:
        raise UserError(
            f"--format {fmt} does not match {output} ({implied}); "
            f"rename the file or use --format {implied}"
        )
    return implied


def text_format(fmt: str) -> Format:
    """The renderer a non-console format asks for (html unless md or sarif)."""
    return "md" if fmt == "md" else "sarif" if fmt == "sarif" else "html"


def write_reports(runs: Sequence[RunResult], directory: Path) -> tuple[Path, Path]:
    """Write `report.md` and `report.html` (plots when matplotlib is installed) into `directory`."""
    from rocmkit.report import render

    with_plots = importlib.util.find_spec("matplotlib") is not None
    if not with_plots:
        warn_once(
            "matplotlib is not installed: report.html has no plots (pip install 'rocmkit[plot]')"
        )
    markdown, html = directory / "report.md", directory / "report.html"
    atomic_write_text(markdown, render(runs, "md"))
    atomic_write_text(html, render(runs, "html", with_plots=with_plots))
    return markdown, html


def runs_document(runs: Sequence[RunResult]) -> dict[str, Any]:
    """The runs a report reads, as one JSON document (each run's full result document, in order;
    the first is the baseline of ratios)."""
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "runs": [run.to_dict() for run in runs],
    }
