"""`rocmkit report RUN -o port.sarif`: a saved `rocmkit port` scan as a SARIF 2.1.0 log (what
GitHub code scanning and SARIF viewers read), checked against the standard's own JSON schema
(tests/fixtures/sarif) and against the scan it came from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rocmkit.cli.main import main

jsonschema = pytest.importorskip("jsonschema")

SCHEMA = json.loads(
    (
        Path(__file__).resolve().parents[1] / "fixtures" / "sarif" / "sarif-schema-2.1.0.json"
    ).read_text(encoding="utf-8")
)
LEVELS = {"error": "error", "warn": "warning", "info": "note"}


def _project(root: Path, blank_lines: int = 0) -> Path:
    """A small project with findings at error and warn, a rule matched on several lines of one
    file, and a file port cannot read."""
    root.mkdir()
    (root / "requirements.txt").write_text("torch==2.4.0\ncupy-cuda12x==13.3.0\n")
    (root / "gpus.py").write_text(
        "\n" * blank_lines + "import subprocess\n\n"
        "def count():\n"
        "    return subprocess.run(['nvidia-smi', '-L'], capture_output=True)\n\n"
        "def names():\n"
        "    return subprocess.run(['nvidia-smi', '--query-gpu=name'], capture_output=True)\n"
    )
    (root / "broken.py").write_bytes(b"\xff\xfe\x00binary")
    return root


def _scan_and_render(tmp_path: Path, project: Path, *flags: str) -> tuple[dict, dict]:
    run = tmp_path / f"run-{project.name}"
    assert main(["port", str(project), "--out", str(run), *flags]) in (0, 1)
    sarif = tmp_path / f"{project.name}.sarif"
    assert main(["report", str(run), "-o", str(sarif)]) == 0
    document = json.loads((run / "result.json").read_text())
    return document["data"], json.loads(sarif.read_text())


def _places(result: dict[str, Any]) -> tuple[str, int]:
    location = result["locations"][0]["physicalLocation"]
    return location["artifactLocation"]["uri"], location["region"]["startLine"]


def test_a_port_scan_is_a_valid_sarif_log_with_every_finding_at_its_line(tmp_path: Path) -> None:
    project = _project(tmp_path / "proj")
    scan, log = _scan_and_render(tmp_path, project)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1
    run = log["runs"][0]
    assert run["tool"]["driver"]["name"] == "rocmkit port"
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == project.resolve().as_uri() + "/"
    findings = scan["findings"]
    assert {f["severity"] for f in findings} >= {"error", "warn"}  # the fixture has both
    expected = sorted((f["path"], f["line"], LEVELS[f["severity"]], f["rule_id"]) for f in findings)
    got = sorted((*_places(r), r["level"], r["ruleId"]) for r in run["results"])
    assert got == expected
    rules = run["tool"]["driver"]["rules"]
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] == (
            "SRCROOT"
        )
        assert not Path(_places(result)[0]).is_absolute()
    # nvidia-smi on two lines of gpus.py: one result, the second line a related location
    smi = next(r for r in run["results"] if _places(r)[0] == "gpus.py")
    assert smi["properties"]["count"] == 2
    assert [loc["physicalLocation"]["region"]["startLine"] for loc in smi["relatedLocations"]] == [
        7
    ]
    # the fix and its source reach the rule's help
    descriptor = rules[smi["ruleIndex"]]
    assert descriptor["help"]["text"] and descriptor["helpUri"].startswith("https://")
    # the file port could not read is said, not dropped
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert [n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for n in notes] == [
        "broken.py"
    ]


def test_info_findings_become_notes_only_when_the_scan_kept_them(tmp_path: Path) -> None:
    project = tmp_path / "infos"
    project.mkdir()
    # CUDA_VISIBLE_DEVICES works on ROCm too: port reports it at info at most
    (project / "run.py").write_text("import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n")
    quiet, quiet_log = _scan_and_render(tmp_path, project)
    assert quiet["findings"] == [] and quiet_log["runs"][0]["results"] == []
    shown, log = _scan_and_render(tmp_path, project, "--show-info")
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    assert shown["findings"] and {r["level"] for r in log["runs"][0]["results"]} == {"note"}


def test_fingerprints_stay_when_lines_move(tmp_path: Path) -> None:
    _, before = _scan_and_render(tmp_path, _project(tmp_path / "before"))
    _, after = _scan_and_render(tmp_path, _project(tmp_path / "after", blank_lines=5))

    def prints(log: dict) -> set[str]:
        return {r["partialFingerprints"]["rocmkitFinding/v1"] for r in log["runs"][0]["results"]}

    lines_before = {_places(r) for r in before["runs"][0]["results"]}
    lines_after = {_places(r) for r in after["runs"][0]["results"]}
    assert lines_before != lines_after and prints(before) == prints(after)


def test_format_sarif_without_a_file_prints_the_log(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    main(["port", str(_project(tmp_path / "proj")), "--out", str(run)])
    capsys.readouterr()
    assert main(["report", str(run), "--format", "sarif"]) == 0
    log = json.loads(capsys.readouterr().out)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    assert log["runs"][0]["results"]


def test_a_run_that_is_not_a_port_scan_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    run = tmp_path / "hip"
    source = tmp_path / "k.cu"
    source.write_text("__global__ void k(float* x) { x[threadIdx.x] = 0; }\n")
    assert main(["hipify", str(source), "-o", str(tmp_path / "k.hip"), "--out", str(run)]) == 0
    capsys.readouterr()
    target = tmp_path / "x.sarif"
    assert main(["report", str(run), "-o", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "rocmkit port" in err and not target.exists()
