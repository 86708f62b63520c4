"""Score `rocmkit doctor --explain` on the held-out field corpus (tests/fixtures/explain_field/).

Every log is explained in process with the public `rocmkit.doctor.explain` and graded against the
answer written when the log was collected: right / partly / wrong / nothing (rules in the corpus
README and in `grade` below). Reports per part (dev, test, test2, test3, test4) and per family,
and times the CLI (`python -m rocmkit doctor --explain FILE --json`, median of N runs, process wall and CPU).

    python benchmarks/doctor_explain_score.py                 # all parts, table
    python benchmarks/doctor_explain_score.py --part dev      # develop against dev only
    python benchmarks/doctor_explain_score.py --json          # print the result document
    python benchmarks/doctor_explain_score.py --write         # also save benchmarks/results/doctor_explain_score.json
    python benchmarks/doctor_explain_score.py --part test2 --runs 0 --write \
        --result benchmarks/results/doctor_explain_score_test2_before.json   # a part's score, elsewhere

The scorer only reads the TOML files and calls the public API, so it runs on future versions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
from resultfile import cpu_model  # noqa: E402 - the benchmarks' one machine record

CORPUS = REPO / "tests" / "fixtures" / "explain_field"
RESULT = REPO / "benchmarks" / "results" / "doctor_explain_score.json"
GRADES = ("right", "partly", "wrong", "nothing")
PARTS = ("dev", "test", "test2", "test3", "test4")


def load_corpus(root: Path = CORPUS) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """All `[[log]]` entries (family files in name order) and the thread -> part map."""
    split = tomllib.loads((root / "split.toml").read_text(encoding="utf-8"))["threads"]
    logs: list[dict[str, Any]] = []
    for path in sorted(root.glob("*.toml")):
        if path.name == "split.toml":
            continue
        logs.extend(tomllib.loads(path.read_text(encoding="utf-8"))["log"])
    return logs, split


# -- what an explanation says, read defensively so later Explanation shapes still score ----------


def _field(m: Any, name: str, default: Any = None) -> Any:
    return m.get(name, default) if isinstance(m, dict) else getattr(m, name, default)


def _text(m: Any) -> str:
    return f"{_field(m, 'cause', '') or ''}\n{_field(m, 'fix', '') or ''}"


def is_abstention(m: Any) -> bool:
    return bool(_field(m, "abstain", False)) or _field(m, "level", "") in ("abstain", "unknown")


def names_candidates(m: Any) -> bool:
    """Candidate causes plus something to run to tell them apart."""
    candidates = _field(m, "candidates", None)
    named = bool(candidates) or len(re.findall(r"\bor\b", str(_field(m, "cause", "")))) >= 1
    return named and bool(str(_field(m, "fix", "")).strip())


def top(matches: list[Any]) -> Any:
    """The causal explanation: the first marked causal/primary/first_failure, else the first
    (earliest line)."""
    for m in matches:
        if any(_field(m, k, False) for k in ("causal", "primary", "first_failure")):
            return m
    return matches[0]


def _any(patterns: list[str], text: str) -> str | None:
    return next((p for p in patterns if re.search(p, text, re.IGNORECASE)), None)


def grade(entry: dict[str, Any], matches: list[Any]) -> tuple[str, str]:
    """(grade, reason) of the explanations `matches` for one corpus entry."""
    real = [m for m in matches if not (is_abstention(m) and not names_candidates(m))]
    if not real:
        return "nothing", "no explanation" if not matches else "abstained without candidates"
    for m in matches:
        hit = _any(entry.get("wrong_any", []), _text(m))
        if hit:
            return "wrong", f"{_field(m, 'id', '?')} matches wrong_any {hit!r}"
    first = top(real)
    if _any(entry["fix_any"], _text(first)):
        return "right", f"{_field(first, 'id', '?')} matches fix_any"
    if is_abstention(first):
        if entry.get("abstain_ok") and names_candidates(first):
            return "right", f"{_field(first, 'id', '?')} abstains naming candidates"
        return "partly", f"{_field(first, 'id', '?')} abstains where the log decides"
    return "wrong", f"{_field(first, 'id', '?')} confident, matches no fix_any"


def _with_share(counts: dict[str, int]) -> dict[str, Any]:
    """A part's grade counts with its size and the share graded right (percent, 1 decimal)."""
    logs = sum(counts.values())
    return {
        **counts,
        "logs": logs,
        "right_pct": round(100 * counts["right"] / logs, 1) if logs else 0.0,
    }


def score(
    logs: list[dict[str, Any]], split: dict[str, str], parts: tuple[str, ...]
) -> dict[str, Any]:
    from rocmkit.doctor import explain

    rows = []
    for entry in logs:
        part = split[entry["thread"]]
        if part not in parts:
            continue
        matches = explain(entry["text"])
        g, reason = grade(entry, matches)
        rows.append(
            {
                "id": entry["id"],
                "family": entry["family"],
                "part": part,
                "grade": g,
                "reason": reason,
                "explanations": [_field(m, "id", "?") for m in matches],
            }
        )
    counts = {p: {g: 0 for g in GRADES} for p in parts}
    families: dict[str, dict[str, Any]] = defaultdict(lambda: {"logs": 0, **{g: 0 for g in GRADES}})
    for r in rows:
        counts[r["part"]][r["grade"]] += 1
        fam = families[r["family"]]
        fam["logs"] += 1
        fam[r["grade"]] += 1
        fam[r["part"]] = fam.get(r["part"], 0) + 1
    return {
        "counts": {p: _with_share(c) for p, c in counts.items()},
        "families": {f: families[f] for f in sorted(families)},
        "wrong": [
            {k: r[k] for k in ("id", "part", "reason", "explanations")}
            for r in rows
            if r["grade"] == "wrong"
        ],
        "rows": rows,
    }


# -- timing and provenance ----------------------------------------------------------------------


def time_cli(text: str, runs: int) -> dict[str, Any]:
    """Median process wall and CPU seconds of `python -m rocmkit doctor --explain FILE --json`."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False, encoding="utf-8") as f:
        f.write(text)
        path = f.name
    wall, cpu = [], []
    try:
        cmd = [sys.executable, "-m", "rocmkit", "doctor", "--explain", path, "--json"]
        for _ in range(runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, check=True, capture_output=True)
            wall.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    finally:
        os.unlink(path)
    return {
        "command": "python -m rocmkit doctor --explain FILE --json",
        "runs": runs,
        "lines": text.count("\n") + 1,
        "wall_s_median": round(statistics.median(wall), 4),
        "wall_s_min": round(min(wall), 4),
        "wall_s_max": round(max(wall), 4),
        "cpu_s_median": round(statistics.median(cpu), 4),
    }


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def provenance() -> dict[str, Any]:
    import rocmkit

    return {
        "commit": _commit(),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {
            "node": platform.node(),
            "cpu": cpu_model(),
            "cores": os.cpu_count(),
            "platform": platform.platform(),
        },
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "rocmkit": rocmkit.__version__,
    }


def _table(result: dict[str, Any]) -> str:
    lines = [f"{'part':6} {'logs':>5} " + " ".join(f"{g:>7}" for g in GRADES)]
    for part, c in result["counts"].items():
        lines.append(f"{part:6} {c['logs']:5d} " + " ".join(f"{c[g]:7d}" for g in GRADES))
    lines.append("")
    lines.append(f"{'family':40} {'logs':>4} " + " ".join(f"{g:>7}" for g in GRADES))
    for fam, c in result["families"].items():
        lines.append(f"{fam:40} {c['logs']:4d} " + " ".join(f"{c[g]:7d}" for g in GRADES))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=(*PARTS, "all"), default="all")
    parser.add_argument("--json", action="store_true", help="print the result document")
    parser.add_argument(
        "--write", action="store_true", help=f"also save {RESULT.relative_to(REPO)}"
    )
    parser.add_argument(
        "--result", type=Path, default=RESULT, help="where --write saves (default: %(default)s)"
    )
    parser.add_argument("--runs", type=int, default=5, help="CLI timing runs (median; 0 skips)")
    args = parser.parse_args(argv)

    logs, split = load_corpus()
    parts = PARTS if args.part == "all" else (args.part,)
    t0 = time.perf_counter()
    result = score(logs, split, parts)
    scored_s = time.perf_counter() - t0
    threads = {e["thread"] for e in logs}
    doc: dict[str, Any] = {
        "schema": "rocmkit.bench.doctor_explain_score",
        "schema_version": 1,
        **provenance(),
        "part": args.part,
        "corpus": {
            "path": str(CORPUS.relative_to(REPO)),
            "logs": len(logs),
            "families": len({e["family"] for e in logs}),
            "threads": len(threads),
            "per_part": {p: sum(split[e["thread"]] == p for e in logs) for p in PARTS},
        },
        "counts": result["counts"],
        "families": result["families"],
        "wrong": result["wrong"],
        "in_process_s": round(scored_s, 3),
    }
    if args.runs > 0:
        one = next(e["text"] for e in logs)
        everything = "\n".join(e["text"] for e in logs)
        doc["timing"] = {
            "one_log": time_cli(one, args.runs),
            "whole_corpus_as_one_log": time_cli(everything, args.runs),
        }
    doc["rows"] = result["rows"]
    if args.write:
        args.result.parent.mkdir(parents=True, exist_ok=True)
        args.result.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.result}", file=sys.stderr)
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        print(_table(result))
        if "timing" in doc:
            for name, t in doc["timing"].items():
                print(
                    f"--explain {name}: wall {t['wall_s_median']}s cpu {t['cpu_s_median']}s (median of {t['runs']})"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
