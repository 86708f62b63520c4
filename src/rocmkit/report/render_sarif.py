"""SARIF 2.1.0 (OASIS Static Analysis Results Interchange Format) of `rocmkit port` runs: the file
GitHub code scanning, GitLab, VS Code's SARIF viewer and Azure DevOps read, so a project's CI can
show port's findings on the lines they are about.

Mapped by the standard's own object model (sarif-v2.1.0-os, sections 3.13-3.27): one SARIF `run`
per port run; `tool.driver.rules` holds each rule the findings name (title, fix as help, the fix's
source as helpUri, the rule's severity as its default level); a finding is one `result` at its
first line, its other lines in the same file are `relatedLocations` (port groups a rule's places
in a file into one finding); files port could not read are `toolExecutionNotifications`. Paths
stay relative to the scanned folder (`uriBaseId` SRCROOT) so results match the repository's files.
Columns are left out: port's Python columns are ast offsets (UTF-8 bytes), which are none of the
column kinds SARIF defines for a text file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rocmkit.errors import UserError
from rocmkit.results import RunResult

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# port's severities as SARIF's `level` (3.27.10): error = will not run or wrong results,
# warning = degraded or needs a flag, note = shown only when asked.
LEVELS = {"error": "error", "warn": "warning", "info": "note"}
BASE_ID = "SRCROOT"
FINGERPRINT = "rocmkitFinding/v1"  # path, rule and severity: stable when lines move


def render_sarif(runs: Sequence[RunResult]) -> str:
    """The SARIF log (JSON text) of one or more `rocmkit port` runs."""
    others = sorted({run.kind for run in runs if run.kind != "port"})
    if others:
        raise UserError(
            f"SARIF holds code findings: only `rocmkit port` runs can be written as .sarif "
            f"(got {', '.join(others)}); save a scan with `rocmkit port PATH --out DIR`"
        )
    log = {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [_sarif_run(run) for run in runs],
    }
    return json.dumps(log, indent=2) + "\n"


def _sarif_run(run: RunResult) -> dict[str, Any]:
    from rocmkit.port import load_rules

    severities = {rule.id: rule.severity for rule in load_rules().rules}
    data = run.data
    findings = data.get("findings", [])
    rules: dict[str, int] = {}
    descriptors: list[dict[str, Any]] = []
    for finding in findings:
        if finding["rule_id"] not in rules:
            rules[finding["rule_id"]] = len(descriptors)
            descriptors.append(_rule(finding, severities))
    sarif: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "rocmkit port",
                "semanticVersion": str(data.get("rocmkit_version", run.rocmkit_version)),
                "rules": descriptors,
            }
        },
        "invocations": [_invocation(data)],
        "results": [_result(f, rules[f["rule_id"]]) for f in findings],
    }
    root = _root_uri(str(data.get("root", "")))
    if root is not None:  # where SRCROOT is on the machine that scanned
        sarif["originalUriBaseIds"] = {BASE_ID: {"uri": root}}
    return sarif


def _root_uri(root: str) -> str | None:
    """The scanned folder as a file URI ending in '/' (a scanned file: its folder); None for a
    relative root, which SARIF's base ids cannot hold (3.14.14: an absolute URI)."""
    path = Path(root)
    if not path.is_absolute():
        return None
    folder = path.parent if path.is_file() else path
    return folder.as_uri().rstrip("/") + "/"


def _rule(finding: dict[str, Any], severities: Mapping[str, str]) -> dict[str, Any]:
    """The rule's descriptor; its default level is the rule's own severity (a finding's may
    be lowered, e.g. on the NVIDIA side of a vendor switch), left out for a rule this rocmkit
    no longer has."""
    descriptor: dict[str, Any] = {
        "id": finding["rule_id"],
        "shortDescription": {"text": finding["title"]},
        "help": {"text": finding["fix"]},
    }
    if finding["rule_id"] in severities:
        descriptor["defaultConfiguration"] = {"level": LEVELS[severities[finding["rule_id"]]]}
    if str(finding.get("source", "")).startswith(("https://", "http://")):
        descriptor["helpUri"] = finding["source"]
    return descriptor


def _location(path: str, line: int) -> dict[str, Any]:
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": path, "uriBaseId": BASE_ID},
            "region": {"startLine": max(int(line), 1)},
        }
    }


def _result(finding: dict[str, Any], rule_index: int) -> dict[str, Any]:
    lines = list(finding.get("lines") or [finding["line"]])
    text = f"{finding['title']}: {finding['evidence']}."
    if finding.get("note"):
        text += f" ({finding['note']})"
    text += f" Fix: {finding['fix']}"
    result: dict[str, Any] = {
        "ruleId": finding["rule_id"],
        "ruleIndex": rule_index,
        "level": LEVELS[finding["severity"]],
        "message": {"text": text},
        "locations": [_location(finding["path"], finding["line"])],
        "partialFingerprints": {
            FINGERPRINT: f"{finding['path']}::{finding['rule_id']}::{finding['severity']}"
        },
        "properties": {"count": len(lines)},
    }
    others = [line for line in lines if line != finding["line"]]
    if others:
        result["relatedLocations"] = [
            {"id": i, **_location(finding["path"], line), "message": {"text": "same rule here"}}
            for i, line in enumerate(others, start=1)
        ]
    return result


def _invocation(data: dict[str, Any]) -> dict[str, Any]:
    """Whether the scan ran through (it did, or there would be no run) and what it could not read."""
    notes = [
        {
            "level": "warning",
            "message": {"text": f"not scanned: {issue['reason']}"},
            "locations": [_location(issue["path"], 1)],
        }
        for issue in data.get("issues", [])
    ]
    invocation: dict[str, Any] = {"executionSuccessful": True}
    if notes:
        invocation["toolExecutionNotifications"] = notes
    return invocation
