"""Blind pooled adjudication of a twice-annotated part: one yardstick for port and for both annotators.

port_score.py measures port against one annotator's list and port_agreement.py against two; both
yardsticks are one person's judgement, and neither holds a hazard that port found but no annotator
listed. Here a third person judges a pool of places without knowing where each came from:

  pool   the candidate places of each project of a part: every hazard of the first list
         (tests/fixtures/port_hazards/), every hazard of the second list where the part was
         annotated twice (tests/fixtures/port_hazards_second/) and every line of every
         warn/error finding of port at this commit, as bare `file:line` (no kind, no reason, no source), exact duplicates
         merged, sorted by place. Written to tests/fixtures/port_adjudication/<part>.toml with the
         commit that produced port's findings.
  score  the adjudicator's lists (tests/fixtures/port_hazards_adjudicated/<name>.toml, the same
         schema as the other lists: every candidate place is one `hazard` or `not_hazard` entry
         at that file and line) as the yardstick for three contenders: port (port_score's own
         matching: same file, a line within LINE_SLACK, a kind port's rule maps to), the first
         list and the second list (matched the same way: strict = the same kind too, loose = any
         kind; the second only where the part has second lists). A port finding with no
         adjudicated entry near it (from a later commit than the pool's) is counted `unjudged`,
         outside precision, and named.

This is pooling as TREC does it (the union of the systems' answers judged by an assessor who does
not know their source): a hazard no contender listed is in no pool, so recall is over the pooled
hazards only, the same for all three.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/port_adjudication.py pool --part test33
    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/port_adjudication.py score \\
        --part test33 test34 [--write [--out FILE]]

Counts are exact (no timing): one run is the measurement. --write saves
benchmarks/results/port_adjudication_<parts>.json (commit, command, machine, load, per project).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent))

import port_agreement
import port_corpus
import port_score

from rocmkit.atomic import atomic_write_text

POOLS = port_corpus.REPO / "tests" / "fixtures" / "port_adjudication"
ADJUDICATED = port_corpus.REPO / "tests" / "fixtures" / "port_hazards_adjudicated"
Place = dict[str, Any]


def candidates(
    first: dict[str, Any], second: dict[str, Any], found: port_score.Scan
) -> list[Place]:
    """The pool of one project: the lists' hazards (`second` empty for a part annotated once) and
    the lines of port's warn/error findings, as bare places, exact duplicates merged."""
    places = {(h["file"], h["line"]) for h in first["hazard"] + second["hazard"]}
    for f in found.findings:
        if f.severity in port_corpus.SEVERITIES:
            places.update((f.path, line) for line in f.lines or (f.line,))
    return [{"file": file, "line": line} for file, line in sorted(places)]


def _annotated(part: str) -> list[port_corpus.Project]:
    projects = [p for p in port_corpus.load_manifest() if p.part == part]
    if not projects:
        raise SystemExit(f"port_adjudication: no project in part {part}")
    problems = port_corpus.fetch(projects)
    if problems:
        raise SystemExit("\n".join(f"port corpus: could not fetch {p}" for p in problems))
    return projects


def _second(name: str) -> dict[str, Any] | None:
    """The second annotator's list of a project, None for a part annotated once."""
    if not (port_agreement.SECOND / f"{name}.toml").is_file():
        return None
    return port_corpus.load_hazards(name, port_agreement.SECOND)


_NONE: dict[str, Any] = {"hazard": [], "not_hazard": []}


def pool(part: str) -> Path:
    rows = []
    for project in _annotated(part):
        first = port_corpus.load_hazards(project.name)
        second = _second(project.name) or _NONE
        for place in candidates(first, second, port_score.scan(project)):
            rows.append({"project": project.name, **place})
    commit = _commit()
    lines = [
        f"# The blind pool of part {part} (benchmarks/port_adjudication.py pool): every hazard of the",
        "# first list (and of the second, where the part has one) and every line of port's",
        "# warn/error findings, as bare places.",
        "# Judge each one by reading the code; do not look for where it came from.",
        f'part = "{part}"',
        f'port_commit = "{commit}"',
        "",
    ]
    for row in rows:
        lines += ["[[place]]", *(f"{k} = {json.dumps(v)}" for k, v in row.items()), ""]
    out = POOLS / f"{part}.toml"
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, "\n".join(lines))
    print(f"{out}: {len(rows)} places in {len({r['project'] for r in rows})} projects")
    return out


def load_pool(part: str) -> dict[str, list[Place]]:
    path = POOLS / f"{part}.toml"
    if not path.is_file():
        raise SystemExit(f"port_adjudication: no pool for {part}; run `pool --part {part}` first")
    by_project: dict[str, list[Place]] = {}
    for row in tomllib.loads(path.read_text())["place"]:
        by_project.setdefault(row["project"], []).append({"file": row["file"], "line": row["line"]})
    return by_project


def list_against(listed: list[Place], gold: list[Place]) -> dict[str, int]:
    """An annotator's hazards scored against the adjudicated ones, as port_agreement matches."""
    near, strict = port_agreement.near, port_agreement._strict
    return {
        "num_listed": len(listed),
        "num_gold": len(gold),
        "listed_true_strict": sum(any(strict(a, g) for g in gold) for a in listed),
        "listed_true_loose": sum(any(near(a, g) for g in gold) for a in listed),
        "gold_found_strict": sum(any(strict(g, a) for a in listed) for g in gold),
        "gold_found_loose": sum(any(near(g, a) for a in listed) for g in gold),
        "num_gold_groups": len(groups(gold)),
        "gold_groups_found_strict": sum(
            any(strict(g, a) for g in members for a in listed) for members in groups(gold)
        ),
    }


def groups(gold: list[Place]) -> list[list[Place]]:
    """The adjudicated hazards by (file, kind): the lines of one pattern in one file (42 pinned
    CUDA wheels of one conda environment dump) are one group, found when any of them is. Recall
    over groups weighs a listed place and a grouped finding alike."""
    by: dict[tuple[str, str], list[Place]] = {}
    for g in gold:
        by.setdefault((g["file"], g["kind"]), []).append(g)
    return list(by.values())


def port_against(
    project: port_corpus.Project, found: port_score.Scan, gold: dict[str, Any]
) -> dict[str, Any]:
    """port_score's precision and recall against the adjudicated list, findings no adjudicated
    entry is near (a later commit's) set apart as unjudged."""
    places = gold["hazard"] + gold["not_hazard"]
    judged = tuple(f for f in found.findings if any(port_score._near(f, p) for p in places))
    unjudged = [
        f"{f.path}:{f.line} {f.rule_id} ({f.severity})"
        for f in found.findings
        if f.severity in port_corpus.SEVERITIES and f not in judged
    ]
    scored = port_score.score(
        project,
        port_score.Scan(findings=judged, num_files=found.num_files, num_python=found.num_python),
        gold,
    )
    shown = [f for f in judged if f.severity in port_corpus.SEVERITIES]
    found_groups = sum(
        any(port_score._matched(g, shown) for g in members) for members in groups(gold["hazard"])
    )
    return {
        **scored,
        "unjudged": unjudged,
        "num_hazard_groups": len(groups(gold["hazard"])),
        "hazard_groups_found": found_groups,
    }


LIST_COUNTS = (
    "num_listed",
    "num_gold",
    "listed_true_strict",
    "listed_true_loose",
    "gold_found_strict",
    "gold_found_loose",
    "num_gold_groups",
    "gold_groups_found_strict",
)


def measure(part: str) -> dict[str, Any]:
    pools = load_pool(part)
    per_project: dict[str, Any] = {}
    for project in _annotated(part):
        path = ADJUDICATED / f"{project.name}.toml"
        if not path.is_file():
            raise SystemExit(
                f"port_adjudication: {path} is missing; adjudicate the pool of {part} first"
            )
        gold = port_corpus.load_hazards(project.name, ADJUDICATED)
        missing = [p for p in pools.get(project.name, []) if not _entry_at(p, gold)]
        if missing:
            where = ", ".join(f"{p['file']}:{p['line']}" for p in missing[:3])
            raise SystemExit(
                f"port_adjudication: {project.name}: {len(missing)} pooled places not judged ({where})"
            )
        first = port_corpus.load_hazards(project.name)
        second = _second(project.name)
        per_project[project.name] = {
            "num_pooled": len(pools.get(project.name, [])),
            "port": port_against(project, port_score.scan(project), gold),
            "first": list_against(first["hazard"], gold["hazard"]),
        }
        if second is not None:
            per_project[project.name]["second"] = list_against(second["hazard"], gold["hazard"])
    return {
        "part": part,
        "projects": list(per_project),
        **totals(per_project),
        "per_project": per_project,
    }


def _entry_at(place: Place, gold: dict[str, Any]) -> bool:
    return any(
        e["file"] == place["file"] and e["line"] == place["line"]
        for e in gold["hazard"] + gold["not_hazard"]
    )


def totals(per_project: dict[str, Any]) -> dict[str, Any]:
    rows = list(per_project.values())
    port = port_agreement.total(
        [r["port"] for r in rows],
        (*port_agreement.PORT_COUNTS, "num_hazard_groups", "hazard_groups_found"),
    )
    result: dict[str, Any] = {
        "num_pooled": sum(r["num_pooled"] for r in rows),
        "port": {
            **port,
            "num_unjudged": sum(len(r["port"]["unjudged"]) for r in rows),
            "precision": port_score._ratio(port["num_true_positive"], port["num_findings"]),
            "recall": port_score._ratio(port["num_hazards_found"], port["num_hazards"]),
            "group_recall": port_score._ratio(
                port["hazard_groups_found"], port["num_hazard_groups"]
            ),
        },
    }
    for who in ("first", "second"):
        listed = [r[who] for r in rows if who in r]
        if not listed:  # a part annotated once
            continue
        c = port_agreement.total(listed, LIST_COUNTS)
        r = port_score._ratio
        result[who] = {
            **c,
            "precision_strict": r(c["listed_true_strict"], c["num_listed"]),
            "precision_loose": r(c["listed_true_loose"], c["num_listed"]),
            "recall_strict": r(c["gold_found_strict"], c["num_gold"]),
            "recall_loose": r(c["gold_found_loose"], c["num_gold"]),
            "group_recall_strict": r(c["gold_groups_found_strict"], c["num_gold_groups"]),
        }
    return result


def _commit() -> str:
    out = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=port_corpus.REPO,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip() or "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("pool", "score"))
    parser.add_argument("--part", nargs="+", required=True, choices=port_corpus.PARTS)
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    parts = list(dict.fromkeys(args.part))
    if args.action == "pool":
        for part in parts:
            pool(part)
        return 0
    load_before = os.getloadavg()
    results = {part: measure(part) for part in parts}
    document: dict[str, Any] = {
        "schema": "rocmkit.port_adjudication",
        "schema_version": 1,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "environment": port_score.environment(),
        "line_slack": port_score.LINE_SLACK,
        "parts": results,
        "pooled": totals(
            {f"{p}/{n}": v for p, r in results.items() for n, v in r["per_project"].items()}
        ),
        "load_average": {"before": load_before, "after": os.getloadavg()},
    }
    if args.write:
        out = (
            args.out
            or port_corpus.REPO
            / "benchmarks"
            / "results"
            / f"port_adjudication_{'_'.join(parts)}.json"
        )
        atomic_write_text(out, json.dumps(document, indent=1) + "\n")
    for name, result in [*results.items(), ("pooled", document["pooled"])]:
        _print(name, result)
    return 0


def _print(name: str, r: dict[str, Any]) -> None:
    p = r["port"]
    print(
        f"{name}: {r['num_pooled']} pooled places; port precision {p['num_true_positive']}/{p['num_findings']}"
        f" ({p['precision']}), recall {p['num_hazards_found']}/{p['num_hazards']} ({p['recall']}),"
        f" unjudged {p['num_unjudged']}; groups {p['hazard_groups_found']}/{p['num_hazard_groups']}"
        f" ({p['group_recall']})"
    )
    for who in ("first", "second"):
        if who not in r:
            continue
        c = r[who]
        print(
            f"  {who:6} list: precision {c['listed_true_strict']}/{c['num_listed']} strict"
            f" ({c['precision_strict']}), {c['listed_true_loose']} loose; recall"
            f" {c['gold_found_strict']}/{c['num_gold']} strict ({c['recall_strict']}),"
            f" {c['gold_found_loose']} loose ({c['recall_loose']}); groups"
            f" {c['gold_groups_found_strict']}/{c['num_gold_groups']} ({c['group_recall_strict']})"
        )


if __name__ == "__main__":
    sys.exit(main())
