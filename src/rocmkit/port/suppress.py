"""Accepting findings, as linters do: an inline comment on the line (or a comment line just above
it) and a baseline file of accepted findings, so `rocmkit port . --fail-on warn` can gate CI.

    import pynvml  # rocmkit: ignore[nvml]          Python, shell, Dockerfile, requirements, YAML
    // rocmkit: ignore[cuda-kernel-hazard]           C/C++/CUDA (the line above the code)
    # rocmkit: ignore                                every rule on that line

A baseline (`--write-baseline FILE`, then `--baseline FILE`) records each finding as
path + rule + number of places; a later scan drops a finding it lists unless the file now has
more places for that rule than were accepted (then the finding stays, "N new since the baseline").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmkit.errors import UserError

if TYPE_CHECKING:
    from rocmkit.port.findings import Hit, PortFinding

BASELINE_SCHEMA = "rocmkit.port-baseline"
_IGNORE = re.compile(r"(?:#|//|/\*|--)\s*rocmkit:\s*ignore(?:\[([A-Za-z0-9_,\s-]*)\])?")


def inline_ignores(text: str) -> dict[int, frozenset[str] | None]:
    """line -> rule ids ignored there (None: all rules). A comment alone on its line applies to
    the next line too."""
    if "rocmkit:" not in text:
        return {}
    ignores: dict[int, frozenset[str] | None] = {}
    for number, line in enumerate(text.splitlines(), 1):
        match = _IGNORE.search(line)
        if match is None:
            continue
        ids = (
            frozenset(i.strip() for i in match.group(1).split(",") if i.strip())
            if match.group(1) is not None
            else None
        )
        targets = [number]
        if line[: match.start()].strip() == "":
            targets.append(number + 1)
        for target in targets:
            previous = ignores.get(target, frozenset())
            ignores[target] = None if ids is None or previous is None else previous | ids
    return ignores


def drop_ignored(hits: Iterable[Hit], ignores: dict[int, frozenset[str] | None]) -> list[Hit]:
    """The hits not covered by an inline ignore; (kept, number dropped)."""
    kept = []
    for h in hits:
        ids = ignores.get(h.line, frozenset())
        if ids is None or h.rule.id in ids or (h.rule.check and h.rule.check in ids):
            continue
        kept.append(h)
    return kept


def read_baseline(path: Path) -> dict[str, int]:
    """'path::rule' -> accepted number of places."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read the baseline {path}: {exc}") from None
    if not isinstance(document, dict) or document.get("schema") != BASELINE_SCHEMA:
        raise UserError(f"{path} is not a port baseline (schema {BASELINE_SCHEMA})")
    accepted: dict[str, int] = {}
    for row in document.get("findings", []):
        key = f"{row['path']}::{row['rule_id']}"
        accepted[key] = accepted.get(key, 0) + int(row.get("count", 1))
    return accepted


def write_baseline(path: Path, findings: Iterable[PortFinding]) -> None:
    rows: list[dict[str, Any]] = [
        {"path": f.path, "rule_id": f.rule_id, "severity": f.severity, "count": f.count}
        for f in findings
    ]
    document = {"schema": BASELINE_SCHEMA, "schema_version": 1, "findings": rows}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
