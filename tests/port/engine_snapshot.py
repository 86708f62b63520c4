"""The full findings of `rocmkit port` on every fixture tree, stored so that a change to the scanning
engine (walk, read, trigger pre-filter, statement extraction) can be shown to change none of them.

    PYTHONPATH=src python tests/port/engine_snapshot.py           # compare, print the differences
    PYTHONPATH=src python tests/port/engine_snapshot.py --write   # store the current findings

Regenerate with --write only for a change that is meant to change findings (a rule, a verdict);
an engine change must leave the stored file as it is.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rocmkit.port import PortConfig, scan_project

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "port"
SNAPSHOT = Path(__file__).resolve().parent / "engine_snapshot.json"


def fixture_trees(root: Path = FIXTURES) -> list[Path]:
    """Every tree a test scans: one per rule, the clean tree, each vendored real project."""
    return sorted([*root.glob("rules/*"), root / "clean", *root.glob("real/*")])


def findings_of(tree: Path) -> dict[str, Any]:
    """What a user sees of one scan (info included): findings with their lines and notes, the
    files that could not be read, and the files counted per kind."""
    report = scan_project(PortConfig(path=tree, show_info=True))
    return {
        "findings": [
            f"{f.path}:{f.line}:{f.column}:{f.rule_id}:{f.severity}"
            f" lines={','.join(map(str, f.lines))} {f.evidence} | {f.note}"
            for f in report.findings
        ],
        "issues": [f"{i.path}: {i.reason}" for i in report.issues],
        "num_files": report.num_files,
    }


def current(root: Path = FIXTURES) -> dict[str, Any]:
    return {
        t.relative_to(root).as_posix(): findings_of(t) for t in fixture_trees(root) if t.is_dir()
    }


def main() -> int:
    now = current()
    if "--write" in sys.argv:
        SNAPSHOT.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"wrote {SNAPSHOT} ({sum(len(v['findings']) for v in now.values())} findings)")
        return 0
    stored = json.loads(SNAPSHOT.read_text())
    differ = sorted(k for k in stored.keys() | now.keys() if stored.get(k) != now.get(k))
    for key in differ:
        print(f"{key}:\n  stored {stored.get(key)}\n  now    {now.get(key)}")
    print("identical" if not differ else f"{len(differ)} trees differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
