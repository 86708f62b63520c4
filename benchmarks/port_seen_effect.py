"""What a change of port's code does on the seen corpus: listed hazards found, false findings, by place.

A held-out round measures port once (benchmarks/port_score.py). A change written between rounds
is also checked on every project whose part has been scored already (the seen corpus, where tuning
is allowed): this compares two versions of port's code on the same projects and names each place
that moved, so a docs line "six listed hazards found, no new false positive" has a file behind it.

Both sides are scored with this checkout's scorer (port_score: the same matching, LINE_SLACK and
RULE_KINDS), so only `src/` differs: `--base REV` and `--head REV` (default: the working tree's
src/) are each unpacked from git (`git archive`) and run in a child process with that src/ first on
PYTHONPATH. Per side and project:

  found        listed hazards a warn/error finding matches (port_score's recall numerator)
  findings     warn/error findings, and the true ones among them (precision's two counts)
  miss_fixed   listed hazards found at head and missed at base; miss_new the other way
  fp_gone      false findings (file:line, rule, severity) at base and not at head; fp_new the
               other way

Seen parts: every part numbered up to --until (default: the highest part any committed
benchmarks/results/port_score*.json result scores), and the unnumbered tuning parts. Counts are
exact (no timing): one run is the measurement.

    OMP_NUM_THREADS=1 python benchmarks/port_seen_effect.py --base REV [--head REV] [--until testN]
        [--part P ...] [--jobs 2] [--write [--out FILE]]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import port_corpus
from resultfile import cpu_model

RESULT = port_corpus.REPO / "benchmarks" / "results" / "port_seen_effect.json"
WORKTREE = "worktree"
_PART_NUMBER = re.compile(r"test(\d+)$")


def part_number(part: str) -> int:
    """testN -> N; the unnumbered tuning parts (dev, test) -> 0."""
    m = _PART_NUMBER.match(part)
    return int(m.group(1)) if m else 0


def last_scored_part(results: Path) -> str | None:
    """The highest-numbered part that a committed port_score result file scores."""
    best = 0
    for path in sorted(results.glob("port_score*.json")):
        try:
            parts = json.loads(path.read_text()).get("parts", {})
        except (OSError, ValueError):
            continue
        best = max([best, *(part_number(p) for p in parts)])
    return f"test{best}" if best else None


def seen_parts(until: str) -> tuple[str, ...]:
    limit = part_number(until)
    return tuple(p for p in port_corpus.PARTS if part_number(p) <= limit)


# -- the child: scan and score one side --------------------------------------------------------


_PROJECTS: dict[str, port_corpus.Project] = {}  # the child's manifest, read once before forking


def _score_one(name: str) -> tuple[str, dict[str, Any]]:
    import port_score

    project = _PROJECTS[name]
    scanned = port_score.scan(project)
    r = port_score.score(project, scanned)
    return name, {
        "found": r["num_hazards_found"],
        "hazards": r["num_hazards"],
        "findings": r["num_findings"],
        "true": r["num_true_positive"],
        "misses": sorted(f"{m['where']} {m['kind']}" for m in r["misses"]),
        "false": sorted(f"{f['where']} {f['rule']} {f['severity']}" for f in r["false_positives"]),
    }


def child(names: list[str], src: str, jobs: int) -> dict[str, Any]:
    # The benchmark modules put this checkout's src/ first and import rocmkit from it
    # (hipify_corpus): drop those modules and put the side's src/ in front before port_score
    # imports rocmkit.port (the workers are forked from here and inherit both).
    for module in [m for m in sys.modules if m == "rocmkit" or m.startswith("rocmkit.")]:
        del sys.modules[module]
    sys.path.insert(0, src)
    import rocmkit

    _PROJECTS.update((p.name, p) for p in port_corpus.load_manifest() if p.name in set(names))

    with ProcessPoolExecutor(jobs) as pool:
        scored = dict(pool.map(_score_one, names, chunksize=4))
    return {"rocmkit_file": rocmkit.__file__, "projects": scored}


# -- the parent: unpack each side, run the children, compare --------------------------------------


class UserError(Exception):
    """Bad arguments: a one-line message, exit 2."""


def _git(*args: str) -> str:
    out = subprocess.run(["git", *args], cwd=port_corpus.REPO, capture_output=True, text=True)
    if out.returncode != 0:
        raise UserError(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "git failed")
    return out.stdout.strip()


def resolve(rev: str) -> str:
    if rev == WORKTREE:
        return WORKTREE
    try:
        return _git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except UserError:
        raise UserError(f"no such commit: {rev!r} (give a commit, tag or branch)") from None


def unpack_src(commit: str, into: Path) -> Path:
    """The commit's src/ under `into` (git archive | tar), or the working tree's src/."""
    if commit == WORKTREE:
        return port_corpus.REPO / "src"
    archive = into / "src.tar"
    with archive.open("wb") as out:
        subprocess.run(
            ["git", "archive", "--format=tar", commit, "src"],
            cwd=port_corpus.REPO,
            stdout=out,
            check=True,
        )
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def run_side(src: Path, names: list[str], jobs: int) -> dict[str, Any]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as listing:
        json.dump(names, listing)
    try:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                listing.name,
                "--src",
                str(src),
                "--jobs",
                str(jobs),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        os.unlink(listing.name)
    if out.returncode != 0:
        raise RuntimeError(f"scan with {src} failed:\n{out.stderr[-2000:]}")
    side: dict[str, Any] = json.loads(out.stdout)
    if not Path(side["rocmkit_file"]).resolve().is_relative_to(src.resolve()):
        raise RuntimeError(f"the child imported {side['rocmkit_file']}, not the code under {src}")
    return side


def compare(base: dict[str, Any], head: dict[str, Any]) -> dict[str, Any]:
    """Totals of both sides and, per project that moved, the places that did."""
    totals = {
        side: {
            key: sum(r[key] for r in projects.values())
            for key in ("found", "hazards", "findings", "true")
        }
        for side, projects in (("base", base), ("head", head))
    }
    changed: dict[str, dict[str, list[str]]] = {}
    for name in sorted(set(base) | set(head)):
        b, h = base.get(name), head.get(name)
        if b is None or h is None:
            raise ValueError(f"{name} was scored on one side only")
        moves = {
            "miss_fixed": sorted(set(b["misses"]) - set(h["misses"])),
            "miss_new": sorted(set(h["misses"]) - set(b["misses"])),
            "fp_gone": sorted(set(b["false"]) - set(h["false"])),
            "fp_new": sorted(set(h["false"]) - set(b["false"])),
        }
        if any(moves.values()):
            changed[name] = {k: v for k, v in moves.items() if v}
    counts = {
        key: sum(len(m.get(key, ())) for m in changed.values())
        for key in ("miss_fixed", "miss_new", "fp_gone", "fp_new")
    }
    return {"totals": totals, "changes": counts, "per_project": changed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="the code before the change (commit, tag, branch)")
    parser.add_argument("--head", default=WORKTREE, help="the code after (default: worktree)")
    parser.add_argument("--until", help="the last seen part (default: the last one scored)")
    parser.add_argument("--part", nargs="+", default=[], help="only these seen parts")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="save the result file (--out)")
    parser.add_argument("--out", type=Path, default=RESULT)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--src", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        names = json.loads(Path(args.child).read_text())
        print(json.dumps(child(names, args.src, args.jobs)))
        return 0
    try:
        return _compare_sides(args)
    except UserError as exc:
        print(f"port_seen_effect: {exc}", file=sys.stderr)
        return 2


def _compare_sides(args: argparse.Namespace) -> int:
    if not args.base:
        raise UserError(
            "--base is required: the commit whose port code the change is measured from"
        )
    if args.jobs < 1:
        raise UserError("--jobs must be at least 1")
    until = args.until or last_scored_part(port_corpus.REPO / "benchmarks" / "results")
    if until is None or until not in port_corpus.PARTS:
        raise UserError(f"--until {until!r}: name a part of benchmarks/port_corpus.toml (testN)")
    seen = seen_parts(until)
    unseen = [p for p in args.part if p not in seen]
    if unseen:
        raise UserError(f"--part {' '.join(unseen)}: not seen (after {until}) or not a part")
    parts = set(args.part or seen)
    projects = [p for p in port_corpus.load_manifest() if p.part in parts]
    problems = port_corpus.fetch(projects)
    if problems:
        raise UserError(f"could not fetch {problems[0]} (run benchmarks/port_corpus.py)")
    base, head = resolve(args.base), resolve(args.head)
    names = [p.name for p in projects]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        sides = {}
        for label, commit in (("base", base), ("head", head)):
            into = Path(tmp) / label
            into.mkdir()
            sides[label] = run_side(unpack_src(commit, into), names, args.jobs)["projects"]
    result = compare(sides["base"], sides["head"])
    document = {
        "schema": "rocmkit.port_seen_effect",
        "schema_version": 1,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "environment": {
            "commit": _git("rev-parse", "HEAD"),
            "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
            "cpu_model": cpu_model(),
            "cpu_count": os.cpu_count(),
        },
        "base": base,
        "head": head if head != WORKTREE else f"{WORKTREE} of {_git('rev-parse', 'HEAD')}",
        "until": until,
        "parts": sorted(parts, key=part_number),
        "num_projects": len(names),
        **result,
        "load_average": {"before": load_before, "after": os.getloadavg()},
    }
    if args.write:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp_out = args.out.with_suffix(".json.tmp")
        tmp_out.write_text(json.dumps(document, indent=1) + "\n")
        tmp_out.replace(args.out)
    _print_summary(document)
    return 0


def _print_summary(document: dict[str, Any]) -> None:
    t, c = document["totals"], document["changes"]
    print(
        f"{document['num_projects']} seen projects (parts up to {document['until']}): "
        f"found {t['base']['found']} -> {t['head']['found']} of {t['head']['hazards']}; "
        f"true {t['base']['true']}/{t['base']['findings']} -> {t['head']['true']}/"
        f"{t['head']['findings']}; miss fixed {c['miss_fixed']}, new {c['miss_new']}; "
        f"false gone {c['fp_gone']}, new {c['fp_new']}"
    )
    for name, moves in document["per_project"].items():
        print(f"  {name}")
        for key, places in moves.items():
            for place in places:
                print(f"    {key:10} {place}")


if __name__ == "__main__":
    sys.exit(main())
