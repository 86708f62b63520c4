"""The report as a value: run summaries, comparability notes and tables, ready for any renderer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rocmkit.errors import UserError
from rocmkit.report.compare import compare_runs, unique_labels
from rocmkit.report.layouts import suite_table, suite_title
from rocmkit.report.summary import environment_summary
from rocmkit.report.tables import Table, suites_in
from rocmkit.results import RunResult


@dataclass(kw_only=True)
class ReportDocument:
    title: str
    labels: list[str]
    summaries: list[list[tuple[str, str]]]  # one doctor-like summary per run
    tables: list[Table]
    notes: list[str] = field(default_factory=list)


def build_document(runs: Sequence[RunResult]) -> ReportDocument:
    """One run: a wide table per suite. Several: side-by-side tables with ratios vs the first."""
    if not runs:
        raise UserError("nothing to report: give at least one run directory or result.json")
    labels = unique_labels(runs)
    summaries = [environment_summary(run) for run in runs]
    partial = [
        f"partial run{' ' + label if len(runs) > 1 else ''}: {run.partial}; only the suites "
        "that finished are shown"
        for run, label in zip(runs, labels, strict=True)
        if run.partial
    ]
    partial += [_document_note(run) for run in runs if run.data and not run.measurements]
    if len(runs) == 1:
        run = runs[0]
        suites = suites_in(run.measurements)
        empty = [s for s in suites if all(m.value is None for m in run.select(suite=s))]
        tables = [suite_table(run, suite) for suite in suites if suite not in empty]
        # a table of nothing but n/a is a note, not a section
        partial += [f"{suite_title(s)}: not measured ({_reasons(run, s)})" for s in empty]
        return ReportDocument(
            title=f"rocmkit {run.kind}: {labels[0]}",
            labels=labels,
            summaries=summaries,
            tables=tables,
            notes=partial + [str(note) for note in run.data.get("notes") or []],
        )
    comparison = compare_runs(runs)
    return ReportDocument(
        title=f"rocmkit comparison: {' vs '.join(labels)}",
        labels=labels,
        summaries=summaries,
        tables=comparison.tables,
        notes=partial + comparison.notes,
    )


def _reasons(run: RunResult, suite: str) -> str:
    found = dict.fromkeys(
        str(m.extra.get("skipped") or "no value") for m in run.select(suite=suite)
    )
    return "; ".join(found)


def _document_note(run: RunResult) -> str:
    """A run whose answer is a document (doctor findings, a hipify or port report) has no table;
    say what it found and where the whole answer is."""
    counts = run.data.get("counts")
    found = ""
    if isinstance(counts, dict):
        found = ": " + (", ".join(f"{n} {what}" for what, n in counts.items() if n) or "nothing")
    return (
        f"{run.kind} answer{found}; the whole document is the run's result.json `data` "
        "(rocmkit report RUN --json)"
    )
