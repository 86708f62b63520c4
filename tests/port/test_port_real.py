"""Real public projects with known ROCm problems (vendored files, recorded commits): port finds
exactly the recorded issues."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rocmkit.port import PortConfig, scan_project

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "port" / "real"
PROJECTS = tomllib.loads((REAL / "expected.toml").read_text())["project"]


def test_at_least_five_projects_are_recorded_with_commit_and_licence() -> None:
    assert len(PROJECTS) >= 5
    for project in PROJECTS:
        assert len(project["commit"]) == 40 and project["license"] and project["known_issue"]
        assert (REAL / project["name"]).is_dir()


@pytest.mark.parametrize("project", PROJECTS, ids=[p["name"] for p in PROJECTS])
def test_real_project_findings_are_exactly_the_recorded_ones(project: dict) -> None:
    report = scan_project(PortConfig(path=REAL / project["name"], show_info=True))
    got = sorted(f"{f.path}:{f.line} {f.rule_id} {f.severity}" for f in report.findings)
    assert got == sorted(project["expected"])
    assert not report.issues
