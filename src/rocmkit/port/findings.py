"""What `rocmkit port` reports: findings with file:line, files it could not read, the report, its
JSON document and the RunResult that carries it."""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from rocmkit.port.rules import SEVERITIES, Rule, Severity, severity_rank
from rocmkit.results import RunResult, jsonable

if TYPE_CHECKING:
    from rocmkit.port.project import PortConfig

SCHEMA = "rocmkit.port"
SCHEMA_VERSION = 2  # v2: findings grouped per rule and file (lines, count), summary, suppressed
FAIL_ON_CHOICES = ("info", "warn", "error", "never")


class Hit(NamedTuple):
    """A rule matched at a place in one file (the scanners' output, before paths are attached)."""

    line: int
    column: int
    rule: Rule
    evidence: str
    severity: Severity


def hit(line: int, column: int, rule: Rule, evidence: str, severity: Severity | None = None) -> Hit:
    """A Hit at the rule's own severity unless one is given."""
    return Hit(line, column, rule, evidence[:160], severity or rule.severity)


def demoted(h: Hit, severity: Severity, why: str) -> Hit:
    """`h` at `severity`, its evidence followed by the reason in brackets."""
    return Hit(h.line, h.column, h.rule, f"{h.evidence}  ({why})"[:160], severity)


def all_info(hits: list[Hit], why: str) -> list[Hit]:
    """`hits` with every warn/error demoted to info for the same reason."""
    return [h if h.severity == "info" else demoted(h, "info", why) for h in hits]


@dataclass(frozen=True, kw_only=True)
class PortFinding:
    """One place in the project that breaks or degrades on ROCm, with the fix and its source."""

    path: str  # relative to the scanned root, '/' separated
    line: int
    column: int
    rule_id: str
    severity: Severity
    title: str
    evidence: str
    fix: str
    source: str
    # Every line of this file where the rule matched at this severity (one finding per rule per
    # file and severity: a maintainer fixes a pattern once, not 40 times); `line` is the first.
    lines: tuple[int, ...] = ()
    note: str = ""  # why the severity was lowered ("has a ROCm counterpart: X", "gated to CUDA")

    @property
    def count(self) -> int:
        return len(self.lines) or 1

    def location(self) -> str:
        return f"{self.path}:{self.line}" + (f":{self.column}" if self.column else "")

    def key(self) -> str:
        """What a baseline file records: stable across edits that move lines."""
        return f"{self.path}::{self.rule_id}"


@dataclass(frozen=True, kw_only=True)
class FileIssue:
    """A file that could not be scanned (binary, not UTF-8, too large, does not parse)."""

    path: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class PortReport:
    """Everything one scan found; `exit_code(fail_on)` is what the CLI returns."""

    root: str
    findings: tuple[PortFinding, ...]
    issues: tuple[FileIssue, ...]
    num_files: dict[str, int]  # scanned files per kind (python, requirements, ...)
    num_python_parsed: int
    elapsed_s: float
    num_suppressed: int = 0  # findings left out by inline ignore comments or the baseline
    num_below_floor: int = 0  # findings below --min-severity (info, unless asked for)
    git_ignored: tuple[str, ...] = ()  # paths not walked because git ignores them (folders: '/')
    created_at: str = field(
        default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    )

    def counts(self) -> dict[str, int]:
        counter = Counter(f.severity for f in self.findings)
        return {s: counter.get(s, 0) for s in reversed(SEVERITIES)}

    def exit_code(self, fail_on: str) -> int:
        """1 when a finding is at or above `fail_on` ('never': always 0). Info never fails a
        build: `--fail-on info` fails on warnings."""
        if fail_on == "never":
            return 0
        threshold = max(severity_rank(fail_on), severity_rank("warn"))
        return int(any(severity_rank(f.severity) >= threshold for f in self.findings))

    def summary(self) -> list[dict[str, Any]]:
        """One row per rule and severity: files, places and the first few locations; what a
        maintainer reads first (worst first, then most places)."""
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        for f in self.findings:
            row = rows.setdefault(
                (f.rule_id, f.severity),
                {
                    "rule_id": f.rule_id,
                    "severity": f.severity,
                    "title": f.title,
                    "files": 0,
                    "places": 0,
                    "where": [],
                    "fix": f.fix,
                },
            )
            row["files"] += 1
            row["places"] += f.count
            if len(row["where"]) < 3:
                row["where"].append(f.location())
        return sorted(
            rows.values(), key=lambda r: (-severity_rank(r["severity"]), -r["places"], r["rule_id"])
        )

    def to_dict(self, fail_on: str = "error") -> dict[str, Any]:
        from rocmkit import __version__

        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "rocmkit_version": __version__,
            "created_at": self.created_at,
            "root": self.root,
            "fail_on": fail_on,
            "exit_code": self.exit_code(fail_on),
            "counts": self.counts(),
            "num_files": self.num_files,
            "num_python_parsed": self.num_python_parsed,
            "elapsed_s": round(self.elapsed_s, 3),
            "num_suppressed": self.num_suppressed,
            "num_below_floor": self.num_below_floor,
            "git_ignored": list(self.git_ignored),
            "summary": self.summary(),
            "findings": [{**vars(f), "count": f.count} for f in self.findings],
            "issues": [vars(i) for i in self.issues],
        }


def to_run_result(report: PortReport, config: PortConfig) -> RunResult:
    """The run record of a scan: its JSON document as `data` (what `--json` prints). A scan
    reads files only, so the environment is empty: the answer does not depend on the machine."""
    return RunResult(
        kind="port",
        label=f"port {config.path.name or config.path}",
        environment={},
        config=jsonable(config),
        data=jsonable(report.to_dict(config.fail_on)),
    )
