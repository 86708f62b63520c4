"""Before/after of issue 29's definition-derived diagnostics on the corpora already seen.

Runs benchmarks/hipify_predict.py (this commit's scorer) over both seen corpora, hipify_corpus.toml
(`--corpus seen`) and hipify_predict_corpus.toml (both sides; all of it has been looked at by now),
once with rocmkit as it was at `--base` (exported with `git archive`) and once with this tree's,
and writes the counts side by side: units that compile, failing units whose first error has a
rocmkit warning within 3 lines (coverage), and what is still missed. The counts are deterministic
(one run each is exact; the compiler and the code are the same in every run).

    python benchmarks/hipify_seen_corpora.py --base 5e74fb9
    python benchmarks/hipify_seen_corpora.py --base 5e74fb9 --before-from benchmarks/results/hipify_seen_corpora.json

`--before-from` takes the `before` counts from an earlier result file of the same base instead of
scoring that commit again (the counts are deterministic, and the scorer, hipify_predict.py, must
be unchanged since that file; the file's commit is recorded in the notes).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from resultfile import ResultRun, add_result_args

REPO = Path(__file__).resolve().parent.parent
CORPORA = ("seen", "predict")
_SKIP = shutil.ignore_patterns("results", "__pycache__")


def export_tree(commit: str, into: Path) -> Path:
    """A tree with rocmkit's `src/` at `commit` and this commit's benchmarks (the scripts put
    their own tree's src/ first on the path), sharing this tree's downloaded corpora."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit, "src"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    shutil.copytree(REPO / "benchmarks", into / "benchmarks", ignore=_SKIP)
    (into / ".cache").symlink_to(REPO / ".cache")
    return into


def score(corpus: str, tree: Path, scratch: Path, jobs: int) -> dict[str, Any]:
    """hipify_predict.py's details for `corpus`, run from `tree` (its src/ is the rocmkit)."""
    out = scratch / f"{corpus}-{tree.name}.json"
    command = [
        sys.executable,
        str(tree / "benchmarks" / "hipify_predict.py"),
        "--corpus",
        corpus,
        "--jobs",
        str(jobs),
        "--result",
        str(out),
    ]
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "OMP_NUM_THREADS": "1"}
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    details: dict[str, Any] = json.loads(out.read_text())["details"]
    return details


def _reused_before(path: Path, base: str) -> dict[str, Any]:
    """The `<corpus>.<side>.before` details of an earlier run against the same base."""
    previous = json.loads(path.read_text())
    if not any(base in note for note in previous.get("notes", [])):
        raise SystemExit(f"{path} was not scored against --base {base}")
    return {
        k.removesuffix(".before"): v
        for k, v in previous["details"].items()
        if k.endswith(".before")
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit before the change")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--before-from", type=Path, help="reuse this result file's `before` counts (same --base)"
    )
    add_result_args(parser, "hipify_seen_corpora")
    args = parser.parse_args()
    run = ResultRun.start("hipify_seen_corpora", args)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="hipify-seen-") as scratch_dir:
        scratch = Path(scratch_dir)
        (scratch / "before").mkdir()
        versions = {"before": scratch / "before", "after": REPO}
        reused = _reused_before(args.before_from, args.base) if args.before_from else {}
        if not reused:
            export_tree(args.base, versions["before"])
        for corpus in CORPORA:
            for label, tree in versions.items():
                scored = (
                    {k.split(".")[1]: v for k, v in reused.items() if k.startswith(f"{corpus}.")}
                    if label == "before" and reused
                    else score(corpus, tree, scratch, args.jobs)
                )
                for side, summary in scored.items():
                    key = f"{corpus}.{side}.{label}"
                    results[key] = summary
                    run.count(f"{key}.units_compiling", summary["compile"], unit="units")
                    run.count(f"{key}.units_failing", summary["failing"], unit="units")
                    run.count(f"{key}.failing_covered", summary["failing_covered"], unit="units")
                    run.count(f"{key}.coverage_pct", summary["coverage_pct"], unit="%")
                    # false positives per warning class: warnings in units that compile
                    for name, counts in summary["classes"].items():
                        run.count(f"{key}.{name}.warnings", counts["warnings"], unit="warnings")
                        run.count(f"{key}.{name}.in_compiling_units",
                                  counts.get("in_compiling_unit", 0), unit="warnings")  # fmt: skip
                    print(
                        f"{key}: {summary['compile']}/{summary['units']} compile, coverage "
                        f"{summary['failing_covered']}/{summary['failing']}"
                    )
    if args.before_from:
        previous = json.loads(args.before_from.read_text())
        run.notes.append(
            f"before: reused from {args.before_from.name} (commit {previous['environment']['commit']['sha'][:7]})"
        )
    run.notes.append(
        f"before: rocmkit at {args.base}; after: this commit; scorer: this commit's "
        "hipify_predict.py; HIP 5.2 (Debian hipcc), gfx90a; per-unit misses in 'details'"
    )
    run.finish(details=results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
