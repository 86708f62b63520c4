"""What the doctor says: a Finding per check, the report that collects them, the explanation of a
log, each with its versioned JSON document, and the RunResult that carries that document."""

from __future__ import annotations

import datetime as _dt
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from rocmkit.results import RunResult, jsonable

if TYPE_CHECKING:
    from rocmkit.doctor.explain import Explanation

# "note": a check's fail that stronger evidence from another check overruled (see reconcile.py).
Status = Literal["ok", "note", "warn", "fail", "skip"]
STATUSES: tuple[Status, ...] = ("ok", "note", "warn", "fail", "skip")
SCHEMA = "rocmkit.doctor"
SCHEMA_VERSION = 2  # 2: status "note", fields "evidence" and "overruled"
EXPLAIN_SCHEMA = "rocmkit.doctor.explain"
# 3: per match `confidence`, `abstain`, `candidates`, `ask`, `deciding`, `first_failure`, `code`,
# `emitter`, `source`; top-level `first_failure` (line number). Version-2 fields unchanged.
EXPLAIN_SCHEMA_VERSION = 3


@dataclass(frozen=True, kw_only=True)
class Finding:
    """The verdict of one check: one-line summary, optional detail, and the exact fix."""

    id: str
    status: Status
    summary: str
    detail: str = ""
    fix: str = ""  # a command or a setting; empty when nothing needs doing
    # Facts this check proved, for reconcile(): "gpu-kernels-ran" when the smoke test ran on a GPU.
    evidence: tuple[str, ...] = ()
    # When reconciled into a note: the original "status: summary" this check alone reached.
    overruled: str = ""

    def __post_init__(self) -> None:
        assert self.status in STATUSES, self.status


@dataclass(frozen=True, kw_only=True)
class DoctorReport:
    findings: tuple[Finding, ...]
    environment: dict[str, Any] = field(default_factory=dict)
    created_at: str = field(
        default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    )

    @property
    def exit_code(self) -> int:
        """0 when nothing failed, 1 when a check failed."""
        return 1 if any(f.status == "fail" for f in self.findings) else 0

    def counts(self) -> dict[str, int]:
        return {s: sum(f.status == s for f in self.findings) for s in STATUSES}

    def to_dict(self) -> dict[str, Any]:
        from rocmkit import __version__

        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "rocmkit_version": __version__,
            "created_at": self.created_at,
            "exit_code": self.exit_code,
            "counts": self.counts(),
            "environment": self.environment,
            "findings": [asdict(f) for f in self.findings],
        }


@dataclass(frozen=True, kw_only=True)
class ExplainReport:
    """The known failure signatures found in one log (`rocmkit doctor --explain`)."""

    source: str  # the file name as given; "-" for stdin
    matches: tuple[Explanation, ...]
    num_lines: int
    environment: dict[str, Any] = field(default_factory=dict)  # filled with --here only

    @property
    def exit_code(self) -> int:
        """Always 0: explaining a log succeeds whether or not it held a known failure."""
        return 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": EXPLAIN_SCHEMA,
            "schema_version": EXPLAIN_SCHEMA_VERSION,
            "source": self.source,
            "num_lines": self.num_lines,
            "first_failure": next((m.line_number for m in self.matches if m.first_failure), None),
            "matches": [vars(m) for m in self.matches],
        }


def to_run_result(report: DoctorReport | ExplainReport, *, config: dict[str, Any]) -> RunResult:
    """The run record of a doctor answer: its JSON document as `data` (what `--json` prints)."""
    return RunResult(
        kind="doctor",
        environment=jsonable(report.environment),
        config=jsonable(config),
        data=jsonable(report.to_dict()),
    )
