"""What the command line costs before a command does its work: `rocmkit --help` and
`rocmkit doctor --explain` on a one-line log, this tree against an earlier commit.

Each round runs both trees, alternated, in fresh interpreters (`python -c` calling
`rocmkit.cli.main.main`); the child reports its own process CPU time (interpreter start included,
time.process_time at exit) and whether numpy and torch were imported. The earlier commit's source
comes from `git archive` into a temporary directory. Process CPU time, as the machine is shared.

Writes benchmarks/results/cli_startup.json (commit, command, machine, load, every run, median,
spread).

    PYTHONPATH=src python benchmarks/cli_startup.py [--baseline 3ffae72] [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from resultfile import REPO, ResultRun, add_result_args

CHILD = """
import contextlib, io, json, sys, time
from rocmkit.cli.main import main
argv = json.loads(sys.argv[1])
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main(argv)
    except SystemExit:
        pass
print(json.dumps({"cpu_s": time.process_time(), "numpy": "numpy" in sys.modules,
                  "torch": "torch" in sys.modules}))
"""


def run_once(src: Path, argv: list[str]) -> dict[str, float | bool]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(argv)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
        check=True,
    )
    result: dict[str, float | bool] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="3ffae72", help="the earlier commit to compare with")
    parser.add_argument("--rounds", type=int, default=7)
    add_result_args(parser, "cli_startup")
    args = parser.parse_args()
    run = ResultRun.start("cli_startup", args)
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        old.mkdir()
        archive = subprocess.run(
            ["git", "archive", args.baseline, "src"], cwd=REPO, capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
        log = Path(tmp) / "job.log"
        log.write_text("RuntimeError: HIP error: invalid device function\n")
        commands = {"help": ["--help"], "doctor_explain": ["doctor", "--explain", str(log)]}
        trees = {"new": REPO / "src", "old": old / "src"}
        runs: dict[tuple[str, str], list[float]] = {(c, t): [] for c in commands for t in trees}
        seen: dict[tuple[str, str], dict[str, bool]] = {}
        for index in range(args.rounds):
            order = list(trees) if index % 2 == 0 else list(reversed(trees))
            for command, argv in commands.items():
                for tree in order:
                    child = run_once(trees[tree], argv)
                    runs[command, tree].append(float(child["cpu_s"]))
                    seen[command, tree] = {
                        "numpy": bool(child["numpy"]),
                        "torch": bool(child["torch"]),
                    }
    for command in commands:
        for tree, label in (("new", "this tree"), ("old", f"commit {args.baseline}")):
            run.add(
                f"{command}_cpu_s_{tree}",
                runs[command, tree],
                unit="s",
                higher_is_better=False,
                baseline=None if tree == "old" else f"{command}_cpu_s_old",
                note=f"{label}; imported numpy: {seen[command, tree]['numpy']}, "
                f"torch: {seen[command, tree]['torch']}",
            )
        ratios = [o / n for o, n in zip(runs[command, "old"], runs[command, "new"], strict=True)]
        run.add(f"{command}_old_over_new", ratios, unit="x", baseline=f"commit {args.baseline}")
    document = run.finish()
    for key, figure in document["figures"].items():
        print(
            f"{key}: median {figure['median']:.3f} {figure['unit']} (spread {figure['spread_pct']:.0f}%)"
        )


if __name__ == "__main__":
    main()
