"""How far two annotators agree on a part's ROCm hazards, and what that means for port's score.

port's precision and recall (benchmarks/port_score.py) are measured against one hand-written hazard
list per project. For a part annotated twice, independently (tests/fixtures/port_hazards/<name>.toml,
the part's builder, and tests/fixtures/port_hazards_second/<name>.toml, a second annotator who read
only the pinned manifest), this scores the second list against the first with port_score's own
matching (same file, lines within LINE_SLACK):

  strict     same kind too (port_corpus.KINDS)
  loose      any kind (the two agree that something is wrong there, not on what)
  first_in_second   first's hazards the second also lists (the second's "recall" against the first)
  second_in_first   second's hazards the first also lists (its "precision" against the first)
  contested  a hazard of one list on a place the other lists as `not_hazard`
  severity   strict pairs whose severities (error/warn) agree

and scores port against the first list, the second list, their union (a finding is true when either
lists a hazard there) and the consensus (hazards both list, strict): the spread between these is how
much of port's measured score is the list writer's judgement rather than port's.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/port_agreement.py [--part test14 [test15 ...]]
        [--write [--out FILE]]

Counts are exact (no timing): one run is the measurement. With --write saves
benchmarks/results/port_agreement_<parts>.json (commit, command, machine, load, per-project counts,
every disagreement with both annotators' reasons; with several parts, `pooled` adds their counts).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import port_corpus
import port_score

SECOND = port_corpus.REPO / "tests" / "fixtures" / "port_hazards_second"
Place = dict[str, Any]


def near(a: Place, b: Place) -> bool:
    """port_score's place matching between two hand-written places."""
    return bool(a["file"] == b["file"] and abs(a["line"] - b["line"]) <= port_score.LINE_SLACK)


def _strict(a: Place, b: Place) -> bool:
    return near(a, b) and bool(a["kind"] == b["kind"])


def agree(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Counts of one project's two lists ({'hazard': [...], 'not_hazard': [...]} each)."""
    one, two = first["hazard"], second["hazard"]
    pairs = [(a, next((b for b in two if _strict(a, b)), None)) for a in one]
    strict_pairs = [(a, b) for a, b in pairs if b is not None]
    return {
        "num_first": len(one),
        "num_second": len(two),
        "first_in_second_strict": len(strict_pairs),
        "first_in_second_loose": sum(any(near(a, b) for b in two) for a in one),
        "second_in_first_strict": sum(any(_strict(b, a) for a in one) for b in two),
        "second_in_first_loose": sum(any(near(b, a) for a in one) for b in two),
        "same_severity": sum(a["severity"] == b["severity"] for a, b in strict_pairs),
        "first_contested": _contested(one, two, second["not_hazard"]),
        "second_contested": _contested(two, one, first["not_hazard"]),
        "only_first": [_row(a) for a in one if not any(near(a, b) for b in two)],
        "only_second": [_row(b) for b in two if not any(near(b, a) for a in one)],
        "kind_differs": [
            {"first": _row(a), "second": _row(b)}
            for a in one
            for b in two
            if near(a, b) and a["kind"] != b["kind"] and not any(_strict(a, c) for c in two)
        ],
    }


def _contested(hazards: list[Place], others: list[Place], not_hazards: list[Place]) -> int:
    """Hazards the other list calls fine (a not_hazard there and no hazard of its own)."""
    return sum(
        any(near(h, n) for n in not_hazards) and not any(near(h, o) for o in others)
        for h in hazards
    )


def _row(place: Place) -> dict[str, Any]:
    return {key: place[key] for key in ("file", "line", "kind", "severity", "why")}


def union(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Hazards either lists (the second's strict duplicates of the first dropped); a not_hazard
    only where neither lists a hazard."""
    hazards = first["hazard"] + [
        b for b in second["hazard"] if not any(_strict(b, a) for a in first["hazard"])
    ]
    not_hazards = [
        n
        for n in first["not_hazard"] + second["not_hazard"]
        if not any(near(n, h) for h in hazards)
    ]
    return {"hazard": hazards, "not_hazard": not_hazards}


def consensus(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Hazards both list (strict); no not_hazards (only recall is read from it)."""
    both = [a for a in first["hazard"] if any(_strict(a, b) for b in second["hazard"])]
    return {"hazard": both, "not_hazard": []}


COUNTS = (
    "num_first",
    "num_second",
    "first_in_second_strict",
    "first_in_second_loose",
    "second_in_first_strict",
    "second_in_first_loose",
    "same_severity",
    "first_contested",
    "second_contested",
)
PORT_COUNTS = ("num_findings", "num_true_positive", "num_hazards", "num_hazards_found")


def total(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: sum(r[key] for r in rows) for key in keys}


def _ratios(counts: dict[str, Any]) -> dict[str, Any]:
    r = port_score._ratio
    return {
        "first_in_second_strict": r(counts["first_in_second_strict"], counts["num_first"]),
        "first_in_second_loose": r(counts["first_in_second_loose"], counts["num_first"]),
        "second_in_first_strict": r(counts["second_in_first_strict"], counts["num_second"]),
        "second_in_first_loose": r(counts["second_in_first_loose"], counts["num_second"]),
        "same_severity": r(counts["same_severity"], counts["first_in_second_strict"]),
    }


def _port_totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    counts = total(rows, PORT_COUNTS)
    return {
        **counts,
        "precision": port_score._ratio(counts["num_true_positive"], counts["num_findings"]),
        "recall": port_score._ratio(counts["num_hazards_found"], counts["num_hazards"]),
    }


def measure(part: str, second_folder: Path = SECOND) -> dict[str, Any]:
    projects = [
        p
        for p in port_corpus.load_manifest()
        if p.part == part and (second_folder / f"{p.name}.toml").is_file()
    ]
    if not projects:
        raise SystemExit(f"port_agreement: no second list in {second_folder} for part {part}")
    problems = port_corpus.fetch(projects)
    if problems:
        raise SystemExit("\n".join(f"port corpus: could not fetch {p}" for p in problems))
    per_project: dict[str, Any] = {}
    against: dict[str, list[dict[str, Any]]] = {k: [] for k in ("first", "second", "union")}
    consensus_rows = []
    for project in projects:
        first = port_corpus.load_hazards(project.name)
        second = port_corpus.load_hazards(project.name, second_folder)
        found = port_score.scan(project)
        lists = {"first": first, "second": second, "union": union(first, second)}
        scores = {k: port_score.score(project, found, v) for k, v in lists.items()}
        for key, value in scores.items():
            against[key].append(value)
        agreed = port_score.score(project, found, consensus(first, second))
        consensus_rows.append(agreed)
        per_project[project.name] = {
            "agreement": agree(first, second),
            "port": {
                key: {k: v[k] for k in (*PORT_COUNTS, "precision", "recall")}
                for key, v in scores.items()
            },
            "port_consensus_recall": [agreed["num_hazards_found"], agreed["num_hazards"]],
        }
    counts = total([r["agreement"] for r in per_project.values()], COUNTS)
    consensus_counts = total(consensus_rows, ("num_hazards", "num_hazards_found"))
    return {
        "part": part,
        "projects": [p.name for p in projects],
        "agreement": {**counts, "ratios": _ratios(counts)},
        "port": {key: _port_totals(rows) for key, rows in against.items()},
        "port_consensus": {
            **consensus_counts,
            "recall": port_score._ratio(
                consensus_counts["num_hazards_found"], consensus_counts["num_hazards"]
            ),
        },
        "per_project": per_project,
    }


def pooled(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The parts' counts added together (ratios over all their hazards, not a mean of ratios)."""
    counts = total([r["agreement"] for r in results.values()], COUNTS)
    consensus_counts = total(
        [r["port_consensus"] for r in results.values()], ("num_hazards", "num_hazards_found")
    )
    return {
        "parts": list(results),
        "agreement": {**counts, "ratios": _ratios(counts)},
        "port": {
            key: _port_totals([r["port"][key] for r in results.values()])
            for key in ("first", "second", "union")
        },
        "port_consensus": {
            **consensus_counts,
            "recall": port_score._ratio(
                consensus_counts["num_hazards_found"], consensus_counts["num_hazards"]
            ),
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--part",
        nargs="+",
        default=["test14"],
        choices=port_corpus.PARTS,
        help="one part, or several: each part's figures and their pooled counts",
    )
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    load_before = os.getloadavg()
    parts = list(dict.fromkeys(args.part))
    results = {part: measure(part) for part in parts}
    head = {
        "schema": "rocmkit.port_agreement",
        "schema_version": 1,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "environment": port_score.environment(),
        "line_slack": port_score.LINE_SLACK,
    }
    if len(parts) == 1:
        document = {**head, **results[parts[0]]}
    else:
        document = {**head, "schema_version": 2, "parts": results, "pooled": pooled(results)}
    document["load_average"] = {"before": load_before, "after": os.getloadavg()}
    if args.write:
        name = f"port_agreement_{'_'.join(parts)}.json"
        out = args.out or port_corpus.REPO / "benchmarks" / "results" / name
        out.write_text(json.dumps(document, indent=1) + "\n")
    for result in (document["parts"] if len(parts) > 1 else {parts[0]: document}).values():
        _print(result)
    if len(parts) > 1:
        _print({**document["pooled"], "part": "pooled " + "+".join(parts)})
    return 0


def _print(document: dict[str, Any]) -> None:
    a = document["agreement"]
    print(
        f"{document['part']}: first lists {a['num_first']} hazards, second {a['num_second']}; "
        f"first's in second {a['first_in_second_strict']} strict / {a['first_in_second_loose']} "
        f"loose; second's in first {a['second_in_first_strict']} / {a['second_in_first_loose']}; "
        f"same severity {a['same_severity']}/{a['first_in_second_strict']}; contested "
        f"{a['first_contested']} + {a['second_contested']}"
    )
    for key, p in document["port"].items():
        print(
            f"  port vs {key:6}: precision {p['num_true_positive']}/{p['num_findings']} "
            f"({p['precision']}), recall {p['num_hazards_found']}/{p['num_hazards']} ({p['recall']})"
        )
    c = document["port_consensus"]
    print(f"  port recall on consensus hazards: {c['num_hazards_found']}/{c['num_hazards']}")


if __name__ == "__main__":
    sys.exit(main())
