"""Shared helpers of the port tests: read the `port:` markers that fixtures use to state findings."""

from __future__ import annotations

import re
from pathlib import Path

from rocmkit.port import PortConfig, PortReport, scan_project

_MARKER = re.compile(r"port(-next)?: ([a-z0-9, -]+)")


def expected_markers(root: Path) -> set[tuple[str, int, str]]:
    """(relative path, line, rule id) for every `port: id` / `port-next: id` marker under root."""
    expected = set()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = _MARKER.search(line)
            if match is None:
                continue
            target = number + 1 if match.group(1) else number
            for rule_id in match.group(2).split(","):
                expected.add((rel, target, rule_id.strip()))
    return expected


def found(report: PortReport) -> set[tuple[str, int, str]]:
    return {(f.path, line, f.rule_id) for f in report.findings for line in f.lines or (f.line,)}


def scan_files(root: Path, files: dict[str, str], target: str = "", **config: object) -> PortReport:
    """Write `files` (relative path -> text) under `root` and scan `root` (or `root/target`),
    info findings shown unless `config` says otherwise."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    options: dict[str, object] = {"show_info": True, **config}
    return scan_project(PortConfig(path=root / target if target else root, **options))  # type: ignore[arg-type]


def shown(report: PortReport) -> set[tuple[str, int, str, str]]:
    """(path, line, rule id, severity) of every line a warn/error finding reports."""
    return {
        (f.path, line, f.rule_id, f.severity)
        for f in report.findings
        for line in f.lines
        if f.severity != "info"
    }


def severities(report: PortReport, *rules: str) -> dict[tuple[str, int], str]:
    """{(path, line): severity} of every line of the given rules' findings."""
    return {
        (f.path, line): f.severity
        for f in report.findings
        if f.rule_id in rules
        for line in f.lines
    }
